"""advisor: which GPU upgrade (or rental) pays for your deep-learning training? (Streamlit UI only.)

Run with ``streamlit run streamlit_app.py``. Every number and every decision comes from the ``advisor`` library (the
pipeline, its analysis and estimates); every label, menu and sentence from ``advisor.render.page`` and the other
renderers. This file lays them out: a cached loader, one function per section, a short layout block. Profile text is
always shown as text: escaped in Markdown, plain in tables.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from advisor import store
from advisor.decision import analysis, costs, pipeline
from advisor.decision.pipeline import Advisor
from advisor.errors import AdvisorError
from advisor.format import metrics
from advisor.infer.architecture import model_choices
from advisor.infer.engines import engine_data
from advisor.llm import config as llm_config
from advisor.llm import stack as llm_stack
from advisor.llm.job import JobRequest
from advisor.perf import estimates
from advisor.render import catalog as render_catalog
from advisor.render import charts, page
from advisor.render import compare as render_compare
from advisor.render import tables as render_tables
from advisor.service import client
from advisor.store import results
from advisor.store.catalog import DEFAULT_CATALOG, Catalog, catalog_changed, load_catalog

PROFILES_DIR = Path(os.environ.get("ADVISOR_PROFILES", Path(__file__).parent / "profiles"))
COLLECTION_URL = os.environ.get(client.URL_VARIABLE)  # a collection service's profiles instead, through the cache
CATALOG_FILE = Path(os.environ.get("ADVISOR_CATALOG", DEFAULT_CATALOG))
safe = render_tables.markdown_safe
# A Material icon: an emoji icon loads Streamlit's table of every emoji, 0.15 s at each restart.
st.set_page_config(page_title="advisor: GPU upgrade advisor", page_icon=":material/bolt:", layout="wide")


# --------------------------------------------------------------------------- loading (cached)


@st.cache_resource
def folder_watch(folder: str) -> tuple[store.FolderWatch, store.ProfileCache]:
    """The folder's signature at every re-run (cheap at 100,000 files), and every file's outcome kept by its key."""
    return store.FolderWatch(folder), store.ProfileCache()


@st.cache_resource(show_spinner="Loading profiles...", max_entries=4)  # read-only: no copy per run
def load_folder(folder: str, signature: str) -> tuple[results.LoadedFrame, list[str], int, list[str]]:
    """A folder's results frame (its rows from the index at a restart), problems, bad file count and warnings (its
    inference profiles: ``loaded.generations()``)."""
    loaded = results.load_frame(folder, folder_watch(folder)[1], signature)
    return loaded, [str(p) for p in loaded.problems], len(loaded.rows.bad_files), [str(w) for w in loaded.warnings]


def attempt(load: Callable[[], Any]) -> tuple[Any, str]:
    """What ``load`` gives, or None and the advisor's error that stopped it (the page goes on without it)."""
    try:
        return load(), ""
    except AdvisorError as error:
        return None, str(error)


@st.cache_resource(ttl=600, show_spinner="Fetching the collection...")  # refreshed every ten minutes
def collection_copy(url: str) -> tuple[client.CachedCollection | None, str]:
    """The collection service's profiles as a folder on disk (offline: the last copy), or why there is none."""
    return attempt(lambda: client.cached_collection(client.parse_url(url)))


@st.cache_resource(show_spinner="Loading the GPU catalog...")
def load_gpu_catalog(path: str, mtime: float) -> tuple[Catalog | None, str]:
    """The catalog, or why it cannot be used (the app then works on the profiles alone)."""
    return attempt(lambda: load_catalog(path))


@st.cache_resource(max_entries=4)  # read-only: the collection's pipeline, until the files, upload or catalog change
def collection_advisor(key: tuple, _frame: pd.DataFrame, _catalog: Catalog | None) -> Advisor:
    """The one pipeline over the collection: its steps are worked out once and kept for every re-run."""
    return Advisor(_frame, _catalog)


