"""advisor: which GPU upgrade pays for your deep-learning training? (Streamlit UI only.)

Run with ``streamlit run streamlit_app.py``. The numbers come from ``advisor.analysis``; this file
only lays them out. Profile text is always shown as text: escaped in Markdown, plain in tables.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

from advisor import analysis, charts, report, store
from advisor.errors import ProfileError

PROFILES_DIR = Path(os.environ.get("ADVISOR_PROFILES", Path(__file__).parent / "profiles"))
CHART_BARS = 25  # bar charts show the best options; the table shows every one
PRECISION_CHOICES = {"Best of both": "any", "float32": "float32", "mixed": "mixed"}
safe = report.markdown_safe

st.set_page_config(page_title="advisor: GPU upgrade advisor", page_icon="⚡", layout="wide")


@st.cache_resource
def profile_cache() -> store.ProfileCache:
    """Every file's outcome by name, size and modification time: a changed folder re-reads only what changed."""
    return store.ProfileCache()


@st.cache_resource(show_spinner="Loading profiles...", max_entries=4)  # read-only: no copy per run
def load_folder(folder: str, signature: tuple) -> tuple[pd.DataFrame, list[dict], list[str], int, list[str]]:
    """Profiles of a folder: (results frame, profile dicts, problems, bad file count, warnings); keyed on the files."""
    loaded = store.load_profiles(folder, profile_cache())
    return (
        analysis.results_frame(loaded.profiles),
        [p.data for p in loaded.profiles],
        [str(p) for p in loaded.problems],
        len(loaded.bad_files),
        [str(w) for w in loaded.warnings],
    )


def read_upload(upload, taken_ids: set[str]) -> tuple[dict | None, list[str]]:
    """Validate an uploaded profile (never saved). Returns its data or the problems."""
    raw = upload.getvalue()
    try:
        profile, _ = store.profile_from_bytes(raw, f"upload {upload.name}")
    except ProfileError as error:
        return None, [str(p) for p in error.problems]
    data = dict(profile.data)
    if data["id"] in taken_ids:
        data["id"] = f"{data['id']}-upload"[:80]
    data["name"] = f"{data.get('name', data['device']['name'])} (uploaded)"
    return data, []


st.title("Which upgrade makes your training pay?")
st.caption(
    "Speedups and dollars per speedup of real training runs: an LSTM(1000) trained with Keras, "
    "measured with `python -m advisor measure` or quoted from a source."
)

frame, profile_data, problems, bad_files, warnings = load_folder(
    str(PROFILES_DIR), store.folder_signature(PROFILES_DIR)
)

with st.sidebar:
    st.header("Your situation")
    upload = st.file_uploader(
        "Your own profile (YAML, compared without being saved)",
        type=["yaml", "yml"],
        key="upload",
        help="Make one with: python -m advisor measure --price-usd 0",
    )
upload_problems: list[str] = []
if upload is not None:
    uploaded, upload_problems = read_upload(upload, set(frame["profile"]))
    if uploaded is not None:
        profile_data = [*profile_data, uploaded]
        frame = pd.concat([frame, analysis.results_frame([uploaded])], ignore_index=True)

if problems:
    st.warning(f"{bad_files} invalid profile file(s) are left out; the rest work as usual.", icon="⚠️")
    with st.expander(f"{len(problems)} problem(s) in the profiles folder", expanded=False):
        for problem in problems:
            st.text(problem)
if upload_problems:
    st.error("Your uploaded profile cannot be used:")
    for problem in upload_problems:
        st.text(problem)

if frame.empty:
    st.info(
        "No profiles yet. Measure this machine with `python -m advisor measure --price-usd 0` and put the "
        f"YAML file it writes into `{PROFILES_DIR.name}/`, or upload a profile in the sidebar."
    )
    st.stop()

# The workload: results are compared only within one.
workloads = frame.groupby("workload")["workload_name"].first()
counts = frame["workload"].value_counts()
with st.sidebar:
    if len(workloads) > 1:
        keys = sorted(workloads.index, key=lambda k: -counts[k])
        workload = st.selectbox(
            "Workload", keys, format_func=lambda k: f"{workloads[k]} ({counts[k]} results)", key="workload"
        )
    else:
        workload = workloads.index[0]
