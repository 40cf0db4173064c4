"""advisor: which GPU upgrade (or rental) pays for your deep-learning training? (Streamlit UI only.)

Run with ``streamlit run streamlit_app.py``. Every number and every decision comes from the
``advisor`` library (analysis, costs, estimates); this file lays them out. Profile text is always
shown as text: escaped in Markdown, plain in tables.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from advisor import store
from advisor.commands.arguments import dollars
from advisor.decision import analysis, costs
from advisor.decision.pipeline import Advisor
from advisor.errors import AdvisorError, ProfileError
from advisor.format import metrics
from advisor.format.formatting import fmt_duration, fmt_seconds, fmt_usd, fmt_usd_small, fmt_watts
from advisor.format.vocabulary import Goal, PrecisionFilter, Source, WorkloadKind
from advisor.infer import architecture as infer_models
from advisor.infer import estimate as infer_estimate
from advisor.infer.engines import engine_data
from advisor.infer.job import make_job
from advisor.llm import config as llm_config
from advisor.llm import stack as llm_stack
from advisor.llm.job import Checkpointing, JobRequest, Method
from advisor.perf import estimates
from advisor.render import basis as render_basis
from advisor.render import catalog as render_catalog
from advisor.render import charts, prose, text_width
from advisor.render import compare as render_compare
from advisor.render import estimate as render_estimate
from advisor.render import inference as render_inference
from advisor.render import jobs as render_jobs
from advisor.render import tables as render_tables
from advisor.service import client
from advisor.store import results
from advisor.store.catalog import DEFAULT_CATALOG, Catalog, load_catalog
from advisor.store.parse import tree_of

PROFILES_DIR = Path(os.environ.get("ADVISOR_PROFILES", Path(__file__).parent / "profiles"))
COLLECTION_URL = os.environ.get(client.URL_VARIABLE)  # a collection service's profiles instead, through the cache
CATALOG_FILE = Path(os.environ.get("ADVISOR_CATALOG", DEFAULT_CATALOG))
CHART_BARS = 25  # bar charts show the best options; the table shows more, the CSV every one
CHART_POINTS = 300  # the price-time chart draws the frontier and the fastest results
TABLE_ROWS = 200  # the options table shows the best in the goal's order (a buyer reads the top); the CSV has every one
PRECISION_CHOICES = {choice.label: choice.value for choice in PrecisionFilter}
YOUR_PRICE = "your price"
DOLLARS_PATTERN = r"^\s*\$?\s*[0-9][0-9,]*(\.[0-9]*)?\s*$"  # what the "your price" column takes: 1500, $1,500
# The options table's columns are as wide as their widest text, head or cell, in the table's font (render.text_width),
# and the editable column's pencil. The columns a buyer decides on fit a 1,400-pixel window beside the sidebar;
# render_compare.MORE_COLUMNS wait behind a toggle.
EDIT_ICON_PX = 18
TABLE_HELP = {
    YOUR_PRICE: "type the price you were offered: the recommendation, the charts and the downloads use it (and say so)",
    "option": "the profile's name, or a catalog GPU nobody measured (source: estimated)",
    "price is": "what the price is and when it was true: a catalog price's kind and date, the profile's, or yours",
    "source": "measured, quoted, or estimated (with a likely range)",
}
# The sidebar's habit inputs: (label, smallest value, step); what each means is costs.HABIT_OPTIONS.
HABIT_INPUTS = {
    "runs_per_week": ("Training runs per week", 0.0, 1.0),
    "hour_value": ("An hour of waiting is worth (USD)", 0.0, 5.0),
    "kwh_price": ("Electricity (USD per kWh)", 0.0, 0.01),
    "lifetime_years": ("Years you keep bought hardware", 0.5, 0.5),
    "resale_usd": ("Your current hardware would sell for (USD)", 0.0, 50.0),
    "session_minutes": ("A rented session's start-up (minutes)", 0.0, 1.0),
    "runs_per_session": ("Runs in one rented session", 1.0, 1.0),
}
GOAL_LABELS = {goal.value: goal.label for goal in Goal}
safe = render_tables.markdown_safe

# A Material icon: an emoji icon loads Streamlit's table of every emoji, 0.15 s at each restart.
st.set_page_config(page_title="advisor: GPU upgrade advisor", page_icon=":material/bolt:", layout="wide")


# --------------------------------------------------------------------------- loading (cached)


@st.cache_resource
def profile_cache() -> store.ProfileCache:
    """Every file's outcome by name, size and modification time: a changed folder re-reads only what changed."""
    return store.ProfileCache()


@st.cache_resource
def folder_watch(folder: str) -> store.FolderWatch:
    """The folder's signature at every re-run, at a cost that stays small at 100,000 files."""
    return store.FolderWatch(folder)


@st.cache_resource(show_spinner="Loading profiles...", max_entries=4)  # read-only: no copy per run
def load_folder(folder: str, signature: str) -> tuple[results.LoadedFrame, list[str], int, list[str]]:
    """A folder's results frame, its profiles on demand, problems, bad file count and warnings; keyed on the files.
    A restart reads the frame's rows from the folder's index and decodes no profile."""
    loaded = results.load_frame(folder, profile_cache(), signature)
    return (
        loaded,
        [str(p) for p in loaded.problems],
        len(loaded.rows.bad_files),
        [str(w) for w in loaded.warnings],
    )