def widget(where: Any, spec: page.Input, **more: Any) -> Any:
    """One ``page.Input`` as its Streamlit widget in ``where``; ``more``: what only the page knows (disabled)."""
    common = {"key": spec.key, "help": spec.help, **more}
    if spec.kind == "number":
        bounds = {"min_value": spec.least, "max_value": spec.most, "step": spec.step, "format": spec.format}
        return where.number_input(spec.label, value=spec.value, placeholder=spec.placeholder, **bounds, **common)
    if spec.kind in ("select", "radio"):
        chooser = where.selectbox if spec.kind == "select" else where.radio
        extra = {"placeholder": spec.placeholder} if spec.kind == "select" else {}
        return chooser(spec.label, list(spec.options), index=spec.index, format_func=spec.shown, **extra, **common)
    if spec.kind == "multiselect":
        return where.multiselect(spec.label, list(spec.options), format_func=spec.shown, **common)
    if spec.kind in ("toggle", "checkbox"):
        return (where.toggle if spec.kind == "toggle" else where.checkbox)(spec.label, value=spec.value, **common)
    return where.file_uploader(spec.label, type=list(spec.types), **common)


def workload_picker(names: pd.Series, counts: pd.Series, preferred: tuple | None) -> tuple:
    """The workload to compare, asked where there are several; an upload's comes first (its own model)."""
    if len(names) == 1:
        return names.index[0]
    if preferred is not None and st.session_state.get("upload_workload") != preferred:
        st.session_state["upload_workload"] = preferred  # a new upload: its workload is shown (once; then the
        st.session_state["workload"] = preferred  # picker is the user's again)
    return widget(st.sidebar, page.workload_input(names, counts, analysis.order_workloads(counts, preferred)))


def profile_picker(where, label: str, names: pd.Series, key: str, default: str, help_text: str) -> str:
    """A profile of ``names`` (id -> name, in order), with a search where a list cannot show them all."""
    query = ""
    if len(names) > analysis.PICK_LIMIT:
        tip = f"{len(names):,} profiles: type part of a name to narrow the list."
        query = where.text_input(f"Find {label.lower()}", key=f"{key}_search", placeholder="part of a name", help=tip)
    chosen = st.session_state.get(key)
    picks = analysis.pick_list(names, query, keep=chosen if chosen in names.index else default)
    if picks.searchable:
        where.caption(page.pick_caption(picks))
    ids = picks.ids or [default]
    index = ids.index(default) if default in ids else 0
    return where.selectbox(label, ids, index=index, format_func=lambda p: str(names[p]), key=key, help=help_text)


def sidebar(names: pd.Series, slowest: str) -> page.Choices:
    """Your hardware (``names``: the workload's profiles, slowest first), budget, precision, goal and habits."""
    bar = st.sidebar
    help_text = "The hardware you train on today (its float32 result, or its only result)."
    current_id = profile_picker(bar, "Current hardware", names, "current", slowest, help_text)
    inputs = page.sidebar_inputs()
    chosen = {name: widget(bar, spec) for name, spec in inputs.items() if name != "link_gbps"}
    link_gbps = widget(bar, inputs["link_gbps"], disabled=not chosen["estimates"])
    bar.subheader("Your habits and prices")
    habits = costs.Habits(**{spec.key: widget(bar, spec) for spec in page.habit_inputs()})
    precision = page.PRECISION_CHOICES[chosen["precision"]]
    return page.Choices(current_id, chosen["budget"], precision, chosen["estimates"], chosen["goal"], habits, link_gbps)


# --------------------------------------------------------------------------- sections


def problems_section(blocks: list[tuple]) -> None:
    """What is left out or cannot be used (page.problem_blocks), each with its details."""
    for level, line, details, folded in blocks:
        {"warning": st.warning, "error": st.error}[level](line, icon=page.ICONS.get(level))
        with st.expander(folded, expanded=False) if folded else st.container():
            for detail in details:
                st.text(detail)


