"""Is a contributed time possible, and is it believable? Each result on a catalog GPU is put against two figures:

- **the physical bound**: the least time the device could take, every step at the peak of its precision (or its
  memory bandwidth, whichever binds) with nothing else to pay, on every device at once. A time under it (with
  :data:`BOUND_MARGIN` for the catalog's rounding) is impossible: refused.
- **the model's range**: the performance model's estimate of the same job on the same GPU, precision and count, with
  its cross-validated range. A time more than :data:`FAR_OUTSIDE` times past either end is stored as held for
  review, never listed, until someone looks at it.

An inference profile's batches are put against the same two figures: the least time per output token and to the first
token that the GPU's bandwidth and peak allow (:func:`advisor.infer.measured.physical_bounds`), and the speed model's
estimate of the same generation (held beyond :data:`FAR_OUTSIDE` times its cross-validated range, or beyond
FAR_OUTSIDE squared where the engine has no range: one GPU's measurements).

A result on a CPU, or on a GPU the catalog does not know, has no bound: it is taken as it is (an unknown is left
out, never guessed). Pure: the catalog and the reference collection come in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.decision.pipeline import Advisor
from advisor.format import typed
from advisor.format.vocabulary import DeviceKind, Job, WorkloadKind
from advisor.perf import estimates, perfmodel
from advisor.store import results

BOUND_MARGIN = 1.10  # a time under the bound / this is refused: the catalog's peaks are rounded, boost clocks vary
FAR_OUTSIDE = 2.0  # a time this many times past either end of the model's range is held for review
_AT_PEAK = perfmodel.Params(eta_arith=1.0, eta_mem=1.0, step_seconds=0.0, startup_seconds=0.0)


@dataclass(frozen=True)
class Verdict:
    """What the plausibility checks found in a profile: the result that is impossible (``refused``) or far from
    the model (``held``), and why, in one line; neither: believable."""

    refused: str | None = None  # why the time is under the device's physical bound
    field: str = ""  # the refused result's field path (results[0])
    held: str | None = None  # the time is far outside the model's cross-validated range


def physical_bound(row: dict[str, Any], gpu: Any) -> float | None:
    """The least seconds the row's job could take on ``device_count`` of the catalog GPU (None: no peak known)."""
    devices = max(int(row.get("device_count") or 1), 1)
    work = estimates.work_of_row(row, devices)
    predicted = perfmodel.predict(work, perfmodel.device_from_gpu(gpu), row["precision"], _AT_PEAK)
    if predicted is None or predicted[0] <= 0:
        return None
    # a published work is already per GPU
    per_device = row.get("workload_spec", {}).get("kind") != WorkloadKind.PUBLISHED
    return predicted[0] / devices if per_device else predicted[0]


def judge(data: dict[str, Any], reference: Advisor) -> Verdict:
    """The verdict on a valid profile's results, against the reference collection's model and catalog."""
    if reference.catalog is None:
        return Verdict()
    if data.get("job") == Job.INFERENCE:
        return _judge_generation(typed.build(data), reference.catalog)
    rows = results.results_frame([data]).to_dict("records")
    held = None
    for index, row in enumerate(rows):
        if row["device_kind"] != DeviceKind.GPU:
            continue
        gpu = reference.catalog.match(str(row["device_name"]))
        if gpu is None:
            continue
        where = f"results[{index}] ({row['precision']}, {row['seconds']:,.4g} s on {row['device']})"
        bound = physical_bound(row, gpu)
        if bound is not None and row["seconds"] < bound / BOUND_MARGIN:
            return Verdict(
                refused=f"faster than the device's physical bound of {bound:,.4g} s (every step at "
                f"{gpu.name}'s peak for the precision and its memory bandwidth)",
                field=f"results[{index}]",
            )
        if held is None:
            held = _far_from_model(row, gpu, reference, where)
    return Verdict(held=held)


def _far_from_model(row: dict[str, Any], gpu: Any, reference: Advisor, where: str) -> str | None:
    """Why the row is far outside the model's cross-validated range for it, or None."""
    devices = max(int(row.get("device_count") or 1), 1)
    try:
        found = reference.estimate(row["workload"], row["workload_spec"], [gpu.id], devices)
    except Exception:  # the model cannot describe this job: nothing to hold it against
        return None
    rows = found.rows
    if rows.empty:
        return None
    match = rows[(rows["precision"] == row["precision"]) & (rows["device_count"] == devices)]
    if match.empty:
        return None
    low, high = float(match["low"].iloc[0]), float(match["high"].iloc[0])
    seconds = float(row["seconds"])
    if low / FAR_OUTSIDE <= seconds <= high * FAR_OUTSIDE:
        return None
    return (
        f"{where}: over {FAR_OUTSIDE:g}x outside the model's cross-validated range of {low:,.4g}-{high:,.4g} s "
        "for this job on this GPU"
    )


def _judge_generation(profile: Any, catalog: Any) -> Verdict:
    """An inference profile's verdict: a batch faster than the GPU's bound is refused, one far from the estimate
    held."""
    from advisor.infer import measured  # the inference model, only for an inference profile
    from advisor.infer.estimate import decode_range

    gpu = catalog.match(str(profile.device.name)) if profile.device.kind == DeviceKind.GPU else None
    if gpu is None:
        return Verdict()
    for bound in measured.physical_bounds(profile, gpu):
        result = profile.generation_results[bound.index]
        for name in ("time_per_output_token_s", "time_to_first_token_s"):
            least = getattr(bound, name)
            if getattr(result, name) < least / BOUND_MARGIN:
                return Verdict(
                    refused=f"{getattr(result, name):.4g} s is faster than the device's physical bound of "
                    f"{least:.4g} s (the weights and cache read at {gpu.name}'s memory bandwidth, the work at "
                    "its peak)",
                    field=f"generation_results[{bound.index}].{name}",
                )
    ranges = decode_range(catalog)
    for row in measured.compare(profile, catalog):
        if row.decode_ratio is None:
            continue
        far = FAR_OUTSIDE * ranges.get(row.engine, FAR_OUTSIDE)
        if not 1 / far <= row.decode_ratio <= far:
            return Verdict(
                held=f"batch {row.batch}: {row.decode_tokens_per_s:,.4g} decode tokens/s measured, "
                f"{row.estimated_decode_tokens_per_s:,.4g} estimated: over {far:.3g}x apart"
            )
    return Verdict()
