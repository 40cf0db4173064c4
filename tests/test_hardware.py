"""Best-effort hardware facts from canned /proc text, and with no GPU."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import pytest

from advisor.measure import hardware

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9654 96-Core Processor
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse avx2 fma avx512f avx512_bf16 avx512_vnni

processor\t: 1
model name\t: AMD EPYC 9654 96-Core Processor
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse avx2 fma avx512f avx512_bf16 avx512_vnni

processor\t: 2
model name\t: AMD EPYC 9654 96-Core Processor
physical id\t: 0
core id\t\t: 1
flags\t\t: fpu sse avx2 fma avx512f avx512_bf16 avx512_vnni
"""
MEMINFO = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n"


def test_parse_cpuinfo():
    facts = hardware.parse_cpuinfo(CPUINFO)
    assert facts["cpu"] == "AMD EPYC 9654 96-Core Processor"
    assert facts["cores"] == 2  # two distinct core ids, three logical CPUs
    assert facts["cpu_features"] == ["avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16"]


def test_parse_meminfo():
    assert hardware.parse_meminfo(MEMINFO) == {"memory_gb": 23.4}
    assert hardware.parse_meminfo("garbage") == {}


def test_host_facts_from_a_canned_proc(tmp_path: Path):
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    (tmp_path / "meminfo").write_text(MEMINFO)
    facts = hardware.host_facts(str(tmp_path))
    assert facts["cpu"] == "AMD EPYC 9654 96-Core Processor"
    assert facts["memory_gb"] == 23.4
    assert facts["cores"] == 2


def test_missing_proc_leaves_facts_out_without_crashing(tmp_path: Path, monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)  # no other source of the CPU, cores and memory either
    facts = hardware.host_facts(str(tmp_path / "nowhere"))
    assert set(facts) == {"logical_cpus", "os", "machine"}  # the CPU, its cores and the memory left out, not guessed
    assert all(value not in (None, "") for value in facts.values())


def test_without_proc_the_memory_is_psutils(tmp_path: Path):
    psutil = pytest.importorskip("psutil")
    facts = hardware.host_facts(str(tmp_path / "nowhere"))
    assert facts["memory_gb"] == round(psutil.virtual_memory().total / 1024**3, 1) > 0
    assert "cpu" not in facts  # psutil does not name the CPU: left out


def test_garbage_proc_text_never_crashes(tmp_path: Path, monkeypatch):
    (tmp_path / "cpuinfo").write_bytes(b"\xff\xfe::::\n\n\x00")
    (tmp_path / "meminfo").write_text("MemTotal: lots")
    monkeypatch.setitem(sys.modules, "psutil", None)  # the garbage alone: nothing else fills in for it
    facts = hardware.host_facts(str(tmp_path))
    assert "memory_gb" not in facts and "cpu" not in facts  # "lots" and the bytes are not read as facts


def test_nvidia_smi_parsing():
    text = "NVIDIA H200, 143771, 570.124.06, 9.0\nNVIDIA GeForce GTX 1070 Ti, 8192, 535.1, [N/A]\n"
    gpus = hardware.parse_nvidia_smi(text)
    assert gpus[0] == {"name": "NVIDIA H200", "memory_gb": 140.4, "driver": "570.124.06", "compute_capability": "9.0"}
    assert gpus[1]["name"] == "NVIDIA GeForce GTX 1070 Ti" and "compute_capability" not in gpus[1]
    assert hardware.parse_nvidia_smi("") == []


def test_no_gpu_means_no_gpu_facts(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert hardware.nvidia_gpus() == []


def test_cpu_usage_monitor_measures_something():
    with hardware.CpuUsageMonitor() as monitor:  # long enough for the kernel's CPU clock (ticks of 10 ms) to count
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            sum(range(1000))
    assert monitor.wall_seconds is not None and monitor.wall_seconds > 0
    if importlib.util.find_spec("psutil") is None:  # the system's CPU time is read through psutil
        assert monitor.other_load() is None
    else:
        load = monitor.other_load()
        assert load is not None and 0 <= load <= (os.cpu_count() or 1) + 0.5  # other processes' cores, at most all


def test_cpu_usage_without_the_systems_times_is_unknown(monkeypatch):
    monkeypatch.setattr(hardware.CpuUsageMonitor, "system_busy_seconds", staticmethod(lambda: None))
    with hardware.CpuUsageMonitor() as monitor:
        sum(range(1000))
    assert monitor.wall_seconds > 0 and monitor.other_load() is None  # unknown, never 0


def test_power_from_a_fake_nvidia_smi(tmp_path: Path, monkeypatch):
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\nprintf '200.5\\n210.5\\n'\nsleep 30\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with hardware.PowerMonitor("gpu") as monitor:
        time.sleep(0.5)
    reading = monitor.reading()
    assert reading == {
        "average_watts": 205.5,
        "samples": 2,
        "method": "nvidia-smi power.draw, sampled every 0.5 s during the timed training",
    }


def test_power_from_a_rapl_counter(tmp_path: Path, monkeypatch):
    rapl = tmp_path / "intel-rapl:0"
    rapl.mkdir()
    (rapl / "energy_uj").write_text("1000000\n")
    (rapl / "max_energy_range_uj").write_text("262143328850\n")
    monkeypatch.setattr(hardware.PowerMonitor, "RAPL", rapl)
    with hardware.PowerMonitor("cpu") as monitor:
        time.sleep(0.2)
        (rapl / "energy_uj").write_text("21000000\n")  # 20 J later
    reading = monitor.reading()
    assert reading["method"].startswith("RAPL") and 20 < reading["average_watts"] <= 100


def test_no_power_reading_is_left_out_never_guessed(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    monkeypatch.setattr(hardware.PowerMonitor, "RAPL", tmp_path / "missing")
    for kind in ("gpu", "cpu"):
        with hardware.PowerMonitor(kind) as monitor:
            pass
        assert monitor.reading() is None
