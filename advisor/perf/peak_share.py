"""How much of its device's peak a measured run reached: the share a tracked run's profile records.

The peak is the catalog's, for the run's precision, as the performance model takes it (TF32 where the catalog gives it
above the float32 peak: the higher of the two, so the share is never flattered). A device the catalog does not know
gets no share, and a share over 100 % is never shown: the counted work or the peak is wrong, and the record says which
figures disagree. Other tools have shown "MFU" of 152 % and 563 % on accelerators missing from their peak tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.perf.perfmodel import device_from_gpu
from advisor.store.catalog import Catalog


@dataclass(frozen=True)
class PeakShare:
    """A run's share of its device's peak (None where there is none to give) and what it rests on, in words: the
    peak and the catalog GPU, or why there is no share."""

    share: float | None
    basis: str


def share_of_peak(achieved_tflops: float, device_name: str, precision: str, catalog: Catalog | None) -> PeakShare:
    """``achieved_tflops`` of one device over the catalog's peak of ``device_name`` at ``precision``."""
    gpu = catalog.match(device_name) if catalog is not None else None
    if gpu is None:
        return PeakShare(None, f"no share of its peak: {device_name} is not in the GPU catalog, so its peak is unknown")
    device = device_from_gpu(gpu)
    peak, label = device.peak(precision), device.peak_label(precision)
    if not peak:
        return PeakShare(None, f"no share of its peak: the catalog gives the {gpu.name} no {precision} peak")
    share = achieved_tflops / peak
    if share > 1:
        return PeakShare(
            None,
            f"no share of its peak: the counted work ran at {achieved_tflops:.3g} TFLOP/s, over the {gpu.name}'s "
            f"{label} peak of {peak:.3g}: the count or the peak is wrong, so neither is shown as a share",
        )
    return PeakShare(share, f"of the {gpu.name}'s {label} peak, {peak:.3g} TFLOP/s (the GPU catalog)")
