"""Best-effort hardware and software facts (no TensorFlow).

Every collector returns only what it could read: an unknown value is left out, never guessed, and
no collector ever raises.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from advisor.format.vocabulary import DeviceKind, Platform
from advisor.store import device_identity

T = TypeVar("T")


def _safely(function: Callable[[], T], default: T) -> T:
    try:
        return function()
    except Exception:  # best effort: a fact we cannot read is left out
        return default


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


# Instruction-set features that decide float32 / bfloat16 / float16 training speed on a CPU.
NOTABLE_CPU_FEATURES = (
    "avx2",
    "fma",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_fp16",
    "asimd",
    "sve",
    "bf16",
)


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """CPU model and physical core count from /proc/cpuinfo text."""
    facts: dict[str, Any] = {}
    cores: set[tuple[str, str]] = set()
    physical_id = core_id = None
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if core_id is not None:
                cores.add((physical_id or "0", core_id))
            physical_id = core_id = None
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("model name", "Model") and "cpu" not in facts and value:
            facts["cpu"] = " ".join(value.split())
        elif key in ("flags", "Features") and "cpu_features" not in facts:
            present = set(value.split())
            features = [f for f in NOTABLE_CPU_FEATURES if f in present]
            if features:
                facts["cpu_features"] = features
        elif key == "physical id":
            physical_id = value
        elif key == "core id":
            core_id = value
    if cores:
        facts["cores"] = len(cores)
    return facts


def parse_meminfo(text: str) -> dict[str, Any]:
    """Total memory in GiB (rounded to 0.1) from /proc/meminfo text."""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                kib = int(parts[1])
                return {"memory_gb": round(kib / 1024 / 1024, 1)}
    return {}


def host_facts(proc_root: str = "/proc") -> dict[str, Any]:
    """CPU model, physical cores, logical CPUs, memory (GiB), OS and machine of this host."""
    facts: dict[str, Any] = {}
    cpuinfo = _read_text(f"{proc_root}/cpuinfo")
    if cpuinfo:
        facts.update(_safely(lambda: parse_cpuinfo(cpuinfo), {}))
    if "cpu" not in facts and sys.platform == "darwin":
        brand = _run(["sysctl", "-n", "machdep.cpu.brand_string"])
        if brand:
            facts["cpu"] = brand
    meminfo = _read_text(f"{proc_root}/meminfo")
    if meminfo:
        facts.update(_safely(lambda: parse_meminfo(meminfo), {}))
    try:
        import psutil

        facts.setdefault("cores", _safely(lambda: psutil.cpu_count(logical=False), None))
        if "memory_gb" not in facts:
            facts["memory_gb"] = _safely(lambda: round(psutil.virtual_memory().total / 1024**3, 1), None)
    except ImportError:
        pass
    facts["logical_cpus"] = _safely(os.cpu_count, None)
    facts["os"] = _safely(lambda: platform.platform(terse=True), None)
    facts["machine"] = _safely(platform.machine, None)
    return {key: value for key, value in facts.items() if value not in (None, "")}


def _run(command: list[str], timeout: float = 10.0) -> str | None:
    if shutil.which(command[0]) is None:
        return None
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout.strip() if completed.returncode == 0 else None


NVIDIA_SMI_QUERY = [
    "nvidia-smi",
    "--query-gpu=name,memory.total,driver_version,compute_cap",
    "--format=csv,noheader,nounits",
]


def parse_nvidia_smi(text: str) -> list[dict[str, Any]]:
    """GPUs from ``nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap`` CSV text."""
    gpus = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 4 or not fields[0]:
            continue
        gpu: dict[str, Any] = {"name": fields[0]}
        with contextlib.suppress(ValueError):
            gpu["memory_gb"] = round(float(fields[1]) / 1024, 1)
        if fields[2] and "N/A" not in fields[2]:
            gpu["driver"] = fields[2]
        if fields[3] and "N/A" not in fields[3]:
            gpu["compute_capability"] = fields[3]
        gpus.append(gpu)
    return gpus


def nvidia_gpus() -> list[dict[str, Any]]:
    """The NVIDIA GPUs nvidia-smi sees (empty when it is missing or fails)."""
    output = _run(NVIDIA_SMI_QUERY)
    return _safely(lambda: parse_nvidia_smi(output), []) if output else []


def torch_gpu_facts(torch: Any, device: Any) -> dict[str, Any] | None:
    """A torch device's facts where it is a GPU: CUDA (as the driver names it), ROCm (named from what it reports
    where the driver's name is generic: :func:`advisor.store.device_identity.identify_rocm`) or Apple's MPS (the
    chip, its memory and what the GPU may allocate of it) or an Intel device (PyTorch's xpu or hpu, as its driver
    names it); None for a CPU. Best effort: never raises."""
    kind = getattr(device, "type", str(device))
    if kind == "cuda":
        index = device.index if getattr(device, "index", None) is not None else _safely(torch.cuda.current_device, 0)
        return _cuda_facts(torch, index)
    if kind == "mps":
        return _apple_facts(torch)
    if kind in INTEL_DEVICES:
        index = getattr(device, "index", None)
        module = getattr(torch, kind, None)
        return _intel_facts(module, kind, index if index is not None else _safely(lambda: module.current_device(), 0))
    return None


# PyTorch's Intel devices: an Arc GPU through oneAPI (xpu) and a Gaudi through Intel's Gaudi software (hpu, whose
# torch.hpu habana_frameworks.torch registers), each with the name a device of unknown name is given.
INTEL_DEVICES = {"xpu": "Intel GPU", "hpu": "Intel Gaudi"}


def _intel_facts(module: Any, kind: str, index: int) -> dict[str, Any]:
    """An Intel device through PyTorch's ``torch.xpu`` or ``torch.hpu``: the name its driver reports (a catalog alias:
    "Intel(R) Arc(TM) Pro B60 Graphics", "GAUDI3") and its memory where the module reports it."""
    name = _safely(lambda: str(module.get_device_name(index)), "")
    total = getattr(_safely(lambda: module.get_device_properties(index), None), "total_memory", None)
    facts: dict[str, Any] = {
        "kind": DeviceKind.GPU.value,
        "name": name or INTEL_DEVICES[kind],
        "count": 1,
        "platform": Platform(kind).value,
    }
    if total:
        facts["memory_gb"] = round(total / 1024**3, 1)
    return facts


def _cuda_facts(torch: Any, index: int) -> dict[str, Any]:
    name = _safely(lambda: str(torch.cuda.get_device_name(index)), "")
    properties = _safely(lambda: torch.cuda.get_device_properties(index), None)
    total = getattr(properties, "total_memory", None)
    facts: dict[str, Any] = {"kind": DeviceKind.GPU.value, "name": name or "GPU", "count": 1}
    if getattr(torch.version, "hip", None):
        arch, units = getattr(properties, "gcnArchName", None), getattr(properties, "multi_processor_count", None)
        named = _safely(lambda: identity_facts(device_identity.identify_rocm(name, arch, units, total)), {})
        facts.update(named or {"platform": Platform.ROCM.value})
    else:
        facts["platform"] = Platform.CUDA.value
        if properties is not None and getattr(properties, "major", None) is not None:
            facts["compute_capability"] = f"{properties.major}.{properties.minor}"
    if total:
        facts["memory_gb"] = round(total / 1024**3, 1)
    return facts


def identity_facts(identity: device_identity.Identity) -> dict[str, Any]:
    """A device identity as the profile's device fields (a field it does not know is left out)."""
    facts = {
        "name": identity.name,
        "platform": identity.platform,
        "architecture": identity.architecture,
        "reported_name": identity.reported_name,
        "identity_note": identity.note,
    }
    return {key: value for key, value in facts.items() if value}