@st.cache_resource(ttl=600, show_spinner="Fetching the collection...")  # refreshed every ten minutes
def collection_copy(url: str) -> tuple[client.CachedCollection | None, str]:
    """The collection service's profiles as a folder on disk (offline: the last copy), or why there is none."""
    try:
        return client.cached_collection(client.parse_url(url)), ""
    except AdvisorError as error:
        return None, str(error)


@st.cache_resource(show_spinner="Loading the GPU catalog...")
def load_gpu_catalog(path: str, mtime: float) -> tuple[Catalog | None, str]:
    """The catalog, or why it cannot be used (the app then works on the profiles alone)."""
    try:
        return load_catalog(path), ""
    except AdvisorError as error:
        return None, str(error)


@st.cache_resource(max_entries=4)  # read-only: the collection's pipeline, until the files, upload or catalog change
def collection_advisor(key: tuple, _frame: pd.DataFrame, _catalog: Catalog | None) -> Advisor:
    """The one pipeline over the collection (the folder's results, an upload added): each workload's rows, the
    catalog's estimates and the rows a decision is made on are worked out once in it and kept for every re-run,
    whatever prices, habits or goal the user picks (:meth:`Advisor.with_choices`)."""
    return Advisor(_frame, _catalog)


def your_prices() -> dict[str, float]:
    """The prices the user typed in the options table, by option (profile id or catalog row)."""
    return dict(st.session_state.get("your_prices", {}))


def read_upload(upload, taken_ids: set[str]) -> tuple[dict | None, list[str]]:
    """Validate an uploaded profile (never saved). Returns its data or the problems."""
    try:
        profile, _ = store.profile_from_bytes(upload.getvalue(), f"upload {upload.name}")
    except ProfileError as error:
        return None, [str(p) for p in error.problems]
    return store.as_upload(profile.data, taken_ids), []


# --------------------------------------------------------------------------- the sidebar


@dataclass(frozen=True)
class Choices:
    """What the user chose in the sidebar."""

    current_id: str
    budget: float | None  # None: no limit
    precision: str
    include_estimates: bool
    goal: str
    habits: costs.Habits
    link_gbps: float | None = None  # a network between two machines: their estimates are offered too


