"""One pipeline from a folder's results to the decision, for the command line and the app: the workload's rows and
its profiles in the order to offer them, the catalog's estimates of it, the rows a decision is made on (what costs
need of each row's hardware) and what the catalog's dates say; the prices the user was offered go on with
:func:`~advisor.decision.analysis.apply_prices`.

The commands chain these steps; the app caches each one and lays out what they return. Pure: no I/O, no UI.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

import pandas as pd

from advisor.decision import costs
from advisor.decision.analysis import default_baseline, select_workload
from advisor.perf import estimates
from advisor.store.catalog import Catalog


@dataclass(frozen=True)
class WorkloadRows:
    """A workload's results, its profiles' names in the order to offer them (slowest first) and the slowest (the
    comparison's baseline: the usual current hardware)."""

    frame: pd.DataFrame
    names: pd.Series
    slowest: str


def workload_rows(frame: pd.DataFrame, workload: tuple) -> WorkloadRows:
    """The rows of one workload, with its profiles' names slowest first."""
    rows = select_workload(frame, workload).frame
    order = rows.groupby("profile")["seconds"].max().sort_values(ascending=False, kind="stable").index
    names = rows.groupby("profile")["name"].first()[order]
    return WorkloadRows(rows, names, default_baseline(rows)["profile"])


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
    return estimates.estimate_catalog(frame, catalog, workload, devices=estimates.OFFERED_DEVICES,
                                      machines=2 if link_gbps else 1, link_gbps=link_gbps)  # fmt: skip


def with_estimates(rows: pd.DataFrame, found: estimates.CatalogEstimates | None) -> pd.DataFrame:
    """The rows and the estimates' rows under the same columns (the rows alone without estimates)."""
    return estimates.append_rows(rows, found.rows) if found is not None else rows


def decision_rows(
    rows: pd.DataFrame, found: estimates.CatalogEstimates | None, catalog: Catalog | None
) -> pd.DataFrame:
    """The rows a recommendation decides on: the results and the estimates, with what costs need of each row's
    hardware (its catalog GPU, power, rental), worked out once rather than at every decision."""
    return costs.hardware_columns(with_estimates(rows, found), catalog)


def catalog_dates(catalog: Catalog, today: _dt.date | None = None) -> str:
    """What the catalog's dates say, in a sentence: when its prices were collected and how long ago, and the span of
    its rentals' dates (each price keeps its own)."""
    age = ((today or _dt.date.today()) - _dt.date.fromisoformat(catalog.as_of)).days
    years = sorted({r.date[:4] for gpu in catalog.gpus for r in gpu.rentals if r.date})
    span = f"rentals date from {years[0]}-{years[-1]}" if len(years) > 1 else (
        f"rentals date from {years[0]}" if years else "no rental is listed")  # fmt: skip
    return (f"GPU catalog: {len(catalog.gpus)} GPUs; prices collected {catalog.as_of} ({age:,} days ago). Each price "
            f"keeps its own date: launch prices are as old as the GPU, {span}.")  # fmt: skip