APPLE_CHIP_QUERY = ["sysctl", "-n", "machdep.cpu.brand_string"]
APPLE_MEMORY_QUERY = ["sysctl", "-n", "hw.memsize"]
APPLE_GPU_QUERY = ["system_profiler", "SPDisplaysDataType", "-json"]


def parse_apple_gpu_cores(text: str) -> int | None:
    """The GPU cores ``system_profiler SPDisplaysDataType -json`` reports (``sppci_cores``), None where it does not."""
    displays = _safely(lambda: json.loads(text).get("SPDisplaysDataType", []), [])
    for display in displays if isinstance(displays, list) else []:
        cores = str(display.get("sppci_cores", "")) if isinstance(display, dict) else ""
        if cores.isdigit():
            return int(cores)
    return None


def _apple_facts(torch: Any) -> dict[str, Any]:
    chip = _run(APPLE_CHIP_QUERY)
    profile = _run(APPLE_GPU_QUERY, timeout=20.0)
    cores = parse_apple_gpu_cores(profile) if profile else None
    named = _safely(lambda: identity_facts(device_identity.identify_apple(chip, cores)), {})
    facts: dict[str, Any] = {
        "kind": DeviceKind.GPU.value,
        "count": 1,
        "name": "Apple GPU",
        "platform": Platform.MPS.value,
        **named,
    }
    memory = _run(APPLE_MEMORY_QUERY)
    if memory and memory.isdigit():
        facts["memory_gb"] = round(int(memory) / 1024**3, 1)  # unified: the machine's memory
    allocatable = _safely(lambda: float(torch.mps.recommended_max_memory()), None)
    if allocatable:
        facts["allocatable_gb"] = round(allocatable / 1024**3, 1)
    return facts


