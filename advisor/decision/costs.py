"""What a run really costs: energy, owning versus renting, payback, and the upgrade ladder.

Pure pandas over the analysis frames; the definitions are in ``advisor.format.metrics`` (one text each,
shown by docs/reference.md, the app and the Markdown download). No I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from advisor.decision.rows import DecisionRow, OptionRow
from advisor.errors import InputError
from advisor.format.units import SECONDS_PER_HOUR, WATT_SECONDS_PER_KWH, WEEKS_PER_YEAR
from advisor.format.vocabulary import CostKind, DeviceKind, Goal, PaybackCounts, Source, words
from advisor.infer.token_costs import CostInputs
from advisor.store.catalog import Catalog

GOALS = words(Goal)
GOAL_HELP = {goal.value: goal.help for goal in Goal}


# Each input's option: (metavar, what it means). The CLI's options and their help come from this table.
HABIT_OPTIONS = {
    "runs_per_week": ("N", "how often you train this job"),
    "hour_value": ("USD", "what an hour of waiting is worth to you, for the payback"),
    "kwh_price": ("USD", "electricity price per kWh"),
    "lifetime_years": ("YEARS", "how long you keep bought hardware: its price is spread over these years"),
    "resale_usd": ("USD", "what your current hardware would sell for"),
    "session_minutes": ("MIN", "a rented session's start-up before the first run: boot, container, data copy"),
    "runs_per_session": ("N", "training runs in one rented session"),
}


@dataclass(frozen=True)
class Habits:
    """How the user trains and what their time and power cost (the defaults are the CLI's and the app's)."""

    runs_per_week: float = 10.0
    hour_value: float = 20.0  # USD an hour of waiting is worth: a modest value, so that a payback has an answer
    kwh_price: float = CostInputs.kwh_price  # USD per kWh: the same default as an inference job's costs
    lifetime_years: float = CostInputs.lifetime_years  # how long bought hardware is used
    resale_usd: float = 0.0  # what the current hardware would sell for
    session_minutes: float = 5.0  # a rented session's start-up: boot, pull the container, copy the data
    runs_per_session: float = 1.0  # runs in one rented session (billed together)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InputError(f.name, f"must be a number, 0 or more; got {value!r}")
        if self.lifetime_years == 0:
            raise InputError("lifetime_years", "must be more than 0")
        if self.runs_per_session < 1:
            raise InputError("runs_per_session", "must be 1 or more")

    @property
    def lifetime_weeks(self) -> float:
        return WEEKS_PER_YEAR * self.lifetime_years

    @property
    def lifetime_runs(self) -> float:
        """The runs bought hardware does over its lifetime at these habits."""
        return self.runs_per_week * self.lifetime_weeks


# --------------------------------------------------------------------------- power and rentals


def hardware_columns(frame: pd.DataFrame, catalog: Catalog | None) -> pd.DataFrame:
    """The frame with what costs need per row: the catalog GPU (``catalog_id``), the power used for energy and
    where it comes from, and the cheapest on-demand rental of the same GPUs (times the device count).

    The pipeline works them out once per workload (its decision rows) and reuses them at every re-run."""
    out = frame.copy(deep=False)  # columns replaced or added, never written in place: the caller's frame is kept
    gpus = catalog.by_id() if catalog is not None else {}
    if catalog is not None:
        names = out.loc[out["device_kind"] == DeviceKind.GPU, "device_name"].dropna().unique()
        matched = {name: gpu.id for name in names if (gpu := catalog.match(str(name))) is not None}
        found = out["device_name"].map(matched).where(out["device_kind"] == DeviceKind.GPU)
        out["catalog_id"] = out["catalog_id"].where(out["catalog_id"].notna(), found)
    ids = out["catalog_id"].where(out["catalog_id"].map(lambda i: isinstance(i, str)), None)
    out["catalog_id"] = ids
    # What a row needs from its catalog GPU, worked out once per GPU and mapped onto the rows (a frame of 200,000
    # rows names a few dozen GPUs).
    per_gpu = {}
    for gpu_id in ids.dropna().unique():
        gpu = gpus.get(gpu_id)
        rental = gpu.best_rental if gpu is not None else None
        billing = catalog.billing_of(rental.provider) if rental is not None and catalog is not None else None
        per_gpu[gpu_id] = (
            _board_power(gpu) if gpu is not None else math.nan,
            rental.usd_per_hour if rental else math.nan,
            rental.provider if rental else None,
            rental.date if rental else None,
            billing.billing_seconds if billing else math.nan,
            billing.minimum_seconds if billing else math.nan,
        )

    facts = pd.DataFrame.from_dict(per_gpu, orient="index", columns=range(6)).reindex(ids.to_numpy())  # one lookup

    def column(position: int, numeric: bool) -> pd.Series:
        values = pd.Series(facts[position].to_numpy(), index=out.index)
        return values.astype(float) if numeric else values.astype(object).where(values.notna(), None)

    count = out["device_count"].astype(float)
    board = column(0, True) * count
    measured = out["measured_power_watts"].astype(float)
    profile = out["power_watts"].astype(float)
    is_catalog_row = out["catalog_estimate"].fillna(False).astype(bool)  # a catalog estimate, not a profile
    out["power_watts"] = measured.fillna(profile.where(~is_catalog_row)).fillna(board)  # the power energy uses
    out["power_source"] = np.select(
        [measured.notna(), profile.notna() & ~is_catalog_row, board.notna()],
        [Source.MEASURED.value, "profile", "catalog board power"],
        default="unknown",
    )
    out["rental_usd_per_hour"] = column(1, True) * count
    out["rental_provider"] = column(2, False)
    out["rental_date"] = column(3, False)
    out["rental_billing_seconds"] = column(4, True)
    out["rental_minimum_seconds"] = column(5, True)
    return out


def billed_usd_per_run(usd_per_hour, seconds, billing_seconds, minimum_seconds, habits: Habits):
    """What renting costs a run as billed: a session of ``runs_per_session`` runs after its start-up, billed in whole
    increments of ``billing_seconds`` and at least ``minimum_seconds``, shared by its runs."""
    session = habits.session_minutes * 60.0 + habits.runs_per_session * seconds
    billed = np.maximum(minimum_seconds, np.ceil(session / billing_seconds) * billing_seconds)
    return usd_per_hour * billed / SECONDS_PER_HOUR / habits.runs_per_session


def _board_power(gpu) -> float:
    value = gpu.value("board_power_w") if gpu is not None else None
    return math.nan if value is None else float(value)


# --------------------------------------------------------------------------- the figures


def energy_usd_per_run(power_watts: pd.Series | float, seconds: pd.Series | float, kwh_price: float):
    return power_watts * seconds / WATT_SECONDS_PER_KWH * kwh_price


def with_columns(frame: pd.DataFrame, **columns) -> pd.DataFrame:
    """``frame.assign(**columns)`` for columns it does not have yet, in one concatenation: ``assign`` inserts a
    column at a time, 0.2-0.6 ms each whatever the rows, and a recommendation adds eighty of them. The values are
    arrays in the frame's row order, or scalars (a Series would be aligned on its index)."""
    if any(name in frame.columns for name in columns):
        return frame.assign(**columns)
    return pd.concat([frame, pd.DataFrame(columns, index=frame.index)], axis=1)


def numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    """A column as floats (missing: NaN), for arithmetic in NumPy: a pandas operation costs 0.1-0.3 ms whatever the
    rows, and a re-run makes a hundred of them."""
    return frame[column].to_numpy(dtype=float, na_value=np.nan)


def add_cost_figures(
    options: pd.DataFrame, current_seconds: float, current_power_watts: float, habits: Habits
) -> pd.DataFrame:
    """Energy, hours saved, payback, cost per run owned and rented, and break-even runs for every option, against
    the current result's time and power (NaN: unknown)."""
    seconds, price = numbers(options, "seconds"), numbers(options, "price_usd")
    upgrade = numbers(options, "upgrade_cost_usd")
    free = options["free_upgrade"].to_numpy(dtype=bool)
    current_seconds = float(current_seconds)
    faster = options["faster"].to_numpy(dtype=bool) if "faster" in options else seconds < current_seconds
    runs, nan = habits.runs_per_week, math.nan
    billing = {}
    if "rental_billing_seconds" not in options:  # rows without a catalog: billed by the hour, no minimum
        billing = {"rental_billing_seconds": SECONDS_PER_HOUR, "rental_minimum_seconds": 0.0}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # missing: NaN; past a float: inf
        energy = energy_usd_per_run(numbers(options, "power_watts"), seconds, habits.kwh_price)
        current_energy = energy_usd_per_run(_number(current_power_watts), current_seconds, habits.kwh_price)
        hours_saved = runs * (current_seconds - seconds) / SECONDS_PER_HOUR
        weekly_energy_saving = runs * (current_energy - energy)
        energy_known = ~np.isnan(weekly_energy_saving)
        weekly_gain = hours_saved * habits.hour_value + np.where(energy_known, weekly_energy_saving, 0.0)
        outlay = upgrade - habits.resale_usd
        payback = np.where(weekly_gain > 0, outlay / weekly_gain, nan)
        payback = np.where(np.isnan(upgrade), nan, np.where(outlay > 0, payback, 0.0))
        payback_weeks = np.where(faster, np.where(free, 0.0, payback), nan)  # a slower one never pays back
        lifetime_runs = habits.lifetime_runs
        owned_price = np.where(free, 0.0, price)
        owned = (owned_price / lifetime_runs if lifetime_runs > 0 else owned_price * math.inf) + energy
        cloud = billed_usd_per_run(
            numbers(options, "rental_usd_per_hour"),
            seconds,
            _known_or(options, "rental_billing_seconds", SECONDS_PER_HOUR),
            _known_or(options, "rental_minimum_seconds", 0.0),
            habits,
        )
        margin = cloud - np.where(np.isnan(energy), 0.0, energy)
        runs_to_break_even = np.where(margin > 0, price / margin, nan)
    rent_cheaper = ~np.isnan(cloud) & (np.isnan(owned) | (cloud < owned))
    way = np.where(rent_cheaper, 1, np.where(np.isnan(owned), -1, 0)).astype(np.int8)  # -1: neither known
    alone = PaybackCounts.TIME_ALONE if habits.hour_value > 0 else PaybackCounts.NOTHING
    return with_columns(
        options,
        energy_usd_per_run=energy,
        hours_saved_per_week=hours_saved,
        payback_weeks=payback_weeks,
        payback_beyond_lifetime=payback_weeks > habits.lifetime_weeks,
        payback_counts=_words(energy_known.astype(np.int8), [alone.value, PaybackCounts.TIME_AND_ENERGY.value]),
        usd_per_run_owned=owned,
        **billing,
        cloud_usd_per_run=cloud,
        break_even_runs=np.ceil(np.where(np.isfinite(runs_to_break_even), runs_to_break_even, nan)),
        usd_per_run=np.where(rent_cheaper, cloud, owned),
        cheapest_way=_words(way, ["buy", "rent"]),
    )