wframe = analysis.select_workload(frame, workload).frame
names = wframe.groupby("profile")["name"].first()
slowest = analysis.compare(wframe).baseline["profile"]

with st.sidebar:
    # Slowest first: the usual starting point is the hardware that needs an upgrade.
    profile_ids = list(wframe.groupby("profile")["seconds"].max().sort_values(ascending=False).index)
    current_id = st.selectbox(
        "Current hardware",
        profile_ids,
        index=profile_ids.index(slowest),
        format_func=lambda pid: str(names[pid]),
        key="current",
        help="The hardware you train on today (its float32 result, or its only result).",
    )
    max_price = float(wframe["price_usd"].max(skipna=True)) if wframe["price_usd"].notna().any() else 0.0
    budget = st.number_input(
        "Budget (USD)",
        min_value=0.0,
        value=max_price,
        step=100.0,
        format="%.0f",
        key="budget",
        help="The most you will spend. By default it covers every option.",
    )
    precision_label = st.radio(
        "Precision",
        list(PRECISION_CHOICES),
        index=0,
        key="precision",
        help="float32 only, mixed precision only, or the best of both (mixed precision is a free upgrade).",
    )
    runs_per_week = st.number_input(
        "Training runs per week",
        min_value=0.0,
        value=10.0,
        step=1.0,
        key="runs_per_week",
        help="How often you train this job: turns speedups into hours saved.",
    )

current_rows = wframe[wframe["profile"] == current_id]
current_precision = "float32" if (current_rows["precision"] == "float32").any() else current_rows["precision"].iloc[0]
rec = analysis.recommend(
    wframe, current_id, budget=budget, precision=PRECISION_CHOICES[precision_label], current_precision=current_precision
)
options = rec.options.copy()
options["hours_saved_per_week"] = analysis.hours_saved_per_week(options, rec.current, runs_per_week)

# ---- headline
free = options[options["free_upgrade"] & options["faster"]]
if rec.best is not None:
    best = rec.best
    st.metric(
        "Best upgrade",
        safe(analysis.describe_result(best)),
        delta=f"{best['speedup_vs_current']:.2f}x faster, "
        + ("free" if best["free_upgrade"] else f"{report.fmt_usd(best['dollars_per_speedup_vs_current'])} per 1x"),
        border=True,
    )
else:
    st.metric("Best upgrade", "None within your choices", border=True)
if rec.best is not None and bool(rec.best["free_upgrade"]):
    st.success(safe(rec.reason), icon="🎁")
else:
    st.info(safe(rec.reason))
    if not free.empty:
        top = free.sort_values("seconds").iloc[0]
        st.success(
            safe(
                f"Free upgrade first: {top['precision']} on the hardware you have is "
                f"{top['speedup_vs_current']:.2f}x faster for $0."
            ),
            icon="🎁",
        )
st.caption(
    safe(
        f"Current: {rec.current['name']} ({rec.current['precision']}), "
        f"{report.fmt_seconds(rec.current['seconds'])} per training run."
    )
)
for note in rec.notes:
    st.caption("Note: " + safe(note))

# ---- the table
st.subheader("Every option")
table = pd.DataFrame(
    {
        "profile": options["profile"],
        "option": options["name"],
        "device": options["device"],
        "precision": options["precision"],
        "speedup": options["speedup_vs_current"],
        "seconds": options["seconds"],
        "price (USD)": options["price_usd"],
        "upgrade cost (USD)": options["upgrade_cost_usd"],
        "$ per 1x speedup": options["dollars_per_speedup_vs_current"],
        "$ per added run/h": options["dollars_per_added_run_per_hour"],
        "hours saved / week": options["hours_saved_per_week"],
        "source": options["source"],
        "source detail": options["source_detail"].astype(str)
        + options["approximate"].map({True: " (approximate)", False: ""}),
    }
)
st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    column_config={
        "speedup": st.column_config.NumberColumn(format="%.2fx"),
        "seconds": st.column_config.NumberColumn(format="%.1f s"),
        "price (USD)": st.column_config.NumberColumn(format="$%.0f"),
        "upgrade cost (USD)": st.column_config.NumberColumn(format="$%.0f"),
        "$ per 1x speedup": st.column_config.NumberColumn(format="$%.2f"),
        "$ per added run/h": st.column_config.NumberColumn(format="$%.2f"),
        "hours saved / week": st.column_config.NumberColumn(format="%.2f h"),
    },
    key="options_table",
)
download_left, download_right = st.columns(2)
# The files are made only when a button is clicked (deferred), not on every re-run.
download_left.download_button(
    "Download the table (CSV)",
    partial(table.to_csv, index=False),
    "advisor-options.csv",
    "text/csv",
    on_click="ignore",
)
download_right.download_button(
    "Download the recommendation (Markdown)",
    partial(report.recommendation_markdown, rec),
    "advisor-recommendation.md",
    "text/markdown",
    on_click="ignore",
)

