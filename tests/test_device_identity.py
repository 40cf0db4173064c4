"""ROCm and Apple GPUs named from what their platforms report, and a run's share of its peak never over 100 %.

No ROCm or Apple device is here: these tests feed the identity code the property strings the platforms are documented
to report. ``torch.cuda.get_device_properties(i)`` on a ROCm build gives ``name`` (generic on some cards: "AMD Radeon
Graphics", or empty on some RDNA3 cards), ``gcnArchName`` ("gfx942:sramecc+:xnack-": the LLVM target, then its
features), ``multi_processor_count`` (compute units) and ``total_memory``; ``torch.version.hip`` is set. ROCm's own
GPU table (docs/reference/gpu-specs.rst) gives each device's target, compute units and memory. On a Mac,
``sysctl -n machdep.cpu.brand_string`` says 'Apple M2 Max', ``system_profiler SPDisplaysDataType -json`` the GPU's
cores (``sppci_cores``) and ``torch.mps.recommended_max_memory()`` Metal's recommendedMaxWorkingSetSize.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from advisor.measure import hardware
from advisor.perf.peak_share import share_of_peak
from advisor.store.device_identity import GIB, identify_apple, identify_rocm, rocm_target

ALMOST = 0.98  # a driver reports a little less than the nominal memory


@pytest.mark.parametrize(
    ("reported", "arch", "units", "memory_gib", "named"),
    [
        ("AMD Radeon Graphics", "gfx1100", 96, 24, "AMD Radeon RX 7900 XTX"),
        ("", "gfx1100:sramecc-:xnack-", 84, 20, "AMD Radeon RX 7900 XT"),  # an empty name on an RDNA3 card
        ("AMD Radeon Graphics", "gfx1100", 96, 48, "AMD Radeon PRO W7900"),  # the same chip, told by its memory
        ("AMD Radeon Graphics", "gfx1201", 64, 16, "AMD Radeon RX 9070 XT"),
        ("AMD Radeon Graphics", "gfx1201", 64, 32, "AMD Radeon AI PRO R9700"),
        ("AMD Radeon Graphics", "gfx1151", 40, 96, "AMD Radeon 8060S (Ryzen AI Max+ 395 / 392 / 388)"),  # an APU
        ("AMD Radeon Graphics", "gfx90a:sramecc+:xnack-", 110, 64, "AMD Instinct MI250X (one GCD, half the package)"),
    ],
)
def test_a_generic_rocm_name_is_replaced_by_the_one_device_its_facts_fit(reported, arch, units, memory_gib, named):
    identity = identify_rocm(reported, arch, units, memory_gib * GIB * ALMOST)
    assert identity.name == named and identity.platform == "rocm"
    assert identity.architecture == rocm_target(arch) and identity.reported_name == (reported or None)
    assert "named from" in identity.note and "compute units" in identity.note


def test_a_rocm_device_is_never_guessed():
    own = identify_rocm("AMD Instinct MI300X", "gfx942:sramecc+:xnack-", 304, 192 * GIB)
    assert (own.name, own.architecture, own.reported_name, own.note) == ("AMD Instinct MI300X", "gfx942", None, "")
    # an MI210 and one GCD of an MI250 report the same target, compute units and memory: not named
    both = identify_rocm("AMD Radeon Graphics", "gfx90a", 104, 64 * GIB)
    assert both.name == "AMD Radeon Graphics" and "fit several devices" in both.note
    assert "MI210" in both.note and "MI250 (one GCD" in both.note
    unknown = identify_rocm("", "gfx1036", 2, 0.5 * GIB)  # a desktop CPU's integrated graphics
    assert unknown.name == "AMD GPU" and "no device of ROCm's GPU table" in unknown.note
    assert rocm_target("") is None and rocm_target("sm_90") is None


def test_an_apple_gpu_is_the_chip_with_its_cores():
    chip = identify_apple("Apple M2 Max", 38)
    assert (chip.name, chip.platform, chip.architecture) == ("Apple M2 Max (38-core GPU)", "mps", "M2")
    assert identify_apple("Apple M4 Pro", None).name == "Apple M4 Pro"
    other = identify_apple("Intel(R) Core(TM) i9-9880H", None)
    assert other.name == "Intel(R) Core(TM) i9-9880H" and "not an Apple M-series name" in other.note
    report = {"SPDisplaysDataType": [{"sppci_model": "Apple M2 Max", "sppci_cores": "38"}]}
    assert hardware.parse_apple_gpu_cores(json.dumps(report)) == 38
    assert hardware.parse_apple_gpu_cores("not json") is None


def test_an_apple_gpu_as_macos_names_it_is_found_in_the_catalog(shipped_catalog):
    """The name the identity gives (the chip and its GPU cores, as macOS reports them: the strings fed here) is a
    catalog alias of the machine with that GPU, so a Mac's profile gets its bandwidth and memory; a chip of another
    core count is not any Mac of the catalog, and none is guessed."""
    found = {
        (chip, cores): shipped_catalog.match(identify_apple(chip, cores).name)
        for chip, cores in [("Apple M3 Max", 40), ("Apple M2 Ultra", 76), ("Apple M4 Max", 32), ("Apple M3 Max", 30)]
    }
    assert found[("Apple M3 Max", 40)].id == "macbook-pro-m3-max-64gb"
    assert found[("Apple M2 Ultra", 76)].id == "mac-studio-m2-ultra-192gb"
    assert found[("Apple M4 Max", 32)].id == "mac-studio-m4-max-36gb"
    assert found[("Apple M3 Max", 30)] is None


def _rocm_torch(name: str, arch: str, units: int, memory: float) -> SimpleNamespace:
    properties = SimpleNamespace(name=name, gcnArchName=arch, multi_processor_count=units, total_memory=memory)
    cuda = SimpleNamespace(
        get_device_name=lambda index: name, get_device_properties=lambda index: properties, current_device=lambda: 0
    )
    return SimpleNamespace(cuda=cuda, version=SimpleNamespace(hip="6.4.43482", cuda=None))


def test_the_tracked_device_facts_of_a_rocm_and_an_apple_gpu(monkeypatch):
    torch = _rocm_torch("AMD Radeon Graphics", "gfx1100:sramecc-:xnack-", 96, 23.98 * GIB)
    facts = hardware.torch_gpu_facts(torch, SimpleNamespace(type="cuda", index=0))
    assert facts["name"] == "AMD Radeon RX 7900 XTX" and facts["platform"] == "rocm"
    assert facts["architecture"] == "gfx1100" and facts["reported_name"] == "AMD Radeon Graphics"
    assert facts["memory_gb"] == 24.0 and "compute_capability" not in facts  # a HIP device has no CUDA capability

    answers = {
        "sysctl -n machdep.cpu.brand_string": "Apple M3 Max",
        "sysctl -n hw.memsize": str(128 * GIB),
        "system_profiler SPDisplaysDataType -json": json.dumps({"SPDisplaysDataType": [{"sppci_cores": "40"}]}),
    }
    monkeypatch.setattr(hardware, "_run", lambda command, timeout=10.0: answers.get(" ".join(command)))
    mps = SimpleNamespace(mps=SimpleNamespace(recommended_max_memory=lambda: 96 * GIB))
    apple = hardware.torch_gpu_facts(mps, SimpleNamespace(type="mps", index=None))
    assert apple == {
        "kind": "gpu",
        "count": 1,
        "name": "Apple M3 Max (40-core GPU)",
        "platform": "mps",
        "architecture": "M3",
        "memory_gb": 128.0,
        "allocatable_gb": 96.0,
    }
    assert hardware.torch_gpu_facts(mps, SimpleNamespace(type="cpu", index=None)) is None


def test_the_tracked_device_facts_of_an_intel_gpu_match_the_catalog(shipped_catalog):
    """No Intel device here: a stand-in for torch.xpu reports what a published run on an Arc Pro B60 logged ("GPU:
    Intel(R) Arc(TM) Pro B60 Graphics, 23.91 GiB"), one for torch.hpu the name Intel's libraries compare a Gaudi 3's
    with; the profile names each so, and the catalog finds the device by it."""
    properties = SimpleNamespace(name="Intel(R) Arc(TM) Pro B60 Graphics", total_memory=23.91 * GIB)
    xpu = SimpleNamespace(
        get_device_name=lambda index: properties.name,
        get_device_properties=lambda index: properties,
        current_device=lambda: 0,
    )
    facts = hardware.torch_gpu_facts(SimpleNamespace(xpu=xpu), SimpleNamespace(type="xpu", index=None))
    assert facts == {
        "kind": "gpu",
        "name": "Intel(R) Arc(TM) Pro B60 Graphics",
        "count": 1,
        "platform": "xpu",
        "memory_gb": 23.9,
    }
    assert shipped_catalog.find(facts["name"]).id == "arc-pro-b60"
    broken = SimpleNamespace(xpu=SimpleNamespace())  # a torch whose xpu answers nothing: still a GPU, never a crash
    assert hardware.torch_gpu_facts(broken, SimpleNamespace(type="xpu", index=None))["name"] == "Intel GPU"
    # a Gaudi through habana_frameworks' torch.hpu: its name as Intel's own libraries compare it (optimum-habana's
    # ``hthpu.get_device_name() == "GAUDI3"``); no memory where the module reports none
    hpu = SimpleNamespace(get_device_name=lambda index=None: "GAUDI3", current_device=lambda: 0)
    gaudi = hardware.torch_gpu_facts(SimpleNamespace(hpu=hpu), SimpleNamespace(type="hpu", index=None))
    assert gaudi == {"kind": "gpu", "name": "GAUDI3", "count": 1, "platform": "hpu"}
    assert shipped_catalog.find(gaudi["name"]).id == "gaudi-3"
    assert hardware.torch_gpu_facts(SimpleNamespace(), SimpleNamespace(type="hpu", index=None))["name"] == "Intel Gaudi"


def test_a_share_of_the_peak_is_never_over_one_and_an_unknown_device_gets_none(shipped_catalog):
    found = share_of_peak(82.6, "NVIDIA GeForce RTX 4090", "mixed_float16", shipped_catalog)
    assert found.share == pytest.approx(82.6 / 165.2) and "RTX 4090's float16 tensor peak, 165 TFLOP/s" in found.basis
    over = share_of_peak(400.0, "NVIDIA GeForce RTX 4090", "mixed_float16", shipped_catalog)
    assert over.share is None and "over the GeForce RTX 4090's float16 tensor peak" in over.basis
    unknown = share_of_peak(30.0, "Apple M2 Max (38-core GPU)", "float32", shipped_catalog)
    assert unknown.share is None and "not in the GPU catalog" in unknown.basis
    assert share_of_peak(1.0, "NVIDIA GeForce RTX 4090", "float32", None).share is None


def test_a_tracked_gpu_run_records_its_share_of_the_peak_or_why_not():
    from advisor.track import session

    known = SimpleNamespace(device={"kind": "gpu", "name": "NVIDIA GeForce RTX 4090", "count": 1}, precision="float32")
    found = session._peak_share(41.3, known)
    assert found["share_of_peak"] == pytest.approx(0.5, abs=0.001) and "82.6 TFLOP/s" in found["peak_basis"]
    radeon = SimpleNamespace(device={"kind": "gpu", "name": "AMD Radeon RX 7900 XTX", "count": 1}, precision="float32")
    found = session._peak_share(30.5, radeon)  # the catalog's quoted dual-issue peak
    assert (
        found["share_of_peak"] == pytest.approx(0.5) and "Radeon RX 7900 XTX's float32 peak, 61" in found["peak_basis"]
    )
    pro = SimpleNamespace(device={"kind": "gpu", "name": "AMD Radeon AI PRO R9700", "count": 1}, precision="float32")
    assert session._peak_share(30.0, pro) == {
        "peak_basis": "no share of its peak: AMD Radeon AI PRO R9700 is not in the GPU catalog, so its peak is unknown"
    }
    mixed = SimpleNamespace(
        device={"kind": "gpu", "name": "AMD Radeon RX 7900 XTX", "count": 1}, precision="mixed_float16"
    )
    assert session._peak_share(30.0, mixed) == {
        "peak_basis": "no share of its peak: the catalog gives the Radeon RX 7900 XTX no mixed_float16 peak"
    }


@pytest.mark.parametrize("precision", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_no_share_of_a_peak_is_over_one_on_any_catalog_gpu(shipped_catalog, precision):
    from advisor.perf.perfmodel import device_from_gpu

    for gpu in shipped_catalog.gpus:
        peak = device_from_gpu(gpu).peak(precision)
        over = share_of_peak(1.2 * peak if peak else 1e6, gpu.name, precision, shipped_catalog)
        assert over.share is None, (gpu.id, precision)
        if peak:
            assert share_of_peak(0.5 * peak, gpu.name, precision, shipped_catalog).share == pytest.approx(0.5)


def test_what_rocm_reports_finds_the_catalogs_amd_gpus(shipped_catalog):
    """The names the identity code gives ROCm devices (the driver's own, or the table's where the driver's is generic)
    are the catalog's AMD GPUs: a package of two GCDs is two devices of half its memory and peaks."""
    named = {
        ("AMD Instinct MI300X", "gfx942:sramecc+:xnack-", 304, 192): "mi300x",
        ("AMD Instinct MI300X VF", "gfx942:sramecc+:xnack-", 304, 192): "mi300x",  # a cloud's virtual function
        ("AMD Radeon Graphics", "gfx942", 304, 256): "mi325x",
        ("AMD Radeon Graphics", "gfx90a", 110, 64): "mi250x-gcd",
        ("", "gfx1100", 96, 24): "rx-7900-xtx",
        ("AMD Radeon RX 7900 XT", "gfx1100", 84, 20): "rx-7900-xt",
    }
    for (reported, arch, units, memory_gib), catalog_id in named.items():
        identity = identify_rocm(reported, arch, units, memory_gib * GIB * ALMOST)
        gpu = shipped_catalog.match(identity.name)
        assert gpu is not None and gpu.id == catalog_id and gpu.platform == "rocm", (reported, identity.name)
    by_id = shipped_catalog.by_id()
    assert by_id["mi250x-gcd"].value("memory_gb") * 2 == 128 and by_id["mi250-gcd"].value("bf16_tflops") * 2 == 362.1


def test_the_peak_memory_of_a_run_on_an_intel_gpu_is_read_from_torch_xpu(monkeypatch):
    """No Intel GPU here: torch.xpu's counters are stood in for (their names are PyTorch's); a run on ``xpu:0`` is
    reset and read through them, never through torch.cuda."""
    torch = pytest.importorskip("torch")
    from advisor.measure.peak_memory import PeakMemory

    calls = []
    monkeypatch.setattr(torch.xpu, "reset_peak_memory_stats", lambda: calls.append("reset"), raising=False)
    monkeypatch.setattr(torch.xpu, "max_memory_allocated", lambda: 3 * 10**9, raising=False)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: calls.append("cuda") or 0)
    with PeakMemory("torch", "gpu", "xpu:0") as peak:
        pass
    assert peak.reading() == {"peak_gb": 3.0, "method": "torch.xpu.max_memory_allocated"} and calls == ["reset"]
    # a Gaudi's torch.hpu (habana_frameworks registers it; here a stand-in with its two counters)
    hpu = SimpleNamespace(
        __name__="torch.hpu", reset_peak_memory_stats=lambda: calls.append("hpu"), max_memory_allocated=lambda: 2e9
    )
    monkeypatch.setattr(torch, "hpu", hpu, raising=False)
    with PeakMemory("torch", "gpu", "hpu:0") as peak:
        pass
    assert peak.reading() == {"peak_gb": 2.0, "method": "torch.hpu.max_memory_allocated"} and calls[-1] == "hpu"
