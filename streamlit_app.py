"""advisor: which GPU upgrade (or rental) pays for your deep-learning training? (Streamlit UI only.)

Run with ``streamlit run streamlit_app.py``. Every number and every decision comes from the ``advisor`` library (the
pipeline, its analysis and estimates); every label, menu and sentence from ``advisor.render.page`` and the other
renderers. This file lays them out: a cached loader, one function per section, a short layout block. Profile text is
always shown as text: escaped in Markdown, plain in tables.
"""

from __future__ import annotations

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
from advisor.decision import analysis, costs, pipeline
from advisor.decision.pipeline import Advisor
from advisor.errors import AdvisorError
from advisor.format import metrics
from advisor.format.formatting import read_number
from advisor.infer import architecture as infer_models
from advisor.infer import estimate as infer_estimate
from advisor.infer.engines import engine_data
from advisor.infer.job import make_job
from advisor.llm import config as llm_config
from advisor.llm import stack as llm_stack
from advisor.llm.job import JobRequest
from advisor.perf import estimates
from advisor.render import basis as render_basis
from advisor.render import catalog as render_catalog
from advisor.render import charts, page, text_width
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
    return loaded, [str(p) for p in loaded.problems], len(loaded.rows.bad_files), [str(w) for w in loaded.warnings]


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
    """The one pipeline over the collection (the folder's results, an upload added): its steps are worked out once
    and kept for every re-run, whatever prices, habits or goal the user picks (:meth:`Advisor.with_choices`)."""
    return Advisor(_frame, _catalog)