def software_facts() -> dict[str, Any]:
    """Python version (the framework's versions are added by the measurement)."""
    return {"python": platform.python_version()}


class CpuUsageMonitor:
    """CPU time used by other processes while a block runs (from /proc/stat or psutil).

    ``other_cpu_seconds`` is the busy CPU time of the whole system minus this process's own.
    """

    def __init__(self) -> None:
        self.start_system: float | None = None
        self.start_self: float | None = None
        self.other_cpu_seconds: float | None = None
        self.wall_seconds: float | None = None
        self._start_wall = 0.0

    @staticmethod
    def system_busy_seconds() -> float | None:
        try:
            import psutil

            times = psutil.cpu_times()
            return float(
                times.user
                + times.system
                + getattr(times, "nice", 0.0)
                + getattr(times, "irq", 0.0)
                + getattr(times, "softirq", 0.0)
            )
        except Exception:
            return None

    @staticmethod
    def self_busy_seconds() -> float:
        times = os.times()
        return times.user + times.system

    def __enter__(self) -> CpuUsageMonitor:
        import time

        self._start_wall = time.perf_counter()
        self.start_system = self.system_busy_seconds()
        self.start_self = self.self_busy_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        import time

        self.wall_seconds = time.perf_counter() - self._start_wall
        end_system = self.system_busy_seconds()
        if self.start_system is not None and end_system is not None and self.start_self is not None:
            own = self.self_busy_seconds() - self.start_self
            self.other_cpu_seconds = max(0.0, (end_system - self.start_system) - own)

    def other_load(self) -> float | None:
        """Other processes' average CPU use during the block, in cores."""
        if self.other_cpu_seconds is None or not self.wall_seconds:
            return None
        return self.other_cpu_seconds / self.wall_seconds


class PowerMonitor:
    """Average power drawn while a block runs, best effort: nvidia-smi's power.draw sampled every 0.5 s for a GPU,
    the RAPL energy counter for a CPU. ``reading()`` is None when neither could be read (a VM, no driver)."""

    RAPL = Path("/sys/class/powercap/intel-rapl:0")

    def __init__(self, device_kind: str, devices: int = 1) -> None:
        self.device_kind = device_kind
        self.devices = devices
        self._process: subprocess.Popen | None = None
        self._rapl_start: float | None = None
        self._start = 0.0
        self._result: dict[str, Any] | None = None

    def __enter__(self) -> PowerMonitor:
        import time

        self._start = time.perf_counter()
        if self.device_kind == DeviceKind.GPU and shutil.which("nvidia-smi"):
            gpus = ",".join(str(i) for i in range(max(self.devices, 1)))
            command = [
                "nvidia-smi",
                "-i",
                gpus,
                "--query-gpu=power.draw",
                "--format=csv,noheader,nounits",
                "-lms",
                "500",
            ]
            self._process = _safely(
                lambda: subprocess.Popen(
                    command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True
                ),
                None,
            )
        elif self.device_kind == DeviceKind.CPU:
            self._rapl_start = _safely(lambda: float((self.RAPL / "energy_uj").read_text()), None)
        return self

    def __exit__(self, *exc: object) -> None:
        import time

        seconds = time.perf_counter() - self._start
        self._result = _safely(lambda: self._finish(seconds), None)

    def _finish(self, seconds: float) -> dict[str, Any] | None:
        if self._process is not None:
            with contextlib.suppress(OSError):  # the sampler and anything it started
                os.killpg(self._process.pid, signal.SIGTERM)
            try:
                out, _ = self._process.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                out, _ = self._process.communicate()
            samples = []
            for line in out.splitlines():
                with contextlib.suppress(ValueError):
                    samples.append(float(line.strip()))
            if not samples:
                return None
            total = sum(samples) / len(samples) * max(self.devices, 1)  # one line per GPU and interval
            return {
                "average_watts": round(total, 1),
                "samples": len(samples),
                "method": "nvidia-smi power.draw, sampled every 0.5 s during the timed training",
            }
        if self._rapl_start is not None and seconds > 0:
            end = float((self.RAPL / "energy_uj").read_text())
            span = end - self._rapl_start
            if span < 0:  # the counter wrapped
                span += float((self.RAPL / "max_energy_range_uj").read_text())
            return {
                "average_watts": round(span / 1e6 / seconds, 1),
                "samples": 2,
                "method": "RAPL package energy counter (the whole CPU package) over the timed training",
            }
        return None

    def reading(self) -> dict[str, Any] | None:
        return self._result
