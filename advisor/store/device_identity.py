"""What a ROCm or Apple GPU is, from what its platform reports (``data/device_identities.yaml``, with its source).

ROCm's driver names some devices generically ("AMD Radeon Graphics"; an empty name on some RDNA3 cards); the LLVM
target it reports (``gcnArchName``: ``gfx1100:sramecc-:xnack-``), the compute units and the memory say which one it
is. Apple's GPU is the chip's (``Apple M2 Max``). Pure: the tracking and measuring code reads the properties, this
module names the device, and where the facts fit several devices or none, it leaves the name as reported and says
why: a device is never guessed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

from advisor.format.vocabulary import Platform
from advisor.store.parse import safe_load

IDENTITIES_FILE = "device_identities.yaml"
IDENTITIES_VERSION = 1
MEMORY_TOLERANCE = 0.10  # a driver reports a little less than the nominal memory (reserved pages): 10 % either way
GIB = 1024**3
ROCM, MPS = Platform.ROCM.value, Platform.MPS.value


@dataclass(frozen=True)
class Identity:
    """A device as the advisor names it: ``name`` (what the catalog is matched on), the platform, the architecture
    the platform reports (an LLVM target, an Apple chip), the name the platform reported where it differs, and
    what could not be settled (``note``: empty when the name is the platform's own or the table's only match)."""

    name: str
    platform: str  # cuda, rocm or mps
    architecture: str | None = None
    reported_name: str | None = None  # the platform's own name, kept where the advisor named the device otherwise
    note: str = ""


@dataclass(frozen=True)
class _RocmDevice:
    name: str
    target: str
    compute_units: int
    memory_gib: float | None


@functools.cache
def _identities() -> dict[str, Any]:
    data = safe_load(resources.files("advisor").joinpath("data", IDENTITIES_FILE).read_text(encoding="utf-8"))
    if data.get("version") != IDENTITIES_VERSION:
        raise ValueError(f"{IDENTITIES_FILE}: version {data.get('version')!r}, this advisor reads {IDENTITIES_VERSION}")
    return data


@functools.cache
def rocm_devices() -> tuple[_RocmDevice, ...]:
    """The ROCm devices the table knows, as one device reports itself."""
    return tuple(_RocmDevice(**row) for row in _identities()["rocm"]["devices"])


def rocm_target(arch_name: str | None) -> str | None:
    """The LLVM target of a ``gcnArchName`` ('gfx942' of 'gfx942:sramecc+:xnack-'); None where there is none."""
    target = (arch_name or "").split(":")[0].strip()
    return target if target.startswith("gfx") else None


def identify_rocm(
    reported_name: str | None, arch_name: str | None, compute_units: int | None, memory_bytes: float | None
) -> Identity:
    """A ROCm device from its properties (``torch.cuda.get_device_properties``: ``name``, ``gcnArchName``,
    ``multi_processor_count``, ``total_memory``): the driver's name where it names the device, else the table's
    one device with that target, compute units and memory; else the name as reported, with what was found."""
    reported = (reported_name or "").strip()
    target = rocm_target(arch_name)
    if reported not in _identities()["rocm"]["generic_names"]:
        return Identity(reported, ROCM, target)
    found = [
        device
        for device in rocm_devices()
        if device.target == target and device.compute_units == compute_units and _memory_fits(device, memory_bytes)
    ]
    said = f"{target or 'no LLVM target'}, {compute_units or '?'} compute units"
    if len(found) == 1:
        return Identity(found[0].name, ROCM, target, reported or None, f"named from {said} (ROCm's GPU table)")
    shown = reported or "AMD GPU"
    if found:
        names = ", ".join(device.name for device in found)
        return Identity(shown, ROCM, target, None, f"{said} fit several devices ({names}): not named")
    return Identity(shown, ROCM, target, None, f"{said}: no device of ROCm's GPU table has them: not named")


def _memory_fits(device: _RocmDevice, memory_bytes: float | None) -> bool:
    if device.memory_gib is None or memory_bytes is None:  # an APU's share of the system memory: any
        return True
    return abs(memory_bytes / GIB - device.memory_gib) <= MEMORY_TOLERANCE * device.memory_gib


def identify_apple(chip_name: str | None, gpu_cores: int | None) -> Identity:
    """An Apple GPU from the chip's name (``sysctl -n machdep.cpu.brand_string``: 'Apple M2 Max') and its GPU cores
    (``system_profiler SPDisplaysDataType``): 'Apple M2 Max (38-core GPU)'. Another name is kept as it is."""
    chip = (chip_name or "").strip()
    if not chip.startswith(_identities()["apple"]["prefix"]):
        return Identity(chip or "Apple GPU", MPS, None, None, "the chip's name is not an Apple M-series name: kept")
    cores = f" ({gpu_cores}-core GPU)" if gpu_cores else ""
    family = chip.removeprefix("Apple ").split()[0]  # M2
    return Identity(chip + cores, MPS, family)