def headline_section(head: page.Headline) -> None:
    """The page's one answer: its metric, the cells under it, what it says and its captions."""
    st.metric(head.label, safe(head.value), delta=head.delta, border=True)
    if head.cells:
        for column, (label, value, tip) in zip(st.columns(len(head.cells)), head.cells, strict=True):
            column.metric(label, value, border=True, help=tip)
    if head.said:  # Material icons: an emoji loads Streamlit's table of every emoji (0.3 s)
        (st.success if head.free else st.info)(safe(head.said), icon=":material/redeem:" if head.free else None)
    for caption in head.captions:
        st.caption(safe(caption))


def cost_chart_section(rec: analysis.Recommendation) -> None:
    """Cumulative cost against runs: keeping the current hardware, the best purchase, the best rental."""
    lines = costs.cumulative_costs(rec.current, rec.purchase, rec.best_rental, rec.habits, rec.horizon_runs)
    st.vega_lite_chart(spec=charts.cumulative_cost_chart(lines, costs.crossings(lines)), width="stretch")
    st.caption(page.cost_caption(rec))


def options_section(rec: analysis.Recommendation) -> None:
    """Every option, the deciding columns first, a "your price" column to type an offer, the downloads."""
    count = len(rec.option_rows)
    st.subheader("Every option" if count <= page.TABLE_ROWS else f"The {page.TABLE_ROWS} best options")
    shown = rec.option_rows.head(page.TABLE_ROWS)  # in the goal's order: the best first
    table = render_compare.options_display(shown)
    if not st.toggle("More columns", key="more_columns", help=page.MORE_COLUMNS_HELP):
        table = table.drop(columns=list(render_compare.MORE_COLUMNS))
    prices, ids = dict(st.session_state.get("your_prices", {})), list(shown["profile"])
    edits = st.session_state.get("price_edits", 0)
    # text, so that a row without a price is an empty cell (Streamlit draws a missing number as "None")
    table.insert(4, page.YOUR_PRICE, [f"${prices[pid]:,.0f}" if pid in prices else "" for pid in ids])
    config = {
        n: st.column_config.TextColumn(width=w, help=h, validate=v)
        for n, (w, h, v) in page.option_columns(table).items()
    }
    fixed = [c for c in table.columns if c != page.YOUR_PRICE]
    edited = st.data_editor(
        table, width="stretch", hide_index=True, disabled=fixed, column_config=config, key=f"options_table_{edits}"
    )
    changed = page.typed_prices(prices, ids, list(edited[page.YOUR_PRICE]))
    if changed != prices:  # a price typed or cleared: recommend again with it
        st.session_state["your_prices"], st.session_state["price_edits"] = changed, edits + 1
        st.rerun()
    st.caption(page.options_caption(count))
    for column, (label, render, name, kind) in zip(st.columns(2), page.DOWNLOADS, strict=True):
        column.download_button(label, partial(render, rec), name, kind, on_click="ignore")  # made when clicked


def table_expander(title: str, frame: pd.DataFrame | None, columns: list, caption: str = "") -> None:
    """A table behind an expander (the upgrade ladder, what each added device buys), where there is one."""
    if frame is None or frame.empty:
        return
    with st.expander(title, expanded=False):
        st.dataframe(render_tables.table_frame(frame.to_dict("records"), columns), hide_index=True, width="stretch")
        if caption:
            st.caption(caption)


def charts_section(rec: analysis.Recommendation, wframe: pd.DataFrame, precision: str) -> None:
    """One chart at a time (drawing only the one chosen keeps a re-run fast)."""
    st.subheader("At a glance")
    chosen = st.segmented_control(
        "Chart", page.CHARTS, default=page.CHARTS[0], key="chart", label_visibility="collapsed"
    )
    if chosen == "Price vs time":
        kept = analysis.filter_precision(wframe, precision)
        shown = page.price_time_glance(analysis.price_time_points(kept, page.CHART_POINTS), kept)
    else:
        shown = page.glance(chosen, rec.option_rows)  # the best few are joined to their names, not all of them
    glance_section(shown)


