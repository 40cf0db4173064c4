"""The cost analysis: speedups, dollars per speedup and recommendations.

Pure functions over pandas; no I/O, no TensorFlow. Definitions (also in docs/reference.md):

- ``seconds``: total wall time of the workload's epochs; ``runs_per_hour`` = 3600 / seconds.
- against a baseline B: ``speedup`` = B.seconds / seconds; ``dollars_per_speedup`` = price_usd / speedup.
- an upgrade from the current result C to X: ``speedup_vs_current`` = C.seconds / X.seconds;
  ``upgrade_cost_usd`` = X's price (0 for the same hardware); ``dollars_per_speedup_vs_current`` =
  upgrade_cost_usd / speedup_vs_current; ``dollars_per_added_run_per_hour`` =
  upgrade_cost_usd / (X.runs_per_hour - C.runs_per_hour).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from advisor.decision import costs
from advisor.decision.costs import Habits
from advisor.decision.rows import ComparedRow, DecisionRow, OptionRow
from advisor.errors import AdvisorError, InputError
from advisor.format import names as names_
from advisor.format.schema import DEFAULT_WORKLOAD, workload_key
from advisor.format.units import SECONDS_PER_HOUR
from advisor.format.vocabulary import (
    DeviceKind,
    Goal,
    Precision,
    PrecisionFilter,
    PriceBasis,
    WorkloadKind,
    words,
)
from advisor.store.catalog import Catalog, normalise_name
from advisor.store.result_row import ResultRow

PRECISION_FILTERS = words(PrecisionFilter)
ROW_KEYS = (
    "profile",
    "device",
    "devices",  # how many GPUs (or CPUs) in all, as a number: the device's name says it too, in words
    "machines",  # how many machines they are spread over
    "precision",
    "backend",
    "seconds",
    "price_usd",
    "price_kind",
    "memory_gb",
    "fits",
    "speedup",
    "dollars_per_speedup",
    "runs_per_hour",
    "source",
)
OPTION_KEYS = (
    "speedup_vs_current",
    "upgrade_cost_usd",
    "dollars_per_speedup_vs_current",
    "dollars_per_added_run_per_hour",
    "free_upgrade",
    "hours_saved_per_week",
    "power_watts",
    "power_source",
    "energy_usd_per_run",
    "payback_weeks",
    "payback_counts",
    "usd_per_run_owned",
    "rental_usd_per_hour",
    "rental_provider",
    "cloud_usd_per_run",
    "break_even_runs",
    "usd_per_run",
    "cheapest_way",
)
ESTIMATE_KEYS = ("low", "high", "bound", "basis", "basis_parts")  # in JSON rows when a time is estimated
DEVICE_KEYS = (
    "profile",
    "device",
    "precision",
    "seconds",
    "scaling_devices",
    "scaling_workers",
    "scaling_speedup",
    "efficiency",
    "added_speedup_per_device",
    "added_speedup_per_machine",
    "price_per_device",
    "usd_per_added_1x",
)


def apply_prices(frame: pd.DataFrame, prices: dict[str, float], catalog: Catalog | None) -> pd.DataFrame:
    """The frame with the user's own prices: each key a profile id, or a GPU (catalog id or name) whose rows all
    take it (N of it for N devices). Marked "your price"; a key that names nothing is a one-line error."""
    if not prices:
        return frame
    out = frame.copy()
    for key, usd in prices.items():
        if not math.isfinite(usd) or usd < 0:
            raise InputError("price", f"must be a number of dollars, 0 or more; got {usd}", key)
        rows = out["profile"] == key
        if not rows.any():
            if catalog is None:
                raise InputError("price", "no profile with that id (and no catalog to find a GPU in)", key)
            gpu_id = catalog.find(key).id
            names = out["device_name"].unique()
            matched = {n: (m := catalog.match(str(n))) is not None and m.id == gpu_id for n in names}
            on_gpu = out["device_kind"] == DeviceKind.GPU
            rows = (out["catalog_id"] == gpu_id) | (out["device_name"].map(matched) & on_gpu)
        out.loc[rows, "price_usd"] = usd * out.loc[rows, "device_count"].astype(float)
        out.loc[rows, "price_basis"] = PriceBasis.YOURS.value
        out.loc[rows, "price_catalog_kind"] = None
        out.loc[rows, "price_date"] = None
        out.loc[rows, "price_stale"] = False
    return out


def filter_precision(frame: pd.DataFrame, precision: str) -> pd.DataFrame:
    """Keep float32, mixed (any mixed policy) or any results."""
    mask = precision_mask(frame, precision)
    return frame if precision == "any" else frame[mask]


def precision_kept(precision: str, chosen: str) -> bool:
    """Whether :func:`filter_precision` with ``chosen`` keeps a result in ``precision``."""
    return bool(precision_mask(pd.DataFrame({"precision": [precision]}), chosen)[0])


def precision_mask(frame: pd.DataFrame, precision: str) -> np.ndarray:
    """Which rows :func:`filter_precision` keeps."""
    if precision not in PRECISION_FILTERS:
        raise AdvisorError(f"unknown precision {precision!r}: use one of {', '.join(PRECISION_FILTERS)}")
    if precision == "any":
        return np.ones(len(frame), dtype=bool)
    float32 = (frame["precision"] == Precision.FLOAT32).to_numpy(dtype=bool)
    return float32 if precision == PrecisionFilter.FLOAT32 else ~float32


PICK_LIMIT = 200  # a picker lists at most this many profiles; past it, a search narrows the list


@dataclass(frozen=True)
class PickList:
    """The profiles a picker offers: ``ids`` in order, ``matched`` of them answering the search (``searchable``:
    there are more profiles than a list shows, so the picker asks for part of a name)."""

    ids: list[str]
    matched: int
    searchable: bool


def pick_list(names: pd.Series, query: str = "", keep: str | None = None, limit: int = PICK_LIMIT) -> PickList:
    """What a picker of profiles lists: ``names`` (profile id -> name, in the order to offer them) whose name holds
    every word of ``query`` (any case), at most ``limit`` of them, ``keep`` (the one chosen) always among them."""
    searchable = len(names) > limit
    shown = names
    words_asked = query.lower().split() if searchable else []
    if words_asked:
        lowered = names.astype(str).str.lower()
        for word in words_asked:
            shown = shown[lowered[shown.index].str.contains(word, regex=False).to_numpy()]
    ids = [str(i) for i in shown.index[:limit]]
    if keep is not None and keep in names.index and keep not in ids:
        ids = [keep, *ids[: limit - 1]]
    return PickList(ids, len(shown), searchable)


@dataclass
class WorkloadChoice:
    frame: pd.DataFrame
    left_out: int
    workloads: int


def workload_order(frame: pd.DataFrame, preferred: tuple | None = None) -> list[tuple]:
    """The workloads of the frame in the order to offer them: ``preferred`` (an uploaded profile's), then the
    post's, then the user's own (measured) before the published benchmarks, each by its number of results."""
    return order_workloads(frame["workload"].value_counts(), preferred)


def order_workloads(counts: pd.Series, preferred: tuple | None = None) -> list[tuple]:
    """:func:`workload_order` from the workloads' result counts (``frame["workload"].value_counts()``)."""
    default = workload_key(DEFAULT_WORKLOAD)
    published = WorkloadKind.PUBLISHED
    return sorted(counts.index, key=lambda k: (k != preferred, k != default, k[0] == published, -counts[k], k))


def select_workload(frame: pd.DataFrame, key: tuple | None = None) -> WorkloadChoice:
    """Keep one workload's results: ``key``, else the first of :func:`workload_order` (the post's when present)."""
    if frame.empty:
        return WorkloadChoice(frame, 0, 0)
    counts = frame["workload"].value_counts()
    if key is None:
        key = workload_order(frame)[0]
    if len(counts) == 1 and counts.index[0] == key:
        return WorkloadChoice(frame, 0, 1)  # one workload already: no copy
    chosen = frame[frame["workload"] == key]
    return WorkloadChoice(chosen, len(frame) - len(chosen), len(counts))


def _pick_result(frame: pd.DataFrame, profile_id: str, precision: str | None, role: str) -> pd.Series:
    """A profile's result of the given precision; without one, its float32 then its slowest."""
    at = _positions(frame, profile=profile_id)
    if not len(at):
        measured = ~frame["catalog_estimate"].fillna(False).astype(bool)  # the profiles, not the catalog's estimates
        ids = sorted(str(i) for i in frame.loc[measured, "profile"].unique())
        said = names_.unknown_text("profile", profile_id, ids, f"{len(ids):,} in all: python -m advisor list")
        raise InputError(role, said)
    precisions = frame["precision"].to_numpy()[at]
    if precision is not None:
        match = at[precisions == precision]
        if not len(match):
            have = ", ".join(precisions)
            raise AdvisorError(f"profile {profile_id!r} has no {precision} result (it has {have})")
        return frame.iloc[match[0]]
    return _slowest_float32_first(frame, at)


def _slowest_float32_first(frame: pd.DataFrame, at: np.ndarray) -> pd.Series:
    """Among the rows at positions ``at``: the slowest float32 result, else the slowest. Sorts the times alone, not
    the rows (every column of 20,000 rows: 0.05 s of a restart)."""
    float32 = at[frame["precision"].to_numpy()[at] == Precision.FLOAT32]
    pool = float32 if len(float32) else at
    slowest = frame["seconds"].iloc[pool].reset_index(drop=True).sort_values().index[-1]  # as sort_values orders
    return frame.iloc[pool[slowest]]


def default_baseline(rows: pd.DataFrame) -> pd.Series:
    """The comparison's baseline among one workload's results when none is given: the slowest float32 result, else
    the slowest result."""
    return _slowest_float32_first(rows, np.arange(len(rows)))


def with_baseline_figures(frame: pd.DataFrame, baseline_seconds: float) -> pd.DataFrame:
    out = frame.copy(deep=False)  # new columns only: the caller's frame is never written (no copy of its data)
    out["speedup"] = baseline_seconds / out["seconds"]
    out["dollars_per_speedup"] = out["price_usd"] / out["speedup"]
    out["runs_per_hour"] = SECONDS_PER_HOUR / out["seconds"]
    return out


@dataclass
class Comparison:
    baseline: ResultRow
    table: pd.DataFrame
    left_out_results: int = 0  # results of other workloads, not compared
    other_workloads: int = 0


def find_workload(frame: pd.DataFrame, name: str) -> tuple:
    """The workload whose name is ``name``, or the only one whose name contains it (any case, spacing or
    punctuation: 'bert_base_squad' finds 'BERT-base SQuAD'); else the closest few in the error."""
    names = frame.groupby("workload")["workload_name"].first()
    by_name: dict[str, tuple] = {}
    for key, text in names.items():
        by_name.setdefault(str(text), key)
    found = names_.matching(name, sorted(by_name))
    if len(found) == 1:
        return by_name[found[0]]
    if found:
        raise AdvisorError(names_.several_text("workload", name, found))
    raise AdvisorError(names_.unknown_text("workload", name, by_name, "python -m advisor list --workloads lists them"))


def compare(
    frame: pd.DataFrame, baseline: str | None = None, precision: str = "any", workload: tuple | None = None
) -> Comparison:
    """Every result of one workload (default: :func:`workload_order`'s first) against a baseline result (default:
    the slowest float32 result)."""
    if frame.empty:
        raise AdvisorError("no profiles to compare")
    if baseline is not None:
        base = ResultRow.of(_pick_result(frame, baseline, None, "baseline"))
        choice = select_workload(frame, base.workload)
    else:
        choice = select_workload(frame, workload)
        base = ResultRow.of(default_baseline(choice.frame))
    table = with_baseline_figures(filter_precision(choice.frame, precision), base.seconds)
    table = table.sort_values(["seconds", "profile", "precision"]).reset_index(drop=True)
    return Comparison(
        baseline=base, table=table, left_out_results=choice.left_out, other_workloads=choice.workloads - 1
    )


def same_hardware(frame: pd.DataFrame, current: ResultRow) -> pd.Series:
    """True where a result ran on the current result's hardware: the same profile, the same GPU model and count, or
    the same machine measured again (another Keras backend): another precision or backend there is a free upgrade.
    """
    same_gpu = (
        (current.device_kind == DeviceKind.GPU)
        & (frame["device_kind"] == DeviceKind.GPU)
        & (frame["device_count"] == current.device_count)
        & (_each_name(frame["device"]) == normalise_name(current.device))
    )
    return (frame["profile"] == current.profile) | same_gpu | (frame["hardware"] == current.hardware)


def _each_name(names: pd.Series) -> np.ndarray:
    """:func:`normalise_name` of every row, worked out once per distinct name (200,000 rows name a few hundred)."""
    codes, distinct = pd.factorize(names, use_na_sentinel=False)
    return np.array([normalise_name(name) for name in distinct], dtype=object)[codes]


@dataclass(frozen=True)
class Findings:
    """What the recommendation left out, and why: counts that :func:`~advisor.render.prose.notes` puts in words."""

    left_out_results: int = 0  # results of other workloads (compared only within one workload)
    other_workloads: int = 0
    unpriced: int = 0  # faster options without a purchase price (compared by speed only)
    unpriced_rentable: int = 0  # of which a rental is known
    stale: int = 0  # faster options with only a launch price over STALE_YEARS old: never recommended to buy
    too_small: int = 0  # faster options whose memory cannot hold the workload at its batch
    too_small_example: OptionRow | None = None  # the one of them that comes closest
    over_budget: int = 0
    data_wait_share: float | None = None  # the current run's measured wait for data, where it is INPUT_BOUND_SHARE+


# A tracked run that waits for data this share of a step or more is input-bound: the advice puts the free fixes of
# the input pipeline first, and says how far any GPU could speed it up (Amdahl: 1 / share).
INPUT_BOUND_SHARE = 0.10


class OptionRows:
    """Every option of a recommendation, in the goal's order (the best first).

    The columns decided on are at hand; the others (names, dates, provenance, the workload, ranges: shown, never
    decided on) are joined back only for the rows asked for. Joining them to all 200,000 options took a third of a
    re-run, and a page shows 200 of them and the best few of the charts; the CSV and the JSON take :attr:`frame`.
    """

    def __init__(self, decided: pd.DataFrame, order: pd.Index, source: pd.DataFrame) -> None:
        self.decided = decided  # the decided and derived columns, indexed by the source's labels, in no set order
        self._order = order  # the source labels of the options, in the goal's order
        self._source = source  # the workload's rows, every column

    def __len__(self) -> int:
        return len(self._order)

    def column(self, name: str) -> pd.Series:
        """One decided (or derived) column in the goal's order, indexed by each option's position."""
        return pd.Series(self.decided[name].array.take(self.decided.index.get_indexer(self._order)), name=name)

    def rows(self, positions: Sequence[int]) -> pd.DataFrame:
        """The options at these positions of the goal's order, every column, indexed by their positions."""
        positions = np.asarray(positions, dtype=np.intp)
        wide = _widened(self._order[positions], self._source, self.decided)
        wide.index = (
            pd.RangeIndex(len(positions))
            if np.array_equal(positions, np.arange(len(positions)))
            else pd.Index(positions)
        )
        return wide

    def labelled(self, label: Any) -> pd.Series:
        """One option by its label in the workload's rows (the best, the cheapest rental), every column."""
        return _widened(pd.Index([label]), self._source, self.decided).iloc[0]

    def head(self, count: int) -> pd.DataFrame:
        """The first ``count`` options (the best), every column."""
        return self.rows(np.arange(min(count, len(self))))

    @functools.cached_property
    def frame(self) -> pd.DataFrame:
        """Every option, every column, indexed 0..n-1 in the goal's order."""
        return self.head(len(self))


@dataclass
class Recommendation:
    """What :func:`recommend` decided: the current result, every option (a frame, in the goal's order), the best
    for the goal and the cheapest rental (typed rows), what was left out and why, and the figures the page shows."""

    current: DecisionRow
    option_rows: OptionRows
    best: OptionRow | None
    findings: Findings = field(default_factory=lambda: Findings())
    habits: Habits = field(default_factory=Habits)
    goal: str = Goal.VALUE
    ladder: pd.DataFrame | None = None  # the upgrade ladder (costs.ladder)
    best_rental: OptionRow | None = None  # the cheapest faster option to rent per run
    current_costs: costs.CurrentCosts | None = None  # what a run costs on the current hardware
    devices: pd.DataFrame | None = None  # what each added device buys (added_devices), where measured
    budget: float | None = None  # the most the user will spend (None: no limit)
    purchase: OptionRow | None = None  # the purchase the cost comparison shows (the best, if it is bought)
    horizon_runs: int = 10  # the runs the cost comparison covers: the hardware's lifetime at the user's habits

    @property
    def options(self) -> pd.DataFrame:
        """Every option, every column, in the goal's order (:attr:`OptionRows.frame`: joined when first asked)."""
        return self.option_rows.frame

    @property
    def current_figures(self) -> ComparedRow:
        """The current result with the figures of an option against itself (speedup 1x...), as its record shows."""
        alone = pd.DataFrame([self.current.as_dict()])
        return ComparedRow.of(with_baseline_figures(alone, self.current.seconds).iloc[0])


# The columns of a workload's results the recommendation decides on: it works on these alone, and joins the
# others (names, dates, provenance, the workload, ranges: shown, never decided on) back once, for the options it
# returns. Every filter it makes copies the rows it keeps: at 200,000 results, copying every text column was most
# of a re-run. A decision that reads another column fails its tests with a KeyError.
DECIDES = (
    "profile",
    "precision",
    "seconds",
    "price_usd",
    "price_stale",
    "fits",
    "largest_batch",
    "device_kind",
    "device_count",
    "device",
    "hardware",
    "power_watts",
    "rental_usd_per_hour",
    "rental_billing_seconds",
    "rental_minimum_seconds",
)


def upgrade_options(frame: pd.DataFrame, current: ResultRow, precision: str = "any") -> pd.DataFrame:
    """Every other result of the current workload, with the upgrade figures against ``current``."""
    others = ~((frame["profile"] == current.profile) & (frame["precision"] == current.precision)).to_numpy()
    options = frame[others & precision_mask(frame, precision)]
    seconds, price = costs.numbers(options, "seconds"), costs.numbers(options, "price_usd")
    current_seconds = float(current.seconds)
    free = same_hardware(options, current).to_numpy(dtype=bool)
    faster = seconds < current_seconds
    upgrade = np.where(free, 0.0, price)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # missing: NaN; past a float: inf
        speedup = current_seconds / seconds
        runs_per_hour = SECONDS_PER_HOUR / seconds
        added = runs_per_hour - SECONDS_PER_HOUR / current_seconds
        return costs.with_columns(
            options,
            speedup=speedup,
            dollars_per_speedup=price / speedup,
            runs_per_hour=runs_per_hour,  # as compare's
            free_upgrade=free,
            speedup_vs_current=speedup,
            upgrade_cost_usd=upgrade,
            faster=faster,
            dollars_per_speedup_vs_current=np.where(faster, upgrade / speedup, math.nan),
            added_runs_per_hour=np.where(faster, added, math.nan),
            dollars_per_added_run_per_hour=np.where(faster, upgrade / added, math.nan),
        )


def _positions(frame: pd.DataFrame, **equal: Any) -> np.ndarray:
    """The positions of the rows whose columns equal the values given (``profile="a", precision="float32"``)."""
    mask = np.ones(len(frame), dtype=bool)
    for column, value in equal.items():
        mask &= (frame[column] == value).to_numpy(dtype=bool)
    return np.flatnonzero(mask)


def _widened(labels: pd.Index, workload_frame: pd.DataFrame, *added: pd.DataFrame) -> pd.DataFrame:
    """The rows at ``labels`` (unique, in that order) of the workload's frame, every column, followed by the columns
    the ``added`` frames (rows of the same labels) add to it. The decision copied none of the shown columns; they
    come back here, once, in one take of the whole frame."""
    wide = workload_frame.take(workload_frame.index.get_indexer(labels))
    for part in added:
        positions = part.index.get_indexer(labels)
        new = {c: part[c].array.take(positions) for c in part.columns if c not in wide.columns}
        if new:
            wide = costs.with_columns(wide, **new)
    return wide


def _input_bound(current: ResultRow) -> float | None:
    share = current.data_wait_share
    return float(share) if share is not None and not pd.isna(share) and share >= INPUT_BOUND_SHARE else None


def require_profile(frame: pd.DataFrame, profile_id: str, asked: str = "profiles to recommend from") -> None:
    """The advisor's error where the results are empty ("no profiles to ..."), or hold no profile ``profile_id``
    (the closest ids and the command that lists them); nothing where it is there."""
    if frame.empty:
        raise AdvisorError(f"no {asked}")
    if not (frame["profile"] == profile_id).any():
        ids = sorted(str(i) for i in frame["profile"].unique() if not str(i).startswith("catalog:"))
        raise AdvisorError(names_.unknown_text("profile", profile_id, ids, "python -m advisor list"))


def default_precision(frame: pd.DataFrame, profile_id: str) -> str:
    """The precision a profile's hardware runs today: its float32 result, else its only (or first) one."""
    require_profile(frame, profile_id)
    precisions = list(frame.loc[frame["profile"] == profile_id, "precision"])
    return Precision.FLOAT32 if Precision.FLOAT32 in precisions else precisions[0]


def _current_rows(
    frame: pd.DataFrame, current: str, current_precision: str | None, catalog: Catalog | None, hardware_added: bool
) -> tuple[DecisionRow, WorkloadChoice, pd.DataFrame]:
    """The current result (``current_precision``, default: float32 where the profile has it, as the CLI and the app
    agree), its workload's choice and rows with what costs need of each row's hardware (``hardware_added``: the
    frame has them already, :func:`advisor.decision.pipeline.decision_rows`), uniquely labelled."""
    if current_precision is None:
        current_precision = default_precision(frame, current)
    chosen = _pick_result(frame, current, current_precision, "current")
    choice = select_workload(frame, chosen["workload"])
    workload_frame = choice.frame if hardware_added else costs.hardware_columns(choice.frame, catalog)
    if not workload_frame.index.is_unique:  # rows are found by label below
        workload_frame = workload_frame.reset_index(drop=True)
    at = _positions(workload_frame, profile=chosen["profile"], precision=chosen["precision"])
    return DecisionRow.of(workload_frame.iloc[at[0]]), choice, workload_frame


@dataclass(frozen=True)
class _Masks:
    """The decision as masks over the options' rows (a filter copies every column it keeps, a mask copies nothing):
    faster and fitting, without a price, with a stale launch price, too small for the workload, over the budget,
    and eligible for the goal."""

    faster: np.ndarray
    unpriced: np.ndarray
    stale: np.ndarray
    too_small: np.ndarray
    over: np.ndarray
    eligible: np.ndarray

    @classmethod
    def of(cls, options: pd.DataFrame, budget: float | None, goal: str) -> _Masks:
        faster = options["faster"].to_numpy(dtype=bool)
        unpriced = faster & options["upgrade_cost_usd"].isna().to_numpy()
        stale = faster & options["price_stale"].fillna(False).to_numpy(dtype=bool) & ~options["free_upgrade"].to_numpy()
        too_small = faster & options["fits"].eq(False).to_numpy()
        faster = faster & ~too_small
        buyable = faster & ~unpriced & ~stale
        over = (
            buyable & (options["upgrade_cost_usd"] > budget).to_numpy() if budget is not None else np.zeros_like(faster)
        )
        buyable = buyable & ~over
        eligible = buyable
        if goal == Goal.COST:  # a rental that is the cheapest way to run counts too
            rent_only = faster & (options["cheapest_way"] == "rent").to_numpy() & ~buyable
            eligible = (buyable | rent_only) & options["usd_per_run"].notna().to_numpy()
        return cls(faster, unpriced, stale, too_small, over, eligible)


def recommend(
    frame: pd.DataFrame,
    current: str,
    budget: float | None = None,
    precision: str = "any",
    current_precision: str | None = None,
    habits: Habits | None = None,
    goal: str = Goal.VALUE,
    catalog: Catalog | None = None,
    hardware_added: bool = False,
) -> Recommendation:
    """Recommend the upgrade from the current profile's result, within the budget, for a goal (``hardware_added``:
    the frame already has what costs need of each row's hardware, as the pipeline's decision rows do).

    Among the options faster than the current result: free upgrades first, then, by goal, the lowest
    dollars per speedup vs current (value), the fastest (speed) or the lowest cost per run, owned or rented
    (cost). Value and speed need a known price within the budget; cost takes a rental too.
    """
    require_profile(frame, current)
    if budget is not None and (math.isnan(budget) or budget < 0):
        raise InputError("budget", f"must be a number of dollars, 0 or more; got {budget}")
    habits = habits or Habits()
    chosen, choice, workload_frame = _current_rows(frame, current, current_precision, catalog, hardware_added)
    narrow = workload_frame[[c for c in workload_frame.columns if c in DECIDES]]
    options = costs.add_cost_figures(
        upgrade_options(narrow, chosen, precision), chosen.seconds, chosen.power_watts, habits
    )
    masks = _Masks.of(options, budget, goal)
    faster, too_small, stale = masks.faster, masks.too_small, masks.stale
    findings = _findings(choice, masks, options, chosen)
    ranked, order, options = _goal_order(options, masks.eligible, goal)
    rentable = faster & options["cloud_usd_per_run"].notna().to_numpy()
    rentals = options.loc[rentable, ["cloud_usd_per_run", "seconds"]]
    rentals = rentals.iloc[costs.sort_order(rentals, ["cloud_usd_per_run", "seconds"])]
    # The ladder's steps are purchases: faster, fitting and priced by a price today (a stale one is never bought).
    steps = costs.ladder(options[list(costs.LADDER_COLUMNS)].assign(faster=faster & ~stale), chosen.seconds, budget)
    # the one too small that comes closest to fitting
    closest_small = options.loc[too_small, "largest_batch"].sort_values().index[-1] if too_small.any() else None
    steps = _widened(steps.index, workload_frame, options, steps)
    steps.index = order.get_indexer(steps.index)  # numbered as the options
    option_rows = OptionRows(options, order, workload_frame)
    best = None if ranked.empty else OptionRow.of(option_rows.labelled(ranked[0]))
    best_rental = None if rentals.empty else OptionRow.of(option_rows.labelled(rentals.index[0]))
    if closest_small is not None:
        findings = dataclasses.replace(findings, too_small_example=OptionRow.of(option_rows.labelled(closest_small)))
    return Recommendation(
        current=chosen,
        option_rows=option_rows,
        best=best,
        findings=findings,
        habits=habits,
        goal=goal,
        ladder=steps,
        best_rental=best_rental,
        current_costs=costs.current_figures(chosen.seconds, chosen.power_watts, habits),
        devices=added_devices(workload_frame),
        budget=budget,
        purchase=_purchase(best),
        horizon_runs=max(int(habits.lifetime_runs), 10),
    )


def _purchase(best: OptionRow | None) -> OptionRow | None:
    """The purchase the cost comparison shows: the best option, unless it is free or a rental chosen for its cost
    per run (nothing is bought)."""
    if best is None or best.free_upgrade:
        return None
    if best.cheapest_way == "rent" and pd.isna(best.upgrade_cost_usd):
        return None
    return best


def _findings(choice: WorkloadChoice, masks: _Masks, options: pd.DataFrame, chosen: DecisionRow) -> Findings:
    """What the options left out and why (counts), and how much the current run waits for data."""
    return Findings(
        left_out_results=choice.left_out,
        other_workloads=choice.workloads - 1,
        unpriced=int(masks.unpriced.sum()),
        unpriced_rentable=int((masks.unpriced & options["cloud_usd_per_run"].notna().to_numpy()).sum()),
        stale=int(masks.stale.sum()),
        too_small=int(masks.too_small.sum()),
        over_budget=int(masks.over.sum()),
        data_wait_share=_input_bound(chosen),
    )


def _goal_order(options: pd.DataFrame, eligible: np.ndarray, goal: str) -> tuple[pd.Index, pd.Index, pd.DataFrame]:
    """(the eligible options best first for the goal, every option in the goal's order: the eligible ones best
    first, then the rest by time; the options with their place in that order, ``rank``, none where ineligible)."""
    ranked = costs.rank(options.loc[eligible, list(costs.RANK_COLUMNS)], goal).index
    keys = options[["seconds", "profile", "precision"]].assign(
        rank=pd.Series(np.arange(1.0, len(ranked) + 1), index=ranked).reindex(options.index)
    )
    order = keys.index[costs.sort_order(keys, ["rank", "seconds", "profile", "precision"])]
    return ranked, order, options.assign(rank=keys["rank"].to_numpy())


def added_devices(frame: pd.DataFrame) -> pd.DataFrame:
    """What each added device (or machine) buys: for results measured on several devices or machines (with one
    device in the same run), the speedup over one device, the scaling efficiency, the speedup each added device
    and machine brings, and the price of each added 1x of speed."""
    rows = frame[frame["scaling_devices"].notna()]  # a filter is a new frame: the columns below are its own
    if rows.empty:
        return rows
    devices = rows["scaling_devices"]
    rows["efficiency"] = rows["scaling_speedup"] / devices
    rows["added_speedup_per_device"] = (rows["scaling_speedup"] - 1) / (devices - 1)
    # several machines: a machine holds devices / workers of them, so it adds that many devices' speedup
    rows["added_speedup_per_machine"] = rows["added_speedup_per_device"] * devices / rows["scaling_workers"]
    rows["price_per_device"] = rows["price_usd"] / rows["device_count"]
    rows["usd_per_added_1x"] = (rows["price_per_device"] / rows["added_speedup_per_device"]).where(
        rows["added_speedup_per_device"] > 0
    )
    return rows


def best_value_frontier(frame: pd.DataFrame, price: str = "price_usd", seconds: str = "seconds") -> pd.Series:
    """True for results no other result beats on both price and time (cheaper-or-equal and faster).

    Results without a price are never on the frontier.
    """
    priced = frame[frame[price].notna()].sort_values([price, seconds])
    fastest_before = priced[seconds].cummin().shift(fill_value=math.inf)
    on_frontier = pd.Series(False, index=frame.index)
    on_frontier[priced.index[priced[seconds] < fastest_before]] = True
    return on_frontier


def price_time_points(frame: pd.DataFrame, most: int) -> pd.DataFrame:
    """The priced results a price-time chart draws (every one on the best-value frontier and the ``most`` fastest),
    each marked ``frontier`` where nothing beats it."""
    priced = frame[frame["price_usd"].notna()]
    on_frontier = best_value_frontier(priced)
    if len(priced) > most:
        keep = on_frontier | priced.index.isin(priced.nsmallest(most, "seconds").index)
        priced, on_frontier = priced[keep], on_frontier[keep]
    return priced.assign(frontier=on_frontier)
