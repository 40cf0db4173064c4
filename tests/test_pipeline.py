"""One pipeline for the command line and the app (:class:`advisor.decision.pipeline.Advisor`): the same question
gets the same answer from both; the steps are worked out once per workload and shared by every choice; the
catalog's dates in words."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from advisor.cli import build_parser, main
from advisor.commands.job_options import request_from_args
from advisor.decision import pipeline
from advisor.decision.costs import Habits
from advisor.decision.pipeline import Advisor
from advisor.errors import AdvisorError
from advisor.llm.config import load_presets
from advisor.llm.stack import JobShape, job_request
from advisor.render import catalog as render_catalog
from advisor.render import page, prose
from helpers import ROOT, SHIPPED, app_test, needs


def plain(markdown: str) -> str:
    """Text the app escaped for Markdown, unescaped for comparing."""
    return markdown.replace("\\", "")


@needs("streamlit")
def test_the_command_line_and_the_app_give_the_same_findings(monkeypatch, capsys):
    assert main(["recommend", "--profiles", str(SHIPPED), "--current", "post-cpu-only", "--estimates", "--json"]) == 0
    by_command = json.loads(capsys.readouterr().out)
    at = app_test(monkeypatch, SHIPPED)  # the app's defaults: the slowest hardware (the post's CPU), estimates on
    assert not at.exception, at.exception
    assert at.sidebar.selectbox(key="current").value == by_command["current"]["profile"] == "post-cpu-only"
    best = next(m for m in at.metric if m.label == "Best upgrade")
    assert plain(best.value).endswith(f"(estimated), {by_command['best']['precision']}")  # the JSON has no names
    assert f"{by_command['best']['speedup_vs_current']:.2f}x faster" in best.delta
    shown = [plain(element.value) for element in (*at.info, *at.success)]
    assert by_command["reason"] in shown
    captions = [plain(c.value) for c in at.caption]
    assert "Renting: " + by_command["rent_advice"] in captions
    other_workloads = by_command["notes"][0]  # the app's sidebar picks the workload and lists the others
    assert other_workloads.startswith("left out ") and "other workload(s)" in other_workloads
    assert [c.removeprefix("Note: ") for c in captions if c.startswith("Note: ")] == by_command["notes"][1:]
    assert len(by_command["notes"]) > 1  # the findings beyond the workloads are compared too


def test_every_choice_shares_the_workloads_steps(shipped_frame, shipped_catalog):
    collection = Advisor(shipped_frame, shipped_catalog)
    workload = collection.workload("post-cpu-only")
    first = collection.with_choices(include_estimates=True)
    found = first.offered_estimates(workload)
    assert found is not None and not found.rows.empty
    other = collection.with_choices(include_estimates=True, habits=Habits(runs_per_week=50), prices={"rtx-4090": 900})
    assert other.offered_estimates(workload) is found  # worked out once, whatever the prices and habits
    assert other.rows(workload) is first.rows(workload)
    priced = other.decision_rows(workload)
    mine = priced[priced["catalog_id"] == "rtx-4090"]
    assert len(mine) and {prose.price_words_of(r) for r in mine.to_dict("records")} == {"your price"}
    assert (mine["price_usd"] == 900 * mine["device_count"]).all()
    assert collection.offered_estimates(workload) is None  # estimates only where asked for
    busy = other.recommend("post-cpu-only")
    idle = first.recommend("post-cpu-only")
    assert busy.habits.runs_per_week == 50 and idle.habits.runs_per_week == Habits().runs_per_week
    assert busy.findings.other_workloads == idle.findings.other_workloads > 0
    with pytest.raises(TypeError, match="not a choice: results"):
        collection.with_choices(results=shipped_frame)


def test_prices_apply_to_their_own_workload_and_an_unknown_one_is_an_error(shipped_frame, shipped_catalog):
    published = shipped_frame.loc[
        shipped_frame["source_detail"].notna()
        & (shipped_frame["workload"] != pipeline.workload_of(shipped_frame, "post-cpu-only")),
        "profile",
    ].iloc[0]
    advisor = Advisor(shipped_frame, shipped_catalog, prices={published: 10.0, "post-titan-rtx": 1200.0})
    rec = advisor.recommend("post-cpu-only")  # a price for another workload's profile is not for these rows
    titan = rec.options[rec.options["profile"] == "post-titan-rtx"]
    assert set(titan["price_usd"]) == {1200.0} and set(titan["price_basis"]) == {"yours"}
    with pytest.raises(AdvisorError, match="nothing-like-this"):
        Advisor(shipped_frame, shipped_catalog, prices={"nothing-like-this": 1.0}).recommend("post-cpu-only")


def test_the_comparison_says_what_it_left_out_of_the_collection(shipped_frame, shipped_catalog):
    comparison = Advisor(shipped_frame, shipped_catalog, include_estimates=True).compare()
    workloads = shipped_frame["workload"].nunique()
    assert comparison.other_workloads == workloads - 1
    chosen = comparison.baseline.workload
    assert comparison.left_out_results == int((shipped_frame["workload"] != chosen).sum())
    assert (comparison.table["source"] == "estimated").any()


def test_a_language_model_job_is_one_request_from_the_options_and_from_the_app():
    args = build_parser().parse_args(
        [
            "estimate",
            "--model-config",
            "llama-3.1-8b",
            "--method",
            "qlora",
            "--seq-len",
            "4096",
            "--batch",
            "2",
            "--tokens",
            "10000x4096x2",
            "--devices",
            "2",
            "--fsdp",
            "--pure-bf16",
            "on",
            "--checkpointing",
            "on",
            "--stack",
            "unsloth",
        ]
    )
    from_options = request_from_args(args)
    shape = JobShape(load_presets()["llama-3.1-8b"], "qlora", 4096, 2, tokens=10_000 * 4096 * 2.0)
    from_app = job_request(shape, "unsloth", {"pure_bf16": "on"}, "on", 2, True)
    assert from_options == from_app
    assert from_app.job.stack == "unsloth" and from_app.pure_16bit
    with pytest.raises(AdvisorError, match="devices: must be 1 to 1024"):
        job_request(JobShape(load_presets()["llama-3.1-8b"]), devices=2000)


def test_a_jobs_advice_is_worked_out_once(shipped_frame, shipped_catalog):
    advisor = Advisor(shipped_frame, shipped_catalog)
    request = job_request(JobShape(load_presets()["llama-3.1-8b"], tokens=1000 * 2048))
    advice = advisor.job_advice(request)
    assert advisor.with_choices(habits=Habits(runs_per_week=1)).job_advice(request) is advice
    choice = advisor.job_choice(request, "value", 3000)
    assert choice.best is not None and choice.best.price_usd <= 3000 and choice.best in advice.fitting()
    # a GPU of a platform with no fitted time (ROCm, Metal) gets no time and no cost, but its memory is answered as
    # any GPU's: the same footprint as the CUDA GPUs', judged against its own card (a unified-memory GPU's share)
    assert all(o.gpu.platform == "cuda" for o in advice.options)
    memory_only = {m.gpu.id: m for m in advice.memory_only}
    assert {"mi300x", "rx-7900-xtx", "mac-studio-m4-max-36gb"} <= set(memory_only)
    assert all(memory_only[i].why.platform == "rocm" for i in ("mi300x", "rx-7900-xtx"))
    same_plan = next(o for o in advice.options if o.gpu.id == "rtx-4090")
    assert memory_only["rx-7900-xtx"].footprint.total_gb == pytest.approx(same_plan.footprint.total_gb)
    assert memory_only["mi300x"].verdict == "fits"
    assert "no ROCm (AMD) training results are fitted yet" in page.job_answer(advice).captions[-1]
    # a CUDA GPU whose 16-bit peak nobody published (the DGX Spark) is answered for memory too, saying why no time
    assert memory_only["dgx-spark"].why.peak == "float16 tensor"
    assert "of 108.8 GB usable of 128 GB unified" in page.job_answer(advice).captions[-1]


def test_the_workloads_profiles_are_offered_slowest_first(shipped_frame):
    rows = pipeline.workload_rows(shipped_frame, pipeline.workload_of(shipped_frame, "post-cpu-only"))
    slowest = rows.frame.groupby("profile")["seconds"].max()[rows.names.index]
    assert slowest.is_monotonic_decreasing and rows.slowest == "post-cpu-only" == rows.names.index[0]


def test_the_catalogs_dates_are_said_from_the_catalog(shipped_catalog):
    text = render_catalog.catalog_dates(shipped_catalog, today=dt.date.fromisoformat(shipped_catalog.as_of))
    years = sorted({r.date[:4] for gpu in shipped_catalog.gpus for r in gpu.rentals})
    assert f"prices collected {shipped_catalog.as_of} (0 days ago)" in text
    assert f"rentals date from {years[0]}-{years[-1]}" in text


def test_an_estimates_basis_is_a_record_its_sentence_is_rendered_from(shipped_frame, shipped_catalog, capsys):
    """The frame carries the basis as facts (perf.basis), never words; render.basis writes the sentence every output
    shows and the JSON parts beside it, and they agree for every catalog row (one GPU and two) and every
    language-model row. Readers of a part (the estimate table's "why this range", the language-model range) read
    the record: no module splits a basis, and no module below render/ writes one."""
    import re

    from advisor.perf import basis, estimates
    from advisor.render import basis as render_basis
    from advisor.render import estimate as render_estimate

    key = next(k for k in shipped_frame["workload"] if k[0] == "lstm")
    rows = estimates.estimate_catalog(
        shipped_frame, shipped_catalog, estimates.EstimateRequest(key, devices=(1, 2))
    ).rows
    assert len(rows) > 40
    for _, row in rows.iterrows():
        parts = row["basis"]
        assert isinstance(parts, basis.Basis) and isinstance(parts.situation, basis.CatalogSituation)
        assert (row["device_count"] > 1) == bool(parts.of_kind(basis.Clause.SEVERAL))
        said = render_basis.sentence(parts)
        assert said.startswith(render_basis.words(parts.calibration)) and render_basis.words(parts.range) in said
        why = dict(render_estimate.ESTIMATE_TABLE)["why this range"](row)
        assert why == render_basis.words(parts.situation) and why and ": range" not in why
    assert (
        main(
            [
                "estimate",
                "--model-config",
                "llama-3.1-8b",
                "--method",
                "lora",
                "--seq-len",
                "1024",
                "--devices",
                "2",
                "--fsdp",
                "--gpu",
                "rtx-4090",
                "--json",
            ]
        )
        == 0
    )
    records = json.loads(capsys.readouterr().out)
    for record in records:
        parts = record["basis_parts"]
        kinds = [clause["kind"] for clause in parts["clauses"]]
        assert (
            parts["situation"]["kind"] == "language-model"
            and parts["situation"]["words"].startswith("a language-model job")
            and record["basis"].startswith(parts["calibration"]["words"])
        )
        assert ("sharded" in kinds) == (record["devices"] > 1)
        assert all(clause["words"] in record["basis"] for clause in parts["clauses"])
    sentence_words = (
        "range = the 90th-percentile",
        "in data parallel (the batch per GPU kept)",
        "waiting for data",
        "at least the host's launches",
        "calibrated on {",
    )
    below_render = [p for p in (ROOT / "advisor").rglob("*.py") if p.parent.name in ("perf", "llm", "decision")]
    assert not [(str(p), w) for p in below_render for w in sentence_words if w in p.read_text(encoding="utf-8")]
    split_back = re.compile(r"""basis["'\]]*\)?\.(split|partition|startswith|endswith|astype|str)\b""")
    sources = [*(ROOT / "advisor").rglob("*.py")]
    assert not [str(p) for p in sources if split_back.search(p.read_text(encoding="utf-8"))]


def test_the_options_download_says_each_estimates_basis_in_words(shipped_frame, shipped_catalog):
    """The app's CSV keeps the numbers and says an estimate's basis as its sentence (the frame holds the record)."""
    import csv
    import io

    from advisor.render import compare as render_compare

    rec = Advisor(shipped_frame, shipped_catalog).with_choices(include_estimates=True).recommend("post-cpu-only")
    rows = list(csv.DictReader(io.StringIO(render_compare.options_csv(rec))))
    estimated = [row for row in rows if row["source"] == "estimated"]
    assert estimated and all(row["basis"].startswith("calibrated on ") for row in estimated)
    assert not any("Basis(" in value for row in rows for value in row.values())