def glance_section(shown: page.Glance) -> None:
    """A chart and its caption, or what to say instead of it."""
    if shown.spec is not None:
        st.vega_lite_chart(spec=shown.spec, width="stretch")
    for said, where in ((shown.info, st.info), (shown.caption, st.caption)):
        if said:
            where(said)


def details_section(profile_of: Callable[[str], Any], names: pd.Series, current_id: str) -> None:
    """One profile as its file has it, read only when shown (``profile_of``: its typed tree, or None when gone)."""
    st.subheader("Profile details")
    if names.empty:
        return
    default = current_id if current_id in names.index else names.index[0]
    help_text = "A profile's hardware, software, workload and provenance as its file has them."
    detail = profile_of(profile_picker(st, "Profile", names, "detail", default, help_text))
    if detail is None:
        st.caption("This profile's file changed or is gone since the page loaded: reload the page.")
        return
    for column, (title, values) in zip(st.columns(3), page.detail_sections(detail).items(), strict=True):
        column.markdown(f"**{title}**")
        column.json(values, expanded=True)
    glance_section(page.epoch_glance(detail))


def estimates_section(found: estimates.CatalogEstimates | None, catalog: Catalog) -> None:
    """The catalog's dates, and what the estimates rest on: the method, the fit, the widths, the GPUs left out."""
    st.caption(render_catalog.catalog_dates(catalog))
    if found is None:
        return
    with st.expander("How the estimates are made"):
        for part, shown_as in page.estimates_parts(found):
            {"markdown": st.markdown, "text": st.text, "table": partial(st.dataframe, hide_index=True)}[shown_as](part)


def language_model_section(advisor: Advisor) -> JobRequest | None:
    """A language model to train, by its config: per GPU, fits, speed, cost; the job (None: none)."""
    if advisor.catalog is None:
        return None
    specs = page.job_inputs(llm_config.load_presets(), *llm_stack.load_stacks())
    picked = st.session_state.get("llm_model") or st.session_state.get("llm_config") is not None
    with st.expander(page.JOB_EXPANDER, expanded=bool(picked)):
        v = inputs(specs)
        model, problem = page.job_model(v)
        if problem:
            st.error(safe(problem))
        if model is None:
            st.caption(page.JOB_HINT)
            return None
        try:
            request = page.job_request(model, v, advisor.catalog)
            found = advisor.job_advice(request)  # kept in the cached advisor: a re-run does not work it out again
        except AdvisorError as error:
            st.error(safe(str(error)))
            return None
        answer_section(page.job_answer(found), "llm_table")
        st.button(page.JOB_BACK[0], key="llm_back", on_click=forget_job, help=page.JOB_BACK[1])
    return request


def forget_job() -> None:
    """No language-model job: the page answers for the profiles' workload again."""
    st.session_state["llm_model"] = None
    st.session_state.pop("llm_config", None)


def inference_section(catalog: Catalog | None, generations: list[Any]) -> None:
    """A model to run or serve: per GPU, fits, tokens/s, the cost of a million tokens; users' curves; the timed
    generations (``generations``: inference profiles) beside their estimates."""
    if catalog is None:
        return
    specs = page.inference_inputs(model_choices(), engine_data(), st.session_state.get("run_engine"), catalog)
    with st.expander(page.INFERENCE_EXPANDER, expanded=bool(st.session_state.get("run_model"))):
        v = inputs(specs)
        if v["run_config"] is None and v["run_model"] is None:
            st.caption(page.INFERENCE_HINT)
            return
        try:
            habits = {key: st.session_state[key] for key in ("lifetime_years", "kwh_price") if key in st.session_state}
            answer = page.run_answer(page.inference_job(v, v["run_config"]), catalog, {**habits, **v})
        except AdvisorError as error:
            st.error(safe(str(error)))
            return
        answer_section(answer, "run_table")
        if (measured := page.measured_answer(generations, catalog)) is not None:
            answer_section(measured, "measured_table")