def _known_or(frame: pd.DataFrame, column: str, default: float) -> np.ndarray | float:
    """A column's numbers with ``default`` where one is missing (the whole column missing: ``default``)."""
    return np.nan_to_num(numbers(frame, column), nan=default) if column in frame else default


def _number(value) -> float:
    return math.nan if value is None or pd.isna(value) else float(value)


def _words(codes: np.ndarray, words: list[str]) -> pd.Categorical:
    """A column of a few words by their codes (-1: missing): a categorical, built without a string a row (at 200,000
    rows, writing the words row by row was a tenth of a re-run)."""
    return pd.Categorical.from_codes(codes, words)


@dataclass(frozen=True)
class CurrentCosts:
    """What a run costs on the hardware the user has (NaN: its power is unknown)."""

    energy_usd_per_run: float
    usd_per_run: float  # already owned: only its energy
    hours_per_week: float  # the time its runs take a week


def current_figures(seconds: float, power_watts: float, habits: Habits) -> CurrentCosts:
    """The current hardware's costs: a run of ``seconds`` at ``power_watts``, at the user's habits."""
    energy = float(energy_usd_per_run(_number(power_watts), seconds, habits.kwh_price))
    return CurrentCosts(energy, energy, habits.runs_per_week * seconds / SECONDS_PER_HOUR)


# --------------------------------------------------------------------------- choosing


RANK_COLUMNS = (
    "free_upgrade",
    "dollars_per_speedup_vs_current",
    "seconds",
    "upgrade_cost_usd",
    "usd_per_run",
    "profile",
    "precision",
)  # what rank reads
LADDER_COLUMNS = ("faster", "upgrade_cost_usd", "seconds", "runs_per_hour", "hours_saved_per_week")  # what ladder reads