@st.cache_resource(max_entries=16)  # read-only: the workloads and profiles, until the files or the upload change
def frame_menus(key: tuple, _frame: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """The workloads' names and result counts, and every profile's name (grouping 200,000 rows at every re-run
    took a tenth of it)."""
    workloads = _frame.groupby("workload")["workload_name"].first()
    return workloads, _frame["workload"].value_counts(), _frame.groupby("profile")["name"].first()


def workload_picker(names: pd.Series, counts: pd.Series, preferred: tuple | None) -> tuple:
    """The workload to compare (results are compared only within one); asked only when there are several. An
    uploaded profile's workload comes first: its own model, estimated on the catalog."""
    if len(names) == 1:
        return names.index[0]
    kinds = {
        WorkloadKind.LSTM: "LSTM, ",
        WorkloadKind.MODEL: "your model, ",
        WorkloadKind.TRACKED: "your job, tracked, ",
        WorkloadKind.PUBLISHED: "",
    }  # a published name says it
    if preferred is not None and st.session_state.get("upload_workload") != preferred:
        st.session_state["upload_workload"] = preferred  # a new upload: its workload is shown (once; then the
        st.session_state["workload"] = preferred  # picker is the user's again)
    return st.sidebar.selectbox(
        "Workload",
        analysis.order_workloads(counts, preferred),
        format_func=lambda k: f"{names[k]} ({kinds.get(k[0], '')}{counts[k]} results)",
        key="workload",
    )


def profile_picker(where, label: str, names: pd.Series, key: str, default: str, help_text: str) -> str:
    """A profile chosen from ``names`` (id -> name, in order): a list, with a search over the names once there are
    more than a list can show (analysis.pick_list)."""
    query = ""
    if len(names) > analysis.PICK_LIMIT:
        query = where.text_input(
            f"Find {label.lower()}",
            key=f"{key}_search",
            placeholder="part of a name",
            help=f"{len(names):,} profiles: type part of a name to narrow the list.",
        )
    chosen = st.session_state.get(key)
    picks = analysis.pick_list(names, query, keep=chosen if chosen in names.index else default)
    if picks.searchable:
        where.caption(
            f"{min(len(picks.ids), picks.matched):,} of {picks.matched:,} matching profiles listed"
            + (": type more of a name to narrow them." if picks.matched > len(picks.ids) else ".")
        )
    ids = picks.ids or [default]
    return where.selectbox(
        label,
        ids,
        index=ids.index(default) if default in ids else 0,
        format_func=lambda pid: str(names[pid]),
        key=key,
        help=help_text,
    )


def sidebar(names: pd.Series, slowest: str) -> Choices:
    """The user's hardware (``names``: the workload's profiles, slowest first: the usual starting point is the
    hardware that needs an upgrade), budget, precision, habits and goal. The inputs cannot take a negative number."""
    bar = st.sidebar
    current_id = profile_picker(
        bar,
        "Current hardware",
        names,
        "current",
        slowest,
        "The hardware you train on today (its float32 result, or its only result).",
    )
    budget = bar.number_input(
        "Budget (USD)",
        min_value=0.0,
        value=None,
        step=100.0,
        format="%.0f",
        placeholder="no limit",
        key="budget",
        help="The most you will spend on a purchase (empty: no limit). Renting needs none.",
    )
    precision = bar.radio(
        "Precision",
        list(PRECISION_CHOICES),
        index=0,
        key="precision",
        help="float32 only, mixed precision only, or the best of both (mixed precision is a free upgrade).",
    )
    goal = bar.radio(
        "Goal",
        list(GOAL_LABELS),
        format_func=GOAL_LABELS.__getitem__,
        key="goal",
        help="; ".join(f"{GOAL_LABELS[g]}: {text}" for g, text in costs.GOAL_HELP.items()),
    )
    include_estimates = bar.toggle(
        "Include estimates",
        value=True,
        key="estimates",
        help="Add the performance model's estimates for the catalog's GPUs (marked estimated, with a likely range).",
    )
    link_gbps = bar.number_input(
        "Also two machines, linked at (Gb/s)",
        min_value=0.0,
        value=None,
        step=10.0,
        format="%g",
        placeholder="not offered",
        key="link_gbps",
        disabled=not include_estimates,
        help="Offer two machines of each GPU joined by a network of this speed. Estimated: the network's cost comes "
        "from the link's speed (an all-reduce that hides behind the backward pass), and no published result spans "
        "machines to check it.",
    )
    habits = habit_inputs(bar)
    return Choices(current_id, budget, PRECISION_CHOICES[precision], include_estimates, goal, habits, link_gbps or None)


def habit_inputs(bar: Any) -> costs.Habits:
    """The user's habits and prices, each input from its one definition (costs.HABIT_OPTIONS)."""
    defaults = costs.Habits()
    bar.subheader("Your habits and prices")
    values = {
        name: bar.number_input(
            label,
            min_value=minimum,
            value=float(getattr(defaults, name)),
            step=step,
            key=name,
            help=costs.HABIT_OPTIONS[name][1].capitalize() + ".",
        )
        for name, (label, minimum, step) in HABIT_INPUTS.items()
    }
    return costs.Habits(**values)


# --------------------------------------------------------------------------- sections


def problems_section(problems: list[str], bad_files: int, upload_problems: list[str], catalog_problem: str) -> None:
    if problems:
        st.warning(
            f"{bad_files} invalid profile file(s) are left out; the rest work as usual.", icon=":material/warning:"
        )
        with st.expander(f"{len(problems)} problem(s) in the profiles folder", expanded=False):
            for problem in problems:
                st.text(problem)
    if upload_problems:
        st.error("Your uploaded profile cannot be used:")
        for problem in upload_problems:
            st.text(problem)
    if catalog_problem:
        st.warning("The GPU catalog cannot be used (no estimates, rentals or board powers):", icon=":material/warning:")
        st.text(catalog_problem)


def headline(rec: analysis.Recommendation) -> None:
    """One plain answer: the best option for the goal, what it costs, saves and when it pays back; rent or buy."""
    best = rec.best
    if best is None:
        st.metric("Best upgrade", "None within your choices", border=True)
        st.info(safe(prose.reason(rec)))
    else:
        cost = "free" if best["free_upgrade"] else f"{fmt_usd(best['dollars_per_speedup_vs_current'])} per 1x"
        st.metric(
            "Best upgrade",
            safe(prose.describe_result(best)),
            delta=f"{best['speedup_vs_current']:.2f}x faster, {cost}",
            border=True,
        )
        payback = render_compare.fmt_payback(best, weeks_word="weeks")
        time_only = render_compare.payback_counts_time_alone(best)  # the power is unknown: said in the tooltip
        cells = [
            ("Upgrade cost", "free" if best["free_upgrade"] else fmt_usd(best["upgrade_cost_usd"]), None),
            ("Hours saved a week", f"{best['hours_saved_per_week']:,.1f} h", None),
            ("Pays for itself", payback, "Counts the time saved alone: the power is unknown." if time_only else None),
            ("Cost per run", fmt_usd_small(best["usd_per_run"]), None),
        ]
        for column, (label, value, tip) in zip(st.columns(4), cells, strict=True):
            column.metric(label, value, border=True, help=tip)
        free = best["free_upgrade"]  # Material icons: an emoji loads Streamlit's table of every emoji (0.3 s)
        (st.success if free else st.info)(safe(prose.reason(rec)), icon=":material/redeem:" if free else None)
        if best["source"] == Source.ESTIMATED:
            said = render_basis.sentence(best["basis"]) or best["source_detail"]
            st.caption(safe(f"Estimated, not measured: {said}"))
    st.caption("Renting: " + safe(prose.rent_advice(rec)))
    h = rec.habits
    st.caption(
        safe(
            f"With: {h.runs_per_week:g} runs a week, an hour of waiting worth ${h.hour_value:,.0f}, "
            f"${h.kwh_price:.2f} per kWh, hardware kept {h.lifetime_years:g} years (change them in the "
            "sidebar; an hour worth $0 counts the energy alone)."
        )
    )
    current = rec.current
    st.caption(
        safe(
            f"Current: {prose.option_name(current)} ({current['precision']}), {fmt_seconds(current['seconds'])} "
            f"per training run; power {fmt_watts(current['power_watts'])}"
            + (f" ({current['power_source']})." if current["power_source"] != "unknown" else ".")
        )
    )
    for note in prose.notes(rec, other_workloads=False):  # the sidebar's workload picker lists the others
        st.caption("Note: " + safe(note))


def cost_chart_section(rec: analysis.Recommendation) -> None:
    """Cumulative cost against runs: keeping the current hardware, the best purchase, the best rental."""
    habits, horizon = rec.habits, rec.horizon_runs  # the analysis decided what to compare, and over how long
    lines = costs.cumulative_costs(rec.current, rec.purchase, rec.best_rental, habits, horizon)
    st.vega_lite_chart(spec=charts.cumulative_cost_chart(lines, costs.crossings(lines)), width="stretch")
    unknown = (
        ""
        if pd.notna(rec.current["power_watts"])
        else " Your current hardware's power is unknown: its energy counts as $0."
    )
    st.caption(
        f"Over {habits.lifetime_years:g} years at {habits.runs_per_week:g} runs a week ({horizon:,} runs). Each run "
        f"costs its energy plus its waiting time at ${habits.hour_value:,.2f} an hour.{unknown}"
    )


def options_section(rec: analysis.Recommendation) -> pd.DataFrame:
    """Every option, the deciding columns first, and a "your price" column to type the price you were offered;
    the CSV download keeps the numbers."""
    count = len(rec.option_rows)
    st.subheader("Every option" if count <= TABLE_ROWS else f"The {TABLE_ROWS} best options")
    shown = rec.option_rows.head(TABLE_ROWS)  # in the goal's order: the best first
    more = st.toggle(
        "More columns",
        key="more_columns",
        help="Also what each price is (its kind and date) and what renting costs a run.",
    )
    table = render_compare.options_display(shown)
    if not more:
        table = table.drop(columns=list(render_compare.MORE_COLUMNS))
    prices = your_prices()
    ids = list(shown["profile"])
    # text, so that a row without a price is an empty cell (Streamlit draws a missing number as "None")
    table.insert(4, YOUR_PRICE, [f"${prices[pid]:,.0f}" if pid in prices else "" for pid in ids])
    edited = st.data_editor(
        table,
        hide_index=True,
        width="stretch",
        disabled=[c for c in table.columns if c != YOUR_PRICE],
        column_config=options_columns(table),
        key=f"options_table_{st.session_state.get('price_edits', 0)}",
    )
    typed = {
        pid: price
        for pid, text in zip(ids, edited[YOUR_PRICE], strict=True)
        if (price := typed_dollars(text)) is not None
    }
    changed = {**{k: v for k, v in prices.items() if k not in ids}, **typed}
    if changed != prices:  # a price typed or cleared: recommend again with it
        st.session_state["your_prices"] = changed
        st.session_state["price_edits"] = st.session_state.get("price_edits", 0) + 1
        st.rerun()
    more = f" {count - TABLE_ROWS:,} more are in the CSV." if count > TABLE_ROWS else ""
    st.caption(
        "Estimated rows show their likely range beside the time; payback * means the energy saving is "
        f"unknown and left out.{more}"
    )
    downloads(rec)
    return table


def options_columns(table: pd.DataFrame) -> dict[str, Any]:
    """Each column's width and definition; the "your price" column's check of what is typed."""
    return {
        **{
            name: st.column_config.TextColumn(
                width=column_width(name, table[name]), help=metrics.definition(key) if key else TABLE_HELP.get(name)
            )
            for name, key, _ in render_compare.DISPLAY_COLUMNS
            if name in table.columns
        },
        YOUR_PRICE: st.column_config.TextColumn(
            width=column_width(YOUR_PRICE, ["$10,000"], EDIT_ICON_PX),
            validate=DOLLARS_PATTERN,
            help=TABLE_HELP[YOUR_PRICE],
        ),
    }


def downloads(rec: analysis.Recommendation) -> None:
    """The table as CSV and the recommendation as Markdown, made only when a button is clicked."""
    left, right = st.columns(2)
    # The files are made only when a button is clicked (deferred), not on every re-run: so is the whole table.
    left.download_button(
        "Download the table (CSV)",
        partial(render_compare.options_csv, rec),
        "advisor-options.csv",
        "text/csv",
        on_click="ignore",
    )
    right.download_button(
        "Download the recommendation (Markdown)",
        partial(render_compare.recommendation_markdown, rec),
        "advisor-recommendation.md",
        "text/markdown",
        on_click="ignore",
    )


def typed_dollars(text: Any) -> float | None:
    """A price typed in the options table ('1500', '$1,500'), or None for an empty cell or one that is not a sum."""
    if text is None or not str(text).strip():
        return None
    try:
        return dollars(str(text).strip())
    except argparse.ArgumentTypeError:  # the column's pattern refuses it first; never a crash
        return None


def column_width(head: str, cells: Iterable[Any], extra: int = 0) -> int:
    """Pixels for a column of the options table: its widest text whole, head or cell, in the table's font (the
    option column: at most 360, :func:`text_width.option_width`)."""
    if head == "option":
        return text_width.option_width(list(cells))
    return text_width.column_px([head, *(str(cell) for cell in cells)], extra)


def devices_section(rec: analysis.Recommendation) -> None:
    """What each added device or machine buys, where a profile measured several and one device in the same run."""
    if rec.devices is None or rec.devices.empty:
        return
    with st.expander("What each added device or machine buys", expanded=False):
        st.dataframe(
            render_tables.table_frame(rec.devices.to_dict("records"), render_compare.DEVICE_COLUMNS),
            hide_index=True,
            width="stretch",
        )


def ladder_section(rec: analysis.Recommendation) -> None:
    ladder = rec.ladder
    if ladder is None or ladder.empty:
        return
    with st.expander("The upgrade ladder: where returns fall off", expanded=False):
        step = ("step", prose.describe_result)  # the app names options; the CLI, ids
        st.dataframe(
            render_tables.table_frame(ladder.to_dict("records"), [step, *render_compare.LADDER_COLUMNS[1:]]),
            hide_index=True,
            width="stretch",
        )
        st.caption(metrics.definition("marginal_usd_per_hour_saved_per_week"))


CHARTS = ("Speedup", "Price vs time", "Dollars per speedup")


def charts_section(rec: analysis.Recommendation, wframe: pd.DataFrame, precision: str) -> None:
    """One chart at a time (drawing only the one chosen keeps a re-run fast)."""
    options = rec.option_rows  # the best few are joined to their names, not all of them
    st.subheader("At a glance")
    chosen = st.segmented_control("Chart", CHARTS, default=CHARTS[0], key="chart", label_visibility="collapsed")
    if chosen == "Price vs time":
        results = analysis.filter_precision(wframe, precision)
        shown = analysis.price_time_points(results, CHART_POINTS)
        st.vega_lite_chart(spec=charts.price_time_chart(shown), width="stretch")
        priced = int(results["price_usd"].notna().sum())
        note = (
            f" The frontier and the {CHART_POINTS} fastest of {priced:,} results are drawn."
            if len(shown) < priced
            else ""
        )
        st.caption(
            "A result is on the frontier when nothing is both cheaper (or equal) and faster. Unpriced results "
            f"are left out.{note}"
        )
    elif chosen == "Dollars per speedup":
        priced = options.column("dollars_per_speedup_vs_current").dropna()
        if priced.empty:
            st.info("No faster option with a known price.")
        else:
            shown = options.rows(priced.nsmallest(CHART_BARS).index)
            st.vega_lite_chart(spec=charts.dollars_per_speedup_chart(shown), width="stretch")
            if len(shown) < len(priced):
                st.caption(f"The {CHART_BARS} best values of {len(priced)} priced, faster options.")
    elif not len(options):
        st.info("No other results of this workload to compare with.")
    else:
        shown = options.rows(options.column("speedup_vs_current").nlargest(CHART_BARS).index)
        st.vega_lite_chart(spec=charts.speedup_chart(shown), width="stretch")
        if len(shown) < len(options):
            st.caption(f"The {CHART_BARS} fastest of {len(options)} options; the table has them all.")


def upload_first(tree: Any, profile_of: Callable[[str], Any]) -> Callable[[str], Any]:
    """``profile_of`` that answers the uploaded profile's id with its tree (it has no file to read it from)."""
    return lambda profile_id: tree if profile_id == tree.id else profile_of(profile_id)


def details_section(profile_of: Callable[[str], Any], names: pd.Series, current_id: str) -> None:
    """One profile as its file has it, read only when shown (``profile_of``: its typed tree, or None when gone)."""
    st.subheader("Profile details")
    if names.empty:
        return
    detail_id = profile_picker(
        st,
        "Profile",
        names,
        "detail",
        current_id if current_id in names.index else names.index[0],
        "A profile's hardware, software, workload and provenance as its file has them.",
    )
    detail = profile_of(detail_id)
    if detail is None:
        st.caption("This profile's file changed or is gone since the page loaded: reload the page.")
        return

    def shown(section) -> dict:  # a section as its file has it (an absent one: empty)
        return dict(section.raw) if section is not None else {}

    hardware_col, software_col, provenance_col = st.columns(3)
    with hardware_col:
        st.markdown("**Hardware**")
        st.json(
            {"device": shown(detail.device), "host": shown(detail.host), "price": shown(detail.price)}, expanded=True
        )
    with software_col:
        st.markdown("**Software and workload**")
        st.json({"software": shown(detail.software), "workload": shown(detail.workload)}, expanded=True)
    with provenance_col:
        st.markdown("**Provenance**")
        st.json(
            {"id": detail.id, "provenance": shown(detail.provenance), "notes": list(detail.notes or ())}
            if not isinstance(detail.notes, str)
            else {"id": detail.id, "provenance": shown(detail.provenance), "notes": [detail.notes]},
            expanded=True,
        )
    epoch_chart = charts.epoch_times_chart(detail)
    if epoch_chart is not None:
        st.vega_lite_chart(spec=epoch_chart, width="stretch")
    else:
        st.caption("This profile records no per-epoch times (quoted results give only totals).")


def estimates_section(found: estimates.CatalogEstimates | None, catalog: Catalog | None) -> None:
    if catalog is None:
        return
    st.caption(render_catalog.catalog_dates(catalog))
    if found is None:
        return
    with st.expander("How the estimates are made"):
        st.markdown(
            "An estimate predicts the total training time from the GPU's specifications: each step of the run is "
            "bound by **arithmetic** (its FLOPs over the precision's peak), by **memory** traffic (its bytes over "
            "the bandwidth) or by a fixed **per-step** cost, plus a start-up. How much of its peak and bandwidth "
            "each GPU, architecture and workload reaches is fitted on every GPU result the model can describe: the "
            "published benchmarks, the post's and your own runs. Each range is the error measured by "
            "cross-validation for the estimate's situation (a GPU with results or not, a workload with results "
            "on several GPUs, one, or none)."
        )
        st.text(render_estimate.constants_text(found.fit.constants()) + "\n" + render_basis.words(found.calibration()))
        if found.widths.summary:
            st.dataframe(pd.DataFrame(list(found.widths.summary)), hide_index=True)
        if found.not_estimated:
            st.text(
                "\n".join(
                    f"Not estimated: {e.device.name} {e.precision}: {render_basis.words(e.no_peak)}"
                    for e in found.not_estimated
                )
            )


def chosen_model(preset: str | None, config_upload) -> tuple[llm_config.ModelConfig | None, str]:
    """The model picked, or read from an uploaded config.json (never saved): (model, problem)."""
    if config_upload is not None:
        try:
            data = json.loads(config_upload.getvalue().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            return None, f"upload {config_upload.name}: not valid JSON ({error})"
        try:
            return llm_config.config_from_mapping(data, f"upload {config_upload.name}"), ""
        except AdvisorError as error:
            return None, str(error)
    return (llm_config.load_presets()[preset], "") if preset else (None, "")


def language_model_section(advisor: Advisor) -> JobRequest | None:
    """What are you training? A language model by its config: per GPU, does it fit, how fast, what it costs. The
    job it returns (None: none picked) is the page's one question: its headline answers for it."""
    if advisor.catalog is None:
        return None
    presets = llm_config.load_presets()
    picked = st.session_state.get("llm_model") or st.session_state.get("llm_config") is not None
    with st.expander("What are you training? A language model: full fine-tuning, LoRA or QLoRA", expanded=bool(picked)):
        left, middle, right = st.columns(3)
        preset = left.selectbox(
            "Model",
            list(presets),
            index=None,
            key="llm_model",
            placeholder="Pick a model",
            format_func=lambda k: f"{presets[k].name} ({llm_config.size_text(presets[k])})",
        )
        upload = left.file_uploader("or its config.json (read, never saved)", type=["json"], key="llm_config")
        method = middle.selectbox(
            "Method",
            [m.value for m in Method],
            index=1,
            key="llm_method",
            format_func=lambda m: {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA (4-bit base)"}[m],
        )
        seq_len = middle.number_input("Tokens per example (sequence length)", 64, 262_144, 2048, 128, key="llm_seq")
        batch = middle.number_input("Micro-batch (sequences)", 1, 4096, 1, key="llm_batch")
        examples = right.number_input("Examples", 1, 10**9, 10_000, 1000, key="llm_examples")
        epochs = right.number_input("Epochs", 0.1, 1000.0, 1.0, 0.5, key="llm_epochs")
        stack_name, checkpointing, devices, fsdp, options = stack_inputs(left, middle, right)
        model, problem = chosen_model(preset, upload)
        if problem:
            st.error(safe(problem))
        if model is None:
            st.caption("Pick a preset (their numbers come from each model's config.json) or upload your own.")
            return None
        try:
            shape = llm_stack.JobShape(
                model, method, int(seq_len), int(batch), tokens=int(examples) * int(seq_len) * float(epochs)
            )
            request = llm_stack.job_request(
                shape,
                stack_name,
                options,
                checkpointing,
                devices,
                fsdp,
            )
            found = advisor.job_advice(request)  # kept in the cached advisor: a re-run does not work it out again
        except AdvisorError as error:
            st.error(safe(str(error)))
            return None
        language_model_answer(found)
        st.button(
            "Compare the profiles instead",
            key="llm_back",
            on_click=forget_job,
            help="Back to the profiles' workload: the page answers for it again.",
        )
    return request


def stack_inputs(left: Any, middle: Any, right: Any) -> tuple[str, str | None, int, bool, dict[str, str | None]]:
    """The training stack and its choices ("the stack's": None), the GPUs and whether the model is sharded."""
    default_stack, why, stacks = llm_stack.load_stacks()
    stack_name = left.selectbox(
        "Training stack",
        list(stacks),
        index=list(stacks).index(default_stack),
        key="llm_stack",
        format_func=lambda k: stacks[k].title,
        help=f"Its defaults decide the memory (the loss, checkpointing, where the "
        f"optimizer's states live) and, for a tuned FP8 stack (nemo), the speed and "
        f"how the model is split over several GPUs. Default: {why}",
    )
    checkpointing = left.selectbox(
        "Activation checkpointing",
        ["stack", *[c.value for c in Checkpointing]],
        key="llm_ckpt",
        format_func=lambda c: "the stack's" if c == "stack" else c,
        help="auto: on only where the job does not fit without it",
    )
    devices = right.number_input(
        "GPUs",
        1,
        64,
        1,
        key="llm_devices",
        help="Data parallel; a stack with tensor parallelism (nemo) splits the model "
        "over the fewest of them it fits on.",
    )
    fsdp = right.checkbox("Shard the model over them (FSDP / ZeRO-3)", key="llm_fsdp")
    pure_16bit = middle.selectbox(
        "Pure bf16 (no fp32 master copy)",
        ["stack", "on", "off"],
        key="llm_pure_bf16",
        format_func=lambda c: "the stack's" if c == "stack" else c,
        help="Weights, gradients and optimizer state in bf16, as LitGPT's bf16-true.",
    )
    compiled = middle.selectbox(
        "torch.compile",
        ["stack", "on", "off"],
        key="llm_compile",
        format_func=lambda c: "the stack's" if c == "stack" else c,
        help="Compiled kernels keep fewer activations for the backward pass "
        "(torchtune's README measured its memory with it on; its recipes ship it off).",
    )
    options = {
        "pure_bf16": None if pure_16bit == "stack" else pure_16bit,
        "compile": None if compiled == "stack" else compiled,
    }
    return stack_name, None if checkpointing == "stack" else checkpointing, int(devices), fsdp, options


def language_model_answer(found) -> None:
    """The job's answer: what it trains, the library's summary lines, its table per GPU and what it rests on."""
    st.markdown(
        f"**{safe(found.job.describe())}**: "
        + safe(f"{found.job.run_tokens:,.0f} tokens, {render_jobs.weights_text(found.job)}.")
    )
    for line in render_jobs.summary_lines(found):
        st.markdown("- " + safe(line))
    table = pd.DataFrame([{name: render(o) for name, render in render_jobs.job_table(found)} for o in found.options])
    st.dataframe(table, hide_index=True, width="stretch", key="llm_table")
    basis = render_jobs.memory_basis(found.options[0].footprint) if found.options else ""
    st.caption(
        safe(
            "Estimated, not measured: time for the published stacks' mix ("
            + render_basis.LANGUAGE_MODEL_STACKS
            + "). "
            + basis
            + "; time ranges: the cross-validated error of "
            "language-model throughputs in the estimate's situation (advisor/data/llm_crossval.yaml)"
            + render_jobs.fp8_source(found)
            + "."
        )
    )


def forget_job() -> None:
    """No language-model job: the page answers for the profiles' workload again."""
    st.session_state["llm_model"] = None
    st.session_state.pop("llm_config", None)


def job_headline(advisor: Advisor, request: JobRequest, choices: Choices, current_device: str | None) -> None:
    """The page's answer for a language-model job: the GPU for the goal within the budget (the sidebar's), renting
    instead, and whether the hardware you have holds it."""
    choice = advisor.job_choice(request, choices.goal, choices.budget)
    best = choice.best
    if best is None:
        st.metric("Best GPU for this job", "None within your choices", border=True)
    else:
        st.metric(
            "Best GPU for this job",
            best.name,
            border=True,
            delta=f"{best.tokens_per_second:,.0f} tokens/s, {fmt_duration(best.seconds)} a run",
        )
    st.info(safe(" ".join(render_jobs.choice_lines(choice))))
    gpu = advisor.catalog.match(current_device) if current_device and advisor.catalog is not None else None
    mine = next(
        (o for o in advisor.job_advice(request).options if gpu is not None and o.gpu.id == gpu.id and o.devices == 1),
        None,
    )
    if mine is not None:
        st.caption(
            safe(
                f"On the hardware you have ({mine.gpu.name}): {mine.verdict}, {mine.footprint.total_gb:.1f} GB "
                f"(up to {mine.footprint.high_gb:.1f}) of {mine.gpu.value('memory_gb'):g}."
            )
        )
    st.caption("The profiles' workload is another job: 'Compare the profiles instead' above answers for it.")


def inference_section(catalog: Catalog | None) -> None:
    """Running or serving a model: per GPU, does it fit at the context and load, how fast, and what a million output
    tokens cost owned and rented; throughput as users grow on the picked GPUs."""
    if catalog is None:
        return
    choices, engines = infer_models.model_choices(), engine_data()
    with st.expander(
        "Running or serving a model? Memory, tokens/s and the cost of a million tokens per GPU",
        expanded=bool(st.session_state.get("run_model")),
    ):
        left, middle, right = st.columns(3)
        picked = left.selectbox(
            "Model", list(choices), index=None, key="run_model", placeholder="Pick a model", format_func=choices.get
        )
        upload = left.file_uploader("or its config.json (read, never saved)", type=["json"], key="run_config")
        engine = left.selectbox(
            "Engine", list(engines.engines), key="run_engine", format_func=lambda e: engines.engines[e].name
        )
        weights = middle.selectbox("Weights", list(engines.engines[engine].weights), key="run_weights")
        kv = middle.selectbox("Cache", list(engines.engines[engine].kv_cache), key="run_kv")
        devices = middle.number_input("GPUs (tensor parallel)", 1, 64, 1, key="run_devices")
        prompt = right.number_input("Prompt tokens", 1, 1_048_576, 1024, 256, key="run_prompt")
        output = right.number_input("Output tokens", 1, 1_048_576, 256, 64, key="run_output")
        users = right.number_input("Users at once", 1, 4096, 1, key="run_users")
        if upload is None and picked is None:
            st.caption("Pick a model (inference presets carry their sliding windows, latent attention and experts).")
            return
        try:
            model = (
                infer_models.model_from_json_text(upload.getvalue().decode("utf-8", "replace"), f"upload {upload.name}")
                if upload is not None
                else infer_models.resolve_inference_model(picked)
            )
            job = make_job(
                model,
                engine,
                weights,
                kv,
                prompt=int(prompt),
                output=int(output),
                users=int(users),
                devices=int(devices),
            )
        except AdvisorError as error:
            st.error(safe(str(error)))
            return
        rows = infer_estimate.inference_rows(job, catalog)
        for line in render_inference.pick_lines(infer_estimate.picks(rows)):
            st.markdown("- " + safe(line))
        st.dataframe(render_inference.table_frame(rows), hide_index=True, width="stretch", key="run_table")
        fitting = [r for r in rows if r.memory.verdict != "does not fit" and r.speed is not None][:4]
        curves = {r.gpu: infer_estimate.throughput_curve(job, r, catalog) for r in fitting}
        if any(curves.values()):
            st.vega_lite_chart(spec=render_inference.throughput_chart(curves), width="stretch")
        st.caption(safe(render_inference.inference_header(job, infer_estimate.CostInputs()).replace("\n", "; ")))
        for note in render_inference.table_notes(rows):
            st.caption(safe(note))


def definitions_section(warnings: list[str]) -> None:
    with st.expander("What the numbers mean"):
        st.markdown(metrics.markdown_definitions())
    if warnings:
        with st.expander(f"{len(warnings)} warning(s) about unknown fields"):
            for warning in warnings:
                st.text(warning)


# --------------------------------------------------------------------------- layout

st.title("Which upgrade makes your training pay?")
st.caption(
    "Speedups, dollars per speedup and what a run really costs, from real training runs (the post's LSTM(1000), "
    "your own Keras model measured with `python -m advisor measure`, your own training job recorded where it runs "
    "with `advisor.track`, or quoted from a source) and estimates for today's GPUs."
)
profiles_dir = PROFILES_DIR
if COLLECTION_URL:
    copy, copy_problem = collection_copy(COLLECTION_URL)
    if copy is None:
        st.error(safe(copy_problem))
        st.stop()
    profiles_dir = copy.folder
    st.caption(
        safe(
            f"Profiles from the collection at {copy.url}"
            + (f": offline ({copy.offline}), the copy taken {copy.age_text()} ago." if copy.offline else ".")
        )
    )
folder_key = folder_watch(str(profiles_dir)).signature()
loaded, problems, bad_files, warnings = load_folder(str(profiles_dir), folder_key)
frame, profile_of = loaded.frame, loaded.profile
catalog, catalog_problem = load_gpu_catalog(
    str(CATALOG_FILE),
    sum(f.stat().st_mtime for f in (CATALOG_FILE, CATALOG_FILE.parent / "crossval.yaml") if f.exists()),
)
st.sidebar.header("Your situation")
upload = st.sidebar.file_uploader(
    "Your own profile (YAML, compared without being saved)",
    type=["yaml", "yml"],
    key="upload",
    help="Make one with: python -m advisor measure --price-usd 0",
)
upload_problems: list[str] = []
uploaded_workload = None
if upload is not None:
    uploaded, upload_problems = read_upload(upload, set(frame["profile"]))
    if uploaded is not None:
        profile_of = upload_first(tree_of(uploaded), profile_of)
        added = results.results_frame([uploaded])
        uploaded_workload = added["workload"].iloc[0]
        frame = pd.concat([frame, added], ignore_index=True)
problems_section(problems, bad_files, upload_problems, catalog_problem)
upload_key = hashlib.sha256(upload.getvalue()).hexdigest() if upload is not None else ""
collection = collection_advisor((folder_key, upload_key, id(catalog)), frame, catalog)
job = language_model_section(collection)  # a language-model job, when one is picked, is the page's question
inference_section(catalog)
if frame.empty:
    st.info(
        "No profiles yet. Measure this machine with `python -m advisor measure --price-usd 0` and put the "
        f"YAML file it writes into `{profiles_dir.name}/`, or upload a profile in the sidebar."
    )
    st.stop()

workload_names, workload_counts, profile_names = frame_menus((folder_key, upload_key), frame)
workload = workload_picker(workload_names, workload_counts, uploaded_workload)
rows = collection.rows(workload)
choices = sidebar(rows.names, rows.slowest)
advisor = collection.with_choices(
    prices=your_prices(),
    habits=choices.habits,
    link_gbps=choices.link_gbps,
    include_estimates=choices.include_estimates,
)
found = advisor.offered_estimates(workload)
if job is not None:  # one question a page: the job's, with the sidebar's goal, budget and hardware
    current_device = rows.frame.loc[rows.frame["profile"] == choices.current_id, "device_name"]
    job_headline(advisor, job, choices, str(current_device.iloc[0]) if len(current_device) else None)
else:
    wframe = advisor.decision_rows(workload)
    rec = advisor.recommend(choices.current_id, budget=choices.budget, precision=choices.precision, goal=choices.goal)
    headline(rec)
    cost_chart_section(rec)
    options_section(rec)
    ladder_section(rec)
    devices_section(rec)
    charts_section(rec, wframe, choices.precision)
details_section(profile_of, profile_names, choices.current_id)
estimates_section(found, catalog)
definitions_section(warnings)