# ---- charts
st.subheader("At a glance")
speedup_tab, frontier_tab, value_tab = st.tabs(["Speedup", "Price vs time", "Dollars per speedup"])
with speedup_tab:
    if options.empty:
        st.info("No other results of this workload to compare with.")
    else:
        shown = options.nlargest(CHART_BARS, "speedup_vs_current")
        st.altair_chart(charts.speedup_chart(shown), width="stretch")
        if len(shown) < len(options):
            st.caption(f"The {CHART_BARS} fastest of {len(options)} options; the table has them all.")
with frontier_tab:
    st.altair_chart(
        charts.price_time_chart(analysis.filter_precision(wframe, PRECISION_CHOICES[precision_label])), width="stretch"
    )
    st.caption(
        "A result is on the frontier when nothing is both cheaper (or equal) and faster. Unpriced results are left out."
    )
with value_tab:
    if options["dollars_per_speedup_vs_current"].notna().any():
        priced = options[options["dollars_per_speedup_vs_current"].notna()]
        shown = priced.nsmallest(CHART_BARS, "dollars_per_speedup_vs_current")
        st.altair_chart(charts.dollars_per_speedup_chart(shown), width="stretch")
        if len(shown) < len(priced):
            st.caption(f"The {CHART_BARS} best values of {len(priced)} priced, faster options; the table has them all.")
    else:
        st.info("No faster option with a known price.")

# ---- profile detail
st.subheader("Profile details")
by_id = {data["id"]: data for data in profile_data}
detail_ids = [pid for pid in names.index if pid in by_id]
detail_id = st.selectbox(
    "Profile",
    detail_ids,
    index=detail_ids.index(current_id) if current_id in detail_ids else 0,
    format_func=lambda pid: str(names[pid]),
    key="detail",
)
detail = by_id[detail_id]
hardware_col, software_col, provenance_col = st.columns(3)
with hardware_col:
    st.markdown("**Hardware**")
    st.json({"device": detail["device"], "host": detail.get("host", {}), "price": detail["price"]}, expanded=True)
with software_col:
    st.markdown("**Software and workload**")
    st.json({"software": detail["software"], "workload": detail["workload"]}, expanded=True)
with provenance_col:
    st.markdown("**Provenance**")
    st.json({"provenance": detail["provenance"], "notes": detail.get("notes", [])}, expanded=True)
epoch_chart = charts.epoch_times_chart(detail)
if epoch_chart is not None:
    st.altair_chart(epoch_chart, width="stretch")
else:
    st.caption("This profile records no per-epoch times (quoted results give only totals).")

# ---- metric definitions
with st.expander("What the numbers mean"):
    st.markdown(
        """
- **seconds**: total wall time of the workload's training epochs (the first, warm-up epoch included).
  `~` marks a rounded quoted figure, `±` an estimate's 95 % error.
- **speedup**: current seconds / option seconds. 2x means a run takes half as long.
- **upgrade cost**: the option's price; **$0** when it is the hardware you already have (another precision).
- **$ per 1x speedup**: upgrade cost / speedup. Lower is better value.
- **$ per added run/h**: upgrade cost / (option runs per hour - current runs per hour), runs per hour = 3600 / seconds.
- **hours saved / week**: runs per week x (current seconds - option seconds) / 3600.
- **source**: *measured* by `advisor measure`, *quoted* from a source (named in *source detail*), or
  *estimated* (by `--quick`: first epoch + remaining epochs x the steady median).
"""
    )
if warnings:
    with st.expander(f"{len(warnings)} warning(s) about unknown fields"):
        for warning in warnings:
            st.text(warning)