def sort_order(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """The positions of ``frame``'s rows sorted by ``columns`` as ``sort_values(columns, kind="stable")`` sorts them:
    ascending, missing values last in each column, ties in their order.

    One NumPy lexsort over the leading numeric columns; the columns after them (the texts that break ties: profile,
    precision) are sorted on only for the rows still tied. pandas makes every key a Categorical first, a fifth of a
    re-run at 200,000 options, and sorting 200,000 profile ids to break a handful of ties cost as much again."""
    lead = 0
    while lead < len(columns) and _is_number(frame[columns[lead]]):
        lead += 1
    if lead == 0:
        return _lexsorted(frame, columns)
    numbers = [_sort_key(frame[name]) for name in columns[:lead]]
    order = np.lexsort(numbers[::-1])  # the last key is the first sorted on
    if lead == len(columns) or len(order) < 2:
        return order
    same = np.ones(len(order) - 1, dtype=bool)  # each row equal to the next in every leading key (NaN to NaN)
    for values in numbers:
        ordered = values[order]
        same &= (ordered[1:] == ordered[:-1]) | (np.isnan(ordered[1:]) & np.isnan(ordered[:-1]))
    if not same.any():
        return order
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    group = np.concatenate([[0], np.cumsum(~same)])[tied]  # the tied rows' runs, in order
    rows = order[tied]
    within = _lexsorted(frame.iloc[rows], columns[lead:], first=group)
    order[tied] = rows[within]  # each run sorted in its own place
    return order


def _is_number(values: pd.Series) -> bool:
    return pd.api.types.is_bool_dtype(values.dtype) or pd.api.types.is_numeric_dtype(values.dtype)


def _sort_key(values: pd.Series) -> np.ndarray:
    """A column as a lexsort key, missing values last: numbers as floats (NumPy sorts NaN last), texts as the codes
    of their sorted distinct values."""
    if _is_number(values):
        return values.to_numpy(dtype=float, na_value=np.nan)
    codes, distinct = pd.factorize(values, sort=True)
    return np.where(codes < 0, len(distinct), codes)  # missing (-1) last


def _lexsorted(frame: pd.DataFrame, columns: list[str], first: np.ndarray | None = None) -> np.ndarray:
    """The stable sort of every key; ``first``: a key sorted on before them."""
    keys = [_sort_key(frame[name]) for name in reversed(columns)] + ([first] if first is not None else [])
    return np.lexsort(keys) if keys else np.arange(len(frame))


def rank(eligible: pd.DataFrame, goal: str) -> pd.DataFrame:
    """The eligible options, best first, for a goal. Free upgrades come first for value and cost."""
    if goal not in GOALS:
        raise InputError("goal", f"must be one of {', '.join(GOALS)}; got {goal!r}")
    ranked = eligible.assign(_paid=~eligible["free_upgrade"].astype(bool))
    if goal == Goal.VALUE:
        keys = ["_paid", "dollars_per_speedup_vs_current", "seconds"]
    elif goal == Goal.SPEED:
        keys = ["seconds", "_paid", "upgrade_cost_usd"]
    else:
        keys = ["_paid", "usd_per_run", "seconds"]
    return eligible.iloc[sort_order(ranked, [*keys, "profile", "precision"])]


def ladder(options: pd.DataFrame, current_seconds: float, budget: float | None) -> pd.DataFrame:
    """The purchases within the budget that nothing cheaper (or equal) beats on time, cheapest first, each with the
    marginal dollars per added run per hour over the step before (the first step: over the current hardware, whose
    run takes ``current_seconds``)."""
    priced = options[options["faster"] & options["upgrade_cost_usd"].notna()]
    if budget is not None:
        priced = priced[priced["upgrade_cost_usd"] <= budget]
    steps = priced.iloc[sort_order(priced, ["upgrade_cost_usd", "seconds"])]
    steps = steps[steps["seconds"] < steps["seconds"].cummin().shift(fill_value=math.inf)]
    previous_cost = steps["upgrade_cost_usd"].shift(fill_value=0.0)
    previous_rate = steps["runs_per_hour"].shift(fill_value=SECONDS_PER_HOUR / current_seconds)
    previous_saving = steps["hours_saved_per_week"].shift(fill_value=0.0)
    marginal_usd = steps["upgrade_cost_usd"] - previous_cost
    added_rate = steps["runs_per_hour"] - previous_rate
    added_saving = steps["hours_saved_per_week"] - previous_saving
    # A step that adds nothing measurable (a run of milliseconds: the hours saved round to the same float) has no
    # marginal price: null, never infinity.
    return steps.assign(
        marginal_usd=marginal_usd,
        marginal_usd_per_added_run_per_hour=(marginal_usd / added_rate).where(added_rate > 0),
        marginal_usd_per_hour_saved_per_week=(marginal_usd / added_saving).where(added_saving > 0),
    )


@dataclass(frozen=True)
class CostLine:
    """A choice's cumulative cost: ``start`` dollars at run 0, then ``per_run`` dollars a run."""

    kind: CostKind
    option: str  # the option's name ("" for keeping the current hardware): render.charts words the line
    start: float
    per_run: float
    estimated: bool = False  # the option's time is the catalog's estimate

    def at(self, runs: float) -> float:
        return self.start + self.per_run * runs


def cost_lines(
    current: DecisionRow, purchase: OptionRow | None, rental: OptionRow | None, habits: Habits
) -> list[CostLine]:
    """Keeping the current hardware, buying, renting: each run costs its energy plus the waiting time at hour_value;
    buying adds its price (less the resale of the current hardware) at run 0. Unknown energy counts as 0 here,
    and the chart says so."""

    def per_run(seconds: float, money: float) -> float:
        return money + habits.hour_value * seconds / SECONDS_PER_HOUR

    keep = _known(current_figures(current.seconds, current.power_watts, habits).usd_per_run)
    lines = [CostLine(CostKind.KEEP, "", 0.0, per_run(current.seconds, keep))]
    if purchase is not None:
        outlay = max(float(purchase.upgrade_cost_usd) - habits.resale_usd, 0.0)
        lines.append(
            CostLine(
                CostKind.BUY,
                str(purchase.name),
                outlay,
                per_run(purchase.seconds, _known(purchase.energy_usd_per_run)),
                purchase.source == Source.ESTIMATED,
            )
        )
    if rental is not None:
        lines.append(
            CostLine(
                CostKind.RENT,
                str(rental.name),
                0.0,
                per_run(rental.seconds, float(rental.cloud_usd_per_run)),
                rental.source == Source.ESTIMATED,
            )
        )
    return lines


def break_even(first: CostLine, second: CostLine) -> float | None:
    """The first whole run count from which ``second`` costs no more than ``first`` for good (None if never)."""
    if second.per_run > first.per_run:
        return None
    if second.per_run == first.per_run:
        return 1.0 if second.start <= first.start else None
    return float(max(1, math.ceil((second.start - first.start) / (first.per_run - second.per_run) - 1e-9)))


def cumulative_costs(
    current: DecisionRow, purchase: OptionRow | None, rental: OptionRow | None, habits: Habits, runs: int
) -> pd.DataFrame:
    """Cumulative cost (USD) against the number of runs, for the chart: each line is straight, so it is drawn
    through its two ends and every break-even point (a few rows, whatever the number of runs)."""
    lines = cost_lines(current, purchase, rental, habits)
    marks = {0.0, float(runs)} | {p for p in crossing_runs(lines) if p <= runs}
    return pd.DataFrame(
        [
            {"runs": n, "kind": line.kind.value, "option": line.option, "estimated": line.estimated, "usd": line.at(n)}
            for line in lines
            for n in sorted(marks)
        ]
    )


def _known(value: float) -> float:
    return 0.0 if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


PAIRS = (  # the break-even points the chart marks: where the second line overtakes the first
    (CostKind.KEEP, CostKind.BUY),
    (CostKind.KEEP, CostKind.RENT),
    (CostKind.RENT, CostKind.BUY),
)


def _by_kind(lines: list) -> dict[str, CostLine]:
    return {line.kind: line for line in lines}


def crossing_runs(lines: list) -> list[float]:
    kinds = _by_kind(lines)
    found = [break_even(kinds[a], kinds[b]) for a, b in PAIRS if a in kinds and b in kinds]
    return [n for n in found if n is not None]


def crossings(lines: pd.DataFrame) -> pd.DataFrame:
    """The break-even points of a cumulative_costs frame: where buying or renting overtakes keeping the current
    hardware, and where buying overtakes renting (within the frame's runs): runs, usd, and the two lines' kinds."""
    horizon = float(lines["runs"].max())
    straight = []
    for (kind, option), group in lines.groupby(["kind", "option"], sort=False):
        group = group.sort_values("runs")
        ends = group.iloc[[0, -1]]
        slope = (ends["usd"].iloc[1] - ends["usd"].iloc[0]) / max(ends["runs"].iloc[1] - ends["runs"].iloc[0], 1)
        straight.append(CostLine(CostKind(kind), option, float(ends["usd"].iloc[0]), float(slope)))
    kinds = _by_kind(straight)
    points = []
    for first, second in PAIRS:
        if first in kinds and second in kinds:
            runs = break_even(kinds[first], kinds[second])
            if runs is not None and runs <= horizon:
                points.append({"runs": runs, "usd": kinds[second].at(runs), "first": first, "second": second})
    return pd.DataFrame(points, columns=["runs", "usd", "first", "second"])