@st.cache_resource(max_entries=16)  # read-only: the workloads and profiles, until the files or the upload change
def frame_menus(key: tuple, _frame: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """The workloads' names and result counts, and every profile's name (grouping 200,000 rows at every re-run
    took a tenth of it)."""
    workloads = _frame.groupby("workload")["workload_name"].first()
    return workloads, _frame["workload"].value_counts(), _frame.groupby("profile")["name"].first()


def your_prices() -> dict[str, float]:
    """The prices the user typed in the options table, by option (profile id or catalog row)."""
    return dict(st.session_state.get("your_prices", {}))


# --------------------------------------------------------------------------- inputs


def widget(where: Any, spec: page.Input, **more: Any) -> Any:
    """One input of the page (``page.Input``) as its Streamlit widget, in ``where`` (the page, the sidebar, a
    column); ``more``: what only the page knows (``disabled``)."""
    common = {"key": spec.key, "help": spec.help, **more}
    if spec.kind == "number":
        bounds = {"min_value": spec.least, "max_value": spec.most, "step": spec.step, "format": spec.format}
        return where.number_input(spec.label, value=spec.value, placeholder=spec.placeholder, **bounds, **common)
    if spec.kind in ("select", "radio"):
        chooser = where.selectbox if spec.kind == "select" else where.radio
        extra = {"placeholder": spec.placeholder} if spec.kind == "select" else {}
        return chooser(spec.label, list(spec.options), index=spec.index, format_func=spec.shown, **extra, **common)
    if spec.kind in ("toggle", "checkbox"):
        return (where.toggle if spec.kind == "toggle" else where.checkbox)(spec.label, value=spec.value, **common)
    return where.file_uploader(spec.label, type=list(spec.types), **common)


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


def workload_picker(names: pd.Series, counts: pd.Series, preferred: tuple | None) -> tuple:
    """The workload to compare (results are compared only within one); asked only when there are several. An
    uploaded profile's workload comes first: its own model, estimated on the catalog."""
    if len(names) == 1:
        return names.index[0]
    if preferred is not None and st.session_state.get("upload_workload") != preferred:
        st.session_state["upload_workload"] = preferred  # a new upload: its workload is shown (once; then the
        st.session_state["workload"] = preferred  # picker is the user's again)
    return widget(st.sidebar, page.workload_input(names, counts, analysis.order_workloads(counts, preferred)))


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
        more = ": type more of a name to narrow them." if picks.matched > len(picks.ids) else "."
        where.caption(f"{min(len(picks.ids), picks.matched):,} of {picks.matched:,} matching profiles listed{more}")
    ids = picks.ids or [default]
    index = ids.index(default) if default in ids else 0
    return where.selectbox(label, ids, index=index, format_func=lambda p: str(names[p]), key=key, help=help_text)


def sidebar(names: pd.Series, slowest: str) -> Choices:
    """The user's hardware (``names``: the workload's profiles, slowest first: the usual starting point is the
    hardware that needs an upgrade), budget, precision, goal and habits."""
    bar = st.sidebar
    help_text = "The hardware you train on today (its float32 result, or its only result)."
    current_id = profile_picker(bar, "Current hardware", names, "current", slowest, help_text)
    inputs = page.sidebar_inputs()
    chosen = {name: widget(bar, spec) for name, spec in inputs.items() if name != "link_gbps"}
    link_gbps = widget(bar, inputs["link_gbps"], disabled=not chosen["estimates"])
    bar.subheader("Your habits and prices")
    habits = costs.Habits(**{spec.key: widget(bar, spec) for spec in page.habit_inputs()})
    precision = page.PRECISION_CHOICES[chosen["precision"]]
    return Choices(
        current_id, chosen["budget"], precision, chosen["estimates"], chosen["goal"], habits, link_gbps or None
    )


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
    """Every option, the deciding columns first, and a "your price" column to type the price you were offered;
    the CSV download keeps the numbers."""
    count = len(rec.option_rows)
    st.subheader("Every option" if count <= page.TABLE_ROWS else f"The {page.TABLE_ROWS} best options")
    shown = rec.option_rows.head(page.TABLE_ROWS)  # in the goal's order: the best first
    more = st.toggle(
        "More columns",
        key="more_columns",
        help="Also what each price is (its kind and date) and what renting costs a run.",
    )
    table = render_compare.options_display(shown)
    if not more:
        table = table.drop(columns=list(render_compare.MORE_COLUMNS))
    prices, ids = your_prices(), list(shown["profile"])
    # text, so that a row without a price is an empty cell (Streamlit draws a missing number as "None")
    table.insert(4, page.YOUR_PRICE, [f"${prices[pid]:,.0f}" if pid in prices else "" for pid in ids])
    edits = st.session_state.get("price_edits", 0)
    disabled = [c for c in table.columns if c != page.YOUR_PRICE]
    config = options_columns(table)
    edited = st.data_editor(
        table, hide_index=True, width="stretch", disabled=disabled, column_config=config, key=f"options_table_{edits}"
    )
    typed = {
        pid: price
        for pid, text in zip(ids, edited[page.YOUR_PRICE], strict=True)
        if (price := read_number(text or "x")) is not None
    }
    changed = {**{k: v for k, v in prices.items() if k not in ids}, **typed}
    if changed != prices:  # a price typed or cleared: recommend again with it
        st.session_state["your_prices"], st.session_state["price_edits"] = changed, edits + 1
        st.rerun()
    st.caption(page.options_caption(count))
    left, right = st.columns(2)  # the files are made only when a button is clicked, not at every re-run
    left.download_button(
        "Download the table (CSV)",
        partial(render_compare.options_csv, rec),
        "advisor-options.csv",
        "text/csv",
        on_click="ignore",
    )
    markdown = partial(render_compare.recommendation_markdown, rec)
    right.download_button(
        "Download the recommendation (Markdown)",
        markdown,
        "advisor-recommendation.md",
        "text/markdown",
        on_click="ignore",
    )


def options_columns(table: pd.DataFrame) -> dict[str, Any]:
    """Each column's width and definition; the "your price" column's check of what is typed."""
    columns = {
        name: st.column_config.TextColumn(
            width=column_width(name, table[name]), help=metrics.definition(key) if key else page.TABLE_HELP.get(name)
        )
        for name, key, _ in render_compare.DISPLAY_COLUMNS
        if name in table.columns
    }
    width = column_width(page.YOUR_PRICE, ["$10,000"], page.EDIT_ICON_PX)
    price = st.column_config.TextColumn(
        width=width, validate=page.DOLLARS_PATTERN, help=page.TABLE_HELP[page.YOUR_PRICE]
    )
    return {**columns, page.YOUR_PRICE: price}


def column_width(head: str, cells: Iterable[Any], extra: int = 0) -> int:
    """Pixels for a column of the options table: its widest text whole, head or cell, in the table's font."""
    if head == "option":
        return text_width.option_width(list(cells))
    return text_width.column_px([head, *(str(cell) for cell in cells)], extra)


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
    options = rec.option_rows  # the best few are joined to their names, not all of them
    st.subheader("At a glance")
    chosen = st.segmented_control(
        "Chart", page.CHARTS, default=page.CHARTS[0], key="chart", label_visibility="collapsed"
    )
    if chosen == "Price vs time":
        results_kept = analysis.filter_precision(wframe, precision)
        shown = analysis.price_time_points(results_kept, page.CHART_POINTS)
        st.vega_lite_chart(spec=charts.price_time_chart(shown), width="stretch")
        st.caption(page.price_time_caption(len(shown), int(results_kept["price_usd"].notna().sum())))
    elif chosen == "Dollars per speedup":
        priced = options.column("dollars_per_speedup_vs_current").dropna()
        if priced.empty:
            st.info("No faster option with a known price.")
            return
        shown = options.rows(priced.nsmallest(page.CHART_BARS).index)
        st.vega_lite_chart(spec=charts.dollars_per_speedup_chart(shown), width="stretch")
        if len(shown) < len(priced):
            st.caption(f"The {page.CHART_BARS} best values of {len(priced)} priced, faster options.")
    elif not len(options):
        st.info("No other results of this workload to compare with.")
    else:
        shown = options.rows(options.column("speedup_vs_current").nlargest(page.CHART_BARS).index)
        st.vega_lite_chart(spec=charts.speedup_chart(shown), width="stretch")
        if len(shown) < len(options):
            st.caption(f"The {page.CHART_BARS} fastest of {len(options)} options; the table has them all.")


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

    def shown(section) -> dict:  # a section as its file has it (an absent one: empty)
        return dict(section.raw) if section is not None else {}

    notes = [detail.notes] if isinstance(detail.notes, str) else list(detail.notes or ())
    sections = {
        "Hardware": {"device": shown(detail.device), "host": shown(detail.host), "price": shown(detail.price)},
        "Software and workload": {"software": shown(detail.software), "workload": shown(detail.workload)},
        "Provenance": {"id": detail.id, "provenance": shown(detail.provenance), "notes": notes},
    }
    for column, (title, values) in zip(st.columns(3), sections.items(), strict=True):
        column.markdown(f"**{title}**")
        column.json(values, expanded=True)
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
        st.markdown(page.HOW_ESTIMATES_ARE_MADE)
        st.text(render_estimate.constants_text(found.fit.constants()) + "\n" + render_basis.words(found.calibration()))
        if found.widths.summary:
            st.dataframe(pd.DataFrame(list(found.widths.summary)), hide_index=True)
        if found.not_estimated:
            said = [
                f"Not estimated: {e.device.name} {e.precision}: {render_basis.words(e.no_peak)}"
                for e in found.not_estimated
            ]
            st.text("\n".join(said))


def chosen_model(preset: str | None, config_upload) -> tuple[llm_config.ModelConfig | None, str]:
    """The model picked, or read from an uploaded config.json (never saved): (model, problem)."""
    if config_upload is None:
        return (llm_config.load_presets()[preset], "") if preset else (None, "")
    try:
        data = json.loads(config_upload.getvalue().decode("utf-8"))
        return llm_config.config_from_mapping(data, f"upload {config_upload.name}"), ""
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return None, f"upload {config_upload.name}: not valid JSON ({error})"
    except AdvisorError as error:
        return None, str(error)


def language_model_section(advisor: Advisor) -> JobRequest | None:
    """What are you training? A language model by its config: per GPU, does it fit, how fast, what it costs. The
    job it returns (None: none picked) is the page's one question: its headline answers for it."""
    if advisor.catalog is None:
        return None
    presets = llm_config.load_presets()
    default_stack, why, stacks = llm_stack.load_stacks()
    specs = page.job_inputs(
        presets, {k: llm_config.size_text(m) for k, m in presets.items()}, stacks, default_stack, why
    )
    picked = st.session_state.get("llm_model") or st.session_state.get("llm_config") is not None
    with st.expander(page.JOB_EXPANDER, expanded=bool(picked)):
        v = {s.key: widget(column, s) for column, part in zip(st.columns(3), specs.values(), strict=True) for s in part}
        model, problem = chosen_model(v["llm_model"], v["llm_config"])
        if problem:
            st.error(safe(problem))
        if model is None:
            st.caption(page.JOB_HINT)
            return None
        try:
            tokens = int(v["llm_examples"]) * int(v["llm_seq"]) * float(v["llm_epochs"])
            shape = llm_stack.JobShape(model, v["llm_method"], int(v["llm_seq"]), int(v["llm_batch"]), tokens=tokens)
            options = {
                "pure_bf16": page.stack_choice(v["llm_pure_bf16"]),
                "compile": page.stack_choice(v["llm_compile"]),
            }
            ckpt, devices = page.stack_choice(v["llm_ckpt"]), int(v["llm_devices"])
            request = llm_stack.job_request(shape, v["llm_stack"], options, ckpt, devices, v["llm_fsdp"])
            found = advisor.job_advice(request)  # kept in the cached advisor: a re-run does not work it out again
        except AdvisorError as error:
            st.error(safe(str(error)))
            return None
        st.markdown(page.job_title(found))
        for line in render_jobs.summary_lines(found):
            st.markdown("- " + safe(line))
        table = pd.DataFrame(
            [{name: render(o) for name, render in render_jobs.job_table(found)} for o in found.options]
        )
        st.dataframe(table, hide_index=True, width="stretch", key="llm_table")
        st.caption(safe(page.job_caption(found)))
        st.button(page.JOB_BACK[0], key="llm_back", on_click=forget_job, help=page.JOB_BACK[1])
    return request


def forget_job() -> None:
    """No language-model job: the page answers for the profiles' workload again."""
    st.session_state["llm_model"] = None
    st.session_state.pop("llm_config", None)


def inference_section(catalog: Catalog | None) -> None:
    """Running or serving a model: per GPU, does it fit at the context and load, how fast, and what a million output
    tokens cost owned and rented; throughput as users grow on the picked GPUs."""
    if catalog is None:
        return
    choices, engines = infer_models.model_choices(), engine_data()
    title = "Running or serving a model? Memory, tokens/s and the cost of a million tokens per GPU"
    with st.expander(title, expanded=bool(st.session_state.get("run_model"))):
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
            text = upload.getvalue().decode("utf-8", "replace") if upload is not None else None
            model = (
                infer_models.model_from_json_text(text, f"upload {upload.name}")
                if upload
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


def profiles_folder() -> Path:
    """The profiles folder: the collection service's copy where one is set, else the local folder."""
    if not COLLECTION_URL:
        return PROFILES_DIR
    copy, copy_problem = collection_copy(COLLECTION_URL)
    if copy is None:
        st.error(safe(copy_problem))
        st.stop()
    offline = f": offline ({copy.offline}), the copy taken {copy.age_text()} ago." if copy.offline else "."
    st.caption(safe(f"Profiles from the collection at {copy.url}{offline}"))
    return copy.folder


# --------------------------------------------------------------------------- layout

st.title(page.TITLE)
st.caption(page.INTRO)
profiles_dir = profiles_folder()
folder_key = folder_watch(str(profiles_dir)).signature()
loaded, problems, bad_files, warnings = load_folder(str(profiles_dir), folder_key)
catalog_files = (CATALOG_FILE, CATALOG_FILE.parent / "crossval.yaml")
catalog, catalog_problem = load_gpu_catalog(
    str(CATALOG_FILE), sum(f.stat().st_mtime for f in catalog_files if f.exists())
)
st.sidebar.header("Your situation")
upload = widget(st.sidebar, page.upload_input())
taken = set(loaded.frame["profile"])
uploaded = pipeline.read_upload(upload.getvalue(), upload.name, taken) if upload is not None else None
frame, uploaded_workload = pipeline.with_upload(loaded.frame, uploaded)
profile_of = loaded.profile
if uploaded is not None and uploaded.data is not None:  # its tree answers its id: it has no file to read it from
    profile_of = (lambda tree, rest: lambda pid: tree if pid == tree.id else rest(pid))(
        tree_of(uploaded.data), loaded.profile
    )
problems_section(problems, bad_files, uploaded.problems if uploaded else [], catalog_problem)
upload_key = hashlib.sha256(upload.getvalue()).hexdigest() if upload is not None else ""
collection = collection_advisor((folder_key, upload_key, id(catalog)), frame, catalog)
job = language_model_section(collection)  # a language-model job, when one is picked, is the page's question
inference_section(catalog)
if frame.empty:
    st.info(page.no_profiles(profiles_dir.name))
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
if job is not None:  # one question a page: the job's, with the sidebar's goal, budget and hardware
    current_device = rows.frame.loc[rows.frame["profile"] == choices.current_id, "device_name"]
    mine = advisor.job_on_device(job, str(current_device.iloc[0]) if len(current_device) else None)
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
estimates_section(advisor.offered_estimates(workload), catalog)
definitions_section(warnings)