def inputs(specs: dict[str, list[page.Input]]) -> dict[str, Any]:
    """A job's inputs in three columns (``specs``: each column's), their values by key."""
    return {s.key: widget(column, s) for column, part in zip(st.columns(3), specs.values(), strict=True) for s in part}


def answer_section(answer: page.Answer, key: str) -> None:
    """A job's answer: its title, the decision's lines, its table, its chart and what it rests on."""
    if answer.title:
        st.markdown(answer.title)
    for line in answer.lines:
        st.markdown("- " + safe(line))
    st.dataframe(answer.table, hide_index=True, width="stretch", key=key)
    for spec in answer.charts:
        st.vega_lite_chart(spec=spec, width="stretch")
    for caption in answer.captions:
        st.caption(safe(caption))


def definitions_section(warnings: list[str]) -> None:
    with st.expander("What the numbers mean"):
        st.markdown(metrics.markdown_definitions())
    if warnings:
        with st.expander(f"{len(warnings)} warning(s) about unknown fields"):
            for warning in warnings:
                st.text(warning)


def profiles_folder() -> Path:
    """The profiles folder: the collection service's copy where one is set, else the local folder."""
    if not COLLECTION_URL:
        return PROFILES_DIR
    copy, copy_problem = collection_copy(COLLECTION_URL)
    if copy is None:
        st.error(safe(copy_problem))
        st.stop()
    st.caption(safe(page.collection_note(copy)))
    return copy.folder


# --------------------------------------------------------------------------- layout

st.title(page.TITLE)
st.caption(page.INTRO)
profiles_dir = profiles_folder()
folder_key = folder_watch(str(profiles_dir))[0].signature()
loaded, problems, bad_files, warnings = load_folder(str(profiles_dir), folder_key)
catalog, catalog_problem = load_gpu_catalog(str(CATALOG_FILE), catalog_changed(CATALOG_FILE))
st.sidebar.header("Your situation")
upload = widget(st.sidebar, page.upload_input())
taken = set(loaded.frame["profile"])
uploaded = pipeline.read_upload(upload.getvalue(), upload.name, taken) if upload is not None else None
frame, uploaded_workload = pipeline.with_upload(loaded.frame, uploaded)
profile_of = uploaded.lookup(loaded.profile) if uploaded is not None else loaded.profile
problems_section(page.problem_blocks(problems, bad_files, uploaded.problems if uploaded else [], catalog_problem))
upload_key = uploaded.key if uploaded is not None else ""
collection = collection_advisor((folder_key, upload_key, id(catalog)), frame, catalog)
job = language_model_section(collection)  # a language-model job, when one is picked, is the page's question
inference_section(catalog, loaded.generations())
if frame.empty:
    st.info(page.no_profiles(profiles_dir.name))
    st.stop()
workload_names, workload_counts, profile_names = collection.menus()
workload = workload_picker(workload_names, workload_counts, uploaded_workload)
rows = collection.rows(workload)
choices = sidebar(rows.names, rows.slowest)
advisor = collection.with_choices(**choices.advisor_choices(dict(st.session_state.get("your_prices", {}))))
if job is not None:  # one question a page: the job's, with the sidebar's goal, budget and hardware
    mine = advisor.job_on_device(job, rows.device_of(choices.current_id))
    headline_section(page.job_headline(advisor.job_choice(job, choices.goal, choices.budget), mine))
else:
    rec = advisor.recommend(choices.current_id, budget=choices.budget, precision=choices.precision, goal=choices.goal)
    headline_section(page.headline(rec))
    cost_chart_section(rec)
    options_section(rec)
    table_expander(page.LADDER_TITLE, rec.ladder, page.LADDER_COLUMNS, page.LADDER_CAPTION)
    table_expander(page.DEVICES_TITLE, rec.devices, render_compare.DEVICE_COLUMNS)
    charts_section(rec, advisor.decision_rows(workload), choices.precision)
details_section(profile_of, profile_names, choices.current_id)
if catalog is not None:
    estimates_section(advisor.offered_estimates(workload), catalog)
definitions_section(warnings)
