"""The one pipeline from a collection of results to every answer the advisor gives: :class:`Advisor`.

The command line, the app and the collection service ask an :class:`Advisor` (the results, the catalog, the prices
the user was offered and their habits) and get typed values back: a :class:`~advisor.decision.analysis.Comparison`,
a :class:`~advisor.decision.analysis.Recommendation`, a :class:`~advisor.perf.estimates.CatalogEstimates`, a
:class:`~advisor.llm.advice.JobAdvice`. None of them chains the steps below itself, so none can chain them in
another order: the same question gets the same answer everywhere.

The steps (a workload's rows, the catalog's estimates of it, the rows a decision is made on) are worked out once per
workload and kept in the advisor: the app keeps one advisor per collection and asks it again at every re-run, with
other prices or habits (:meth:`Advisor.with_choices`), without working them out again. Pure: no I/O, no UI.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from advisor.decision import analysis, costs
from advisor.decision.analysis import default_baseline, select_workload
from advisor.decision.costs import Habits
from advisor.errors import AdvisorError
from advisor.format.vocabulary import Goal, PrecisionFilter
from advisor.llm import advice as llm_advice
from advisor.llm.job import JobRequest
from advisor.perf import estimates
from advisor.store.catalog import Catalog

MEMO_ENTRIES = 64  # the steps kept per advisor (a workload's rows, estimates, decision rows, counts)


@dataclass(frozen=True)
class WorkloadRows:
    """A workload's results, its profiles' names in the order to offer them (slowest first) and the slowest (the
    comparison's baseline: the usual current hardware)."""

    frame: pd.DataFrame
    names: pd.Series
    slowest: str

    def device_of(self, profile_id: str) -> str | None:
        """The device a profile of the workload ran on (its name as measured), None for an unknown id."""
        found = self.frame.loc[self.frame["profile"] == profile_id, "device_name"]
        return str(found.iloc[0]) if len(found) else None


def workload_rows(frame: pd.DataFrame, workload: tuple) -> WorkloadRows:
    """The rows of one workload, with its profiles' names slowest first."""
    rows = select_workload(frame, workload).frame
    order = rows.groupby("profile")["seconds"].max().sort_values(ascending=False, kind="stable").index
    names = rows.groupby("profile")["name"].first()[order]
    return WorkloadRows(rows, names, default_baseline(rows)["profile"])


def _first_workloads(frame: pd.DataFrame) -> tuple[list, list]:
    """Every profile's id and the workload of its first row."""
    if frame.empty:
        return [], []
    first = frame.drop_duplicates("profile")
    return list(first["profile"]), list(first["workload"])


@dataclass(frozen=True)
class Upload:
    """A profile uploaded to the app (validated, never saved): its data and the problems that refused it."""

    data: dict | None
    problems: list[str]
    key: str = ""  # the upload's bytes' SHA-256: what the collection built with it is kept under

    def lookup(self, profile_of: Callable[[str], Any]) -> Callable[[str], Any]:
        """``profile_of`` that answers the upload's id with its tree (it has no file to read it from)."""
        if self.data is None:
            return profile_of
        from advisor.store.parse import tree_of

        tree = tree_of(self.data)
        return lambda profile_id: tree if profile_id == tree.id else profile_of(profile_id)


def read_upload(raw: bytes, name: str, taken_ids: set[str]) -> Upload:
    """An uploaded profile's bytes validated, its id made unique among ``taken_ids`` (``store.as_upload``)."""
    import hashlib

    from advisor import store
    from advisor.errors import ProfileError

    key = hashlib.sha256(raw).hexdigest()
    try:
        profile, _ = store.profile_from_bytes(raw, f"upload {name}")
    except ProfileError as error:
        return Upload(None, [str(p) for p in error.problems], key)
    return Upload(store.as_upload(profile.data, taken_ids), [], key)


def with_upload(results: pd.DataFrame, upload: Upload | None) -> tuple[pd.DataFrame, tuple | None]:
    """The results with an upload's rows added (the collection the advisor is asked about) and its workload (the
    one the page shows first: its own model, estimated on the catalog); the results alone without one."""
    if upload is None or upload.data is None:
        return results, None
    from advisor.store import results as results_rows

    added = results_rows.results_frame([upload.data])
    return pd.concat([results, added], ignore_index=True), added["workload"].iloc[0]


def workload_of(frame: pd.DataFrame, profile_id: str | None = None, key: tuple | None = None) -> tuple:
    """The workload the decision is about: ``profile_id``'s (the current hardware or the baseline), else ``key``,
    else the first of :func:`~advisor.decision.analysis.workload_order`."""
    rows = frame[frame["profile"] == profile_id]
    return rows["workload"].iloc[0] if len(rows) else key or select_workload(frame).frame["workload"].iloc[0]


def catalog_estimates(
    frame: pd.DataFrame, catalog: Catalog, workload: tuple, link_gbps: float | None = None
) -> estimates.CatalogEstimates:
    """The catalog's estimates of the workload: each GPU alone and two of them (what compare, recommend and the app
    offer), and with a network's speed two machines of them; calibrated on every result of ``frame``."""
    request = estimates.EstimateRequest(
        workload, devices=estimates.OFFERED_DEVICES, machines=2 if link_gbps else 1, link_gbps=link_gbps
    )
    return estimates.estimate_catalog(frame, catalog, request)


def with_estimates(rows: pd.DataFrame, found: estimates.CatalogEstimates | None) -> pd.DataFrame:
    """The rows and the estimates' rows under the same columns (the rows alone without estimates)."""
    return estimates.append_rows(rows, found.rows) if found is not None else rows


def decision_rows(
    rows: pd.DataFrame, found: estimates.CatalogEstimates | None, catalog: Catalog | None
) -> pd.DataFrame:
    """The rows a recommendation decides on: the results and the estimates, with what costs need of each row's
    hardware (its catalog GPU, power, rental), worked out once rather than at every decision."""
    return costs.hardware_columns(with_estimates(rows, found), catalog)


class Memo:
    """The steps an advisor worked out, the least recently used dropped past :data:`MEMO_ENTRIES`. The app's
    sessions share one advisor from several threads: the table is changed under a lock; a step two of them ask for
    at once may be worked out twice, never half."""

    def __init__(self) -> None:
        self._values: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple, work: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = work()
        with self._lock:
            self._values[key] = value
            while len(self._values) > MEMO_ENTRIES:
                self._values.popitem(last=False)
        return value


@dataclass(frozen=True, eq=False)
class Advisor:
    """Every answer the advisor gives, from one collection of results (``results``: the results frame of a folder,
    an upload added) and the GPU catalog (None: the profiles alone, no estimates, rentals or board powers).

    The user's choices that change no step's work are fields too: the prices they were offered (``prices``: a
    profile id or a GPU, catalog id or name, to dollars), their ``habits``, whether the catalog's estimates are
    offered beside the results (``include_estimates``) and a network's speed between two machines (``link_gbps``:
    two machines of each GPU are offered too). :meth:`with_choices` gives the same advisor with other choices.
    """

    results: pd.DataFrame
    catalog: Catalog | None = None
    prices: Mapping[str, float] = field(default_factory=dict)
    habits: Habits = field(default_factory=Habits)
    include_estimates: bool = False
    link_gbps: float | None = None
    _memo: Memo = field(default_factory=lambda: Memo(), repr=False)

    def with_choices(self, **choices: Any) -> Advisor:
        """The same results and catalog with other choices (``prices``, ``habits``, ``include_estimates``,
        ``link_gbps``); the steps already worked out are shared."""
        unknown = set(choices) - {"prices", "habits", "include_estimates", "link_gbps"}
        if unknown:
            raise TypeError(f"not a choice: {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **choices, _memo=self._memo)

    # ------------------------------------------------------------------ the steps, each worked out once

    def _kept(self, key: tuple, work: Callable[[], Any]) -> Any:
        return self._memo.get(key, work)

    def workload(self, profile_id: str | None = None, key: tuple | None = None, name: str | None = None) -> tuple:
        """The workload a question is about: ``profile_id``'s, else the one ``name`` names (any case, or the only
        one whose name contains it), else ``key``, else the first of the usual order (the post's)."""
        if name:
            key = analysis.find_workload(self.results, name)
        found = self._profile_workloads().get(profile_id) if profile_id is not None else None
        return found if found is not None else workload_of(self.results, None, key)

    def _profile_workloads(self) -> dict[str, tuple]:
        """Each profile's workload (its first result's), found once: a re-run looks the current one up."""
        return self._kept(("profiles",), lambda: dict(zip(*_first_workloads(self.results), strict=True)))

    def menus(self) -> tuple[pd.Series, pd.Series, pd.Series]:
        """The workloads' names and result counts, and every profile's name, for a page's menus (worked out once:
        grouping 200,000 rows at every re-run took a tenth of it)."""

        def work() -> tuple[pd.Series, pd.Series, pd.Series]:
            names = self.results.groupby("workload")["workload_name"].first()
            return names, self.results["workload"].value_counts(), self.results.groupby("profile")["name"].first()

        return self._kept(("menus",), work)

    def has_profile(self, profile_id: str) -> bool:
        return profile_id in self._profile_workloads()

    def rows(self, workload: tuple) -> WorkloadRows:
        """The workload's results, its profiles' names slowest first and the slowest (the usual baseline)."""
        return self._kept(("rows", workload), lambda: workload_rows(self.results, workload))

    def offered_estimates(self, workload: tuple) -> estimates.CatalogEstimates | None:
        """The catalog's estimates of the workload as offered (one GPU and two; with ``link_gbps``, two machines
        of them), calibrated on every result; None where they are not asked for or cannot be made."""
        if not self.include_estimates or self.catalog is None or self.results.empty:
            return None
        return self._kept(
            ("estimates", workload, self.link_gbps),
            lambda: catalog_estimates(self.results, self.catalog, workload, self.link_gbps),
        )

    def decision_rows(self, workload: tuple) -> pd.DataFrame:
        """The rows a decision on the workload is made on: its results and the estimates offered, with what costs
        need of each row's hardware, and the user's prices."""
        found = self.offered_estimates(workload)
        rows = self._kept(
            ("decision", workload, found is not None, self.link_gbps),
            lambda: decision_rows(self.rows(workload).frame, found, self.catalog),
        )
        return self._priced(rows)

    def _priced(self, rows: pd.DataFrame) -> pd.DataFrame:
        """The rows with the user's prices. A price keyed on a profile of another workload is not for these rows;
        a key that names nothing at all is a one-line error (:func:`~advisor.decision.analysis.apply_prices`)."""
        if not self.prices:
            return rows
        here = set(rows["profile"])
        profiles = self._profile_workloads()
        prices = {key: usd for key, usd in self.prices.items() if key not in profiles or key in here}
        return analysis.apply_prices(rows, prices, self.catalog)

    def _left_out(self, workload: tuple) -> dict[str, int]:
        """What a question on one workload leaves out of the collection: the other workloads and their results."""

        def count() -> dict[str, int]:
            choice = select_workload(self.results, workload)
            return {"left_out_results": choice.left_out, "other_workloads": max(choice.workloads - 1, 0)}

        return self._kept(("left out", workload), count)

    # ------------------------------------------------------------------ the answers

    def compare(
        self, baseline: str | None = None, precision: str = PrecisionFilter.ANY, workload: tuple | None = None
    ) -> analysis.Comparison:
        """Every result of one workload (``baseline``'s, else ``workload``, else the post's) against a baseline
        (default: the slowest float32 result): speedups and dollars per speedup."""
        if self.results.empty or baseline is not None:
            analysis.require_profile(self.results, baseline or "", "profiles to compare")
        chosen = self.workload(baseline, workload)
        rows = self._priced(with_estimates(self.rows(chosen).frame, self.offered_estimates(chosen)))
        comparison = analysis.compare(rows, baseline, precision, chosen)
        return dataclasses.replace(comparison, **self._left_out(chosen))

    def recommend(
        self,
        current: str,
        budget: float | None = None,
        precision: str = PrecisionFilter.ANY,
        current_precision: str | None = None,
        goal: str = Goal.VALUE,
    ) -> analysis.Recommendation:
        """The best option for the goal from the ``current`` profile's result (``current_precision``, default:
        its float32 one), within the budget, renting instead, every option's costs and the upgrade ladder."""
        analysis.require_profile(self.results, current)
        chosen = self.workload(current)
        rec = analysis.recommend(
            self.decision_rows(chosen),
            current,
            budget=budget,
            precision=precision,
            current_precision=current_precision,
            habits=self.habits,
            goal=goal,
            catalog=self.catalog,
            hardware_added=True,
        )
        rec.findings = dataclasses.replace(rec.findings, **self._left_out(chosen))
        return rec

    # ------------------------------------------------------------------ the model's own questions

    def _require_catalog(self, what: str) -> Catalog:
        if self.catalog is None:
            raise AdvisorError(f"{what} needs a GPU catalog (the shipped one, or a catalog file of your own)")
        return self.catalog

    def calibration_samples(self) -> tuple:
        """Every single-GPU result on a catalog GPU, as the performance model calibrates on it (worked out once)."""
        catalog = self._require_catalog("the calibration")
        return self._kept(("samples",), lambda: estimates.calibration_samples(self.results, catalog))

    def calibration(self) -> Any:
        """The performance model calibrated on every result (``calibration.Fit``: its constants and terms)."""
        from advisor.perf import calibration

        return self._kept(("calibration",), lambda: calibration.fit(self.calibration_samples()))

    def workload_names(self) -> dict[str, str]:
        """Each workload's name by its calibration id (what the calibration's terms are keyed by)."""
        names = self.results.groupby("workload")["workload_name"].first()
        return {estimates.workload_id(k): str(n) for k, n in names.items()}

    def cross_validation(self, experiments: tuple[str, ...], families: bool = False, held_out: bool = False) -> Any:
        """The performance model cross-validated (``crossval.Report``): the experiments, the data-parallel scaling
        one system left out, with ``families`` each model family held out in turn, and with ``held_out`` the
        published results no fit sees (``advisor/data/held_out_training.yaml``) on the GPUs no result covers."""
        from advisor.perf import crossval, scaling
        from advisor.store.held_out_results import held_out_frame

        catalog = self._require_catalog("the cross-validation")
        observations = scaling.observations(self.results, catalog)
        held = estimates.calibration_samples(held_out_frame(), catalog) if held_out else ()
        return crossval.report(self.calibration_samples(), experiments, observations, families=families, held=held)

    def unmatched_gpus(self) -> list[str]:
        """The GPU names of measured or quoted results that no catalog GPU matches (compared, not calibrated on)."""
        return estimates.unmatched_gpus(self.results, self._require_catalog("matching GPUs"))

    def estimate(
        self,
        workload: tuple,
        spec: dict[str, Any] | None = None,
        gpu_ids: list[str] | None = None,
        devices: int = 1,
        machines: int = 1,
        link_gbps: float | None = None,
    ) -> estimates.CatalogEstimates:
        """The workload (a key of the results, or any ``spec``: the post's LSTM sized, a model file's) on every
        catalog GPU (or ``gpu_ids``), one GPU and ``devices`` of them, on ``machines`` machines joined at
        ``link_gbps``; measured GPUs included, to check the model against them."""
        self._require_catalog("an estimate")
        request = estimates.EstimateRequest(
            workload,
            spec,
            gpu_ids=tuple(gpu_ids) if gpu_ids is not None else None,
            keep_covered=True,
            devices=tuple(sorted({1, devices})),
            machines=machines,
            link_gbps=link_gbps,
        )
        return estimates.estimate_catalog(self.results, self.catalog, request)

    def machine_estimates(self, workload: tuple, spec: dict[str, Any]) -> list:
        """The workload on the CPU machines measured here (their measured matmul peaks)."""
        return estimates.estimate_machines(self.results, workload, spec)

    def job_advice(self, request: JobRequest) -> llm_advice.JobAdvice:
        """A language-model training job on every catalog GPU (or the request's): fits / tight / does not fit,
        tokens per second, the run's time and cost."""
        self._require_catalog("a language-model job's advice")
        return self._kept(
            ("job", request),
            lambda: llm_advice.advise(
                self.results,
                self.catalog,
                request.job,
                request.checkpointing,
                list(request.gpu_ids) if request.gpu_ids is not None else None,
                request.devices,
                pure_16bit=request.pure_16bit,
                sharded=request.sharded,
            ),
        )

    def job_on_device(self, request: JobRequest, device_name: str | None) -> llm_advice.JobOption | None:
        """The job on the hardware you have (one GPU of the catalog named ``device_name``), None where it is not a
        catalog GPU or the job's GPUs leave it out."""
        gpu = self.catalog.match(device_name) if device_name and self.catalog is not None else None
        if gpu is None:
            return None
        options = self.job_advice(request).options
        return next((o for o in options if o.gpu.id == gpu.id and o.devices == 1), None)

    def job_choice(self, request: JobRequest, goal: str = Goal.VALUE, budget: float | None = None):
        """The GPU to buy (or rent) for a language-model job among those it fits, for the goal within the budget."""
        return llm_advice.choose(self.job_advice(request), goal, budget)
