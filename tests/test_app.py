"""The Streamlit app under AppTest: it runs, and the widgets drive the recommendation."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from helpers import (
    ROOT,
    SHIPPED,
    app_test,
    load_yaml,
    make_special_files,
    model_profile,
    needs,
    post_workload_profile,
    valid_profile,
    write_yaml,
)

pytestmark = needs("streamlit")
if TYPE_CHECKING:  # imported by the first test that starts the app, not when this file is collected
    from streamlit.testing.v1 import AppTest


def start(monkeypatch, folder: Path = SHIPPED) -> AppTest:
    at = app_test(monkeypatch, folder)
    assert not at.exception, at.exception
    return at


def best(at: AppTest):
    metric = next(m for m in at.metric if m.label == "Best upgrade")
    return metric.value, metric.delta


def options_table(at: AppTest):
    """The options table (the running-a-model section's measured generations come before it on the page)."""
    return next(d.value for d in at.dataframe if "option" in d.value.columns)


def without_estimates(at: AppTest) -> AppTest:
    at.sidebar.toggle(key="estimates").set_value(False).run()
    assert not at.exception, at.exception
    return at


def chart_specs(at: AppTest) -> list[str]:
    """Every chart's spec and data (Arrow tables keep their strings as UTF-8 text)."""
    return [chart.proto.SerializeToString().decode("utf-8", "replace") for chart in at.get("vega_lite_chart")]


def plain(markdown: str) -> str:
    """Text the app escaped for Markdown, unescaped for comparing."""
    return markdown.replace("\\", "")


def test_defaults_start_from_the_slowest_hardware_and_include_estimates(monkeypatch):
    at = start(monkeypatch)
    assert at.sidebar.selectbox(key="current").value == "post-cpu-only"
    assert at.sidebar.toggle(key="estimates").value is True
    value, _ = best(at)
    # With estimates, the best value from the CPU is an estimated catalog GPU: marked as such, with its range.
    assert "(estimated)" in plain(value)
    reason = plain(next(i.value for i in at.info))
    assert "estimated at" in reason and "likely between" in reason
    assert any("Estimated, not measured" in c.value for c in at.caption)
    table = options_table(at)
    # the columns a buyer decides on
    assert list(table.columns) == [
        "option",
        "precision",
        "speedup",
        "upgrade cost",
        "your price",
        "$ per 1x",
        "payback",
        "cost / run",
        "time / run",
        "source",
    ]
    assert set(table["your price"]) == {""}  # an empty cell where no price was typed, never "None"
    at.toggle(key="more_columns").set_value(True).run()  # what each price is, and what renting costs a run
    assert not at.exception, at.exception
    table = options_table(at)
    assert {"price is", "rent / run"} <= set(table.columns)
    estimated = table[table["source"] == "estimated"]
    assert len(estimated) > 40 and not estimated["option"].str.contains("estimated").any()  # the source says it
    # every price says what it is and when: a launch MSRP with its month, a system price, a stale launch price
    assert estimated["price is"].str.contains(r"MSRP 20\d\d-\d\d").any()  # short words (full ones in the CSV)
    assert estimated["price is"].str.contains(r"20\d\d launch \(old\)").any()
    # the default inputs give a concrete answer: a payback in weeks, the inputs stated
    assert any(m.label == "Pays for itself" and "weeks" in m.value for m in at.metric)
    assert any("an hour of waiting worth $20" in plain(c.value) for c in at.caption)
    assert at.sidebar.number_input(key="budget").value is None  # no limit until the user sets one
    assert estimated["time / run"].str.contains(r"\(.*-.*\)").all()  # the likely range beside every estimate
    assert not table.isin(["None", "nan", "NaN"]).any().any()
    assert any("prices collected 2026-11-30" in c.value for c in at.caption)


def test_estimates_off_gives_the_posts_answer(monkeypatch):
    at = without_estimates(start(monkeypatch))
    value, delta = best(at)
    # Best of both precisions, no budget limit: the Titan RTX in mixed precision at $16.33 per 1x.
    assert "Titan RTX" in value and "mixed" in value and "(estimated)" not in plain(value)
    assert "153.09x faster" in delta
    table = options_table(at)
    assert {"GTX 1070 Ti (the post)", "Titan RTX (the post)"} <= set(table["option"])
    assert "CPU only (the post's desktop)" not in set(table["option"])
    assert set(table["source"]) <= {"measured", "quoted"}


def test_changing_current_hardware_budget_and_precision(monkeypatch):
    at = without_estimates(start(monkeypatch))
    at.sidebar.radio(key="precision").set_value("float32").run()
    value, delta = best(at)
    assert "GTX 1070 Ti" in value and "16.29x faster" in delta and "$33.75" in delta
    assert set(options_table(at)["precision"]) == {"float32"}

    at.sidebar.selectbox(key="current").set_value("post-gtx-1070-ti").run()
    value, delta = best(at)
    assert "Titan RTX" in value and "4.42x faster" in delta
    assert "GTX 1070 Ti (the post)" not in set(options_table(at)["option"])

    at.sidebar.number_input(key="budget").set_value(1000).run()
    value, _ = best(at)
    assert value == "None within your choices"

    at.sidebar.selectbox(key="current").set_value("post-titan-rtx").run()
    at.sidebar.radio(key="precision").set_value("Best of both").run()
    value, delta = best(at)
    assert "mixed" in value and "free" in delta and "2.13x" in delta
    assert not at.exception


def test_habits_change_the_headline_the_table_and_the_cost_chart(monkeypatch):
    at = without_estimates(start(monkeypatch))
    at.sidebar.radio(key="precision").set_value("float32").run()
    at.sidebar.number_input(key="hour_value").set_value(0.0).run()
    reason = next(i.value for i in at.info)
    assert "say what an hour of waiting is worth" in reason
    before_table, before_charts = options_table(at), chart_specs(at)

    at.sidebar.number_input(key="hour_value").set_value(50.0).run()
    reason = next(i.value for i in at.info)
    assert "pays for itself in 1.7 weeks at $50 an hour" in plain(reason)  # the post's 1070 Ti, as in the issue
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Pays for itself"] == "1.7 weeks*"  # the tooltip says: the time saved alone
    table = options_table(at)
    assert table.set_index("option").loc["GTX 1070 Ti (the post)", "payback"] == "1.7 wk*"
    assert not table.equals(before_table)
    assert chart_specs(at) != before_charts  # the cumulative cost chart follows the hour's value
    assert any("buying pays off after" in spec for spec in chart_specs(at))

    at.sidebar.number_input(key="runs_per_week").set_value(20.0).run()
    hours = {m.label: m.value for m in at.metric}["Hours saved a week"]
    assert hours == "12.8 h"  # the GTX 1070 Ti: 20 x (2449.4 - 150.3) / 3600
    assert metrics["Hours saved a week"] != {m.label: m.value for m in at.metric}["Hours saved a week"]


def test_the_cost_goal_can_recommend_renting(monkeypatch):
    at = start(monkeypatch)
    at.sidebar.radio(key="goal").set_value("cost").run()
    assert not at.exception
    reason = plain(next(i.value for i in at.info))
    assert reason.startswith("Renting ")
    # the best rental drawn in the cost chart: with a session's 5-minute start-up, the lowest hourly rate wins
    assert any("rent RTX 3090" in spec for spec in chart_specs(at))


def test_the_inputs_cannot_take_a_negative_number(monkeypatch):
    at = start(monkeypatch)
    for key in ("budget", "runs_per_week", "hour_value", "kwh_price", "resale_usd"):
        widget = at.sidebar.number_input(key=key)
        assert widget.proto.has_min and widget.proto.min == 0
    lifetime = at.sidebar.number_input(key="lifetime_years")
    assert lifetime.proto.has_min and lifetime.proto.min > 0


def test_bad_profiles_are_listed_and_the_rest_works(monkeypatch, small_copy: Path):
    (small_copy / "broken.yaml").write_text("schema_version: [\n")
    bad = valid_profile("bad-one")
    bad["results"][0]["total_seconds"] = float("nan")
    write_yaml(small_copy / "bad-one.yaml", bad)
    at = start(monkeypatch, small_copy)
    assert any("2 invalid profile file(s) are left out" in w.value for w in at.warning)
    assert any("2 problem(s)" in e.label for e in at.expander)
    texts = " ".join(t.value for t in at.text)
    assert "broken.yaml" in texts and "must be a finite number" in texts
    assert "Titan RTX" in best(without_estimates(at))[0]


def test_no_profiles_gives_a_helpful_empty_state(monkeypatch, tmp_path: Path):
    at = start(monkeypatch, tmp_path)
    assert any("No profiles yet" in info.value for info in at.info)
    assert not at.metric


def test_crafted_names_are_shown_as_text(monkeypatch, small_copy: Path):
    evil = post_workload_profile("evil", seconds=1.0, price=10)
    evil["name"] = "<img src=x onerror=alert(1)> **bold** :red[red] $x^2$"
    write_yaml(small_copy / "evil.yaml", evil)
    at = start(monkeypatch, small_copy)
    value, _ = best(at)
    assert "\\<img" in value and "\\*\\*bold\\*\\*" in value and "\\:red\\[red\\]" in value and "\\$x" in value


def test_special_files_are_listed_without_their_content(monkeypatch, small_copy: Path):
    cases = [c for c in load_yaml((ROOT / "tests" / "bad_profiles_expected.yaml").read_text()) if "make" in c]
    made = make_special_files(small_copy, cases)
    at = start(monkeypatch, small_copy)
    texts = " ".join(t.value for t in at.text)
    for case in made:
        assert f"{case['file']}: {case['message']}" in texts
    everything = texts + " ".join(str(getattr(e, "value", "")) for e in [*at.warning, *at.info, *at.markdown])
    assert "root:" not in everything
    assert "Titan RTX" in best(without_estimates(at))[0]


def test_a_profile_of_your_own_model_gets_the_catalogs_estimates(monkeypatch, small_copy: Path):
    write_yaml(small_copy / "my-model.yaml", model_profile("my-model"))
    at = start(monkeypatch, small_copy)
    workload = at.sidebar.selectbox(key="workload")
    model_key = next(k for k in workload.options if "tiny_cnn" in k)
    at.sidebar.selectbox(key="workload").select_index(workload.options.index(model_key)).run()
    assert not at.exception
    assert at.sidebar.selectbox(key="current").value == "my-model"
    table = options_table(at)
    assert (table["source"] == "estimated").sum() > 40  # every catalog GPU, estimated for this model
    assert {"RTX 4090", "2x RTX 4090"} <= set(table["option"])
    assert "(estimated)" in plain(best(at)[0])


def test_a_folder_without_published_results_still_gets_estimates(monkeypatch, tmp_path: Path):
    # the post's profiles alone: no published multi-GPU rows to fit the scaling on (the default scaling is used)
    for path in SHIPPED.glob("post-*.yaml"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    at = start(monkeypatch, tmp_path)
    table = options_table(at)
    assert {"RTX 4090", "2x RTX 4090"} <= set(table["option"])


def test_a_profile_measured_across_machines_shows_what_a_machine_buys(monkeypatch, tmp_path: Path):
    for path in SHIPPED.glob("post-*.yaml"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    cluster = post_workload_profile("two-titans", seconds=20.0, price=5000)
    cluster["device"] = {"kind": "gpu", "name": "NVIDIA TITAN RTX", "count": 2}
    cluster["cluster"] = {"workers": 2, "devices_per_worker": 1, "collective": "NCCL", "link_gbps": 25.0}
    cluster["results"][0]["scaling"] = {
        "workers": 2,
        "devices": 2,
        "single_device_seconds": 34.0,
        "speedup": 1.7,
        "efficiency": 0.85,
    }
    write_yaml(tmp_path / "two-titans.yaml", cluster)
    at = start(monkeypatch, tmp_path)
    expander = next(e for e in at.expander if e.label == "What each added device or machine buys")
    table = expander.dataframe[0].value
    row = table.iloc[0]
    # the option by its name, not its id
    assert row["option"] == cluster["name"] and row["machines"] == "2" and row["devices"] == "2"
    assert row["added 1x per machine"] == "0.70x" and row["$ per added 1x"] == "$3,571"  # $2,500 / 0.7


def test_a_network_speed_offers_two_machines_marked_estimated(monkeypatch):
    at = start(monkeypatch)
    assert not any("machines" in name for name in options_table(at)["option"])
    at.sidebar.number_input(key="link_gbps").set_value(100.0).run()
    assert not at.exception, at.exception
    table = options_table(at)
    machines = table[table["option"].str.startswith("2 machines x")]
    assert len(machines) and set(machines["source"]) <= {"estimated", "does not fit"}


def job_table(at: AppTest):
    return next(d.value for d in at.dataframe if "fits?" in d.value.columns)


def memory_gb(cell: str) -> float:
    """The predicted GB of a job table's memory cell ("22.8 GB (20-25) of 24")."""
    return float(cell.split(" GB")[0])


def test_a_language_model_job_is_answered_per_gpu(monkeypatch):
    """What are you training? Llama 3.1 8B with LoRA, 10,000 examples of 2,048 tokens: per GPU whether it fits, its
    tokens/s, the run's time and cost, and the cheapest rental that fits."""
    at = start(monkeypatch)
    at.selectbox(key="llm_model").set_value("llama-3.1-8b").run()
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown).replace("\\", "")  # the Markdown's escapes
    assert "Llama 3.1 8B, LoRA rank 16" in text and "20,480,000 tokens" in text
    assert "Cheapest rented:" in text and "Fastest that fits:" in text
    table = job_table(at)
    assert {"fits?", "tokens/s", "the run", "rented, the run"} <= set(table.columns)
    rows = table.set_index("gpu")
    assert rows.loc["H100 SXM5 80GB", "fits?"] == "fits"
    assert rows.loc["GeForce RTX 4060 Ti (8 GB)", "fits?"] == "does not fit"
    # the training stack is part of the job: Transformers' Trainer defaults hold the whole fp32 logits
    at.selectbox(key="llm_stack").set_value("hf-trainer").run()
    rows = job_table(at).set_index("gpu")
    ladder = "least memory that fits (the stack's choices)"
    assert rows.loc["GeForce RTX 4090", "fits?"] != "fits" and "GB" in rows.loc["GeForce RTX 4090", ladder]
    assert rows.loc["H100 SXM5 80GB", ladder] == ""  # it fits as asked
    eager = memory_gb(rows.loc["H100 SXM5 80GB", "memory (range) of the card"])
    at.selectbox(key="llm_compile").set_value("on").run()  # compiled kernels keep fewer activations
    compiled = memory_gb(job_table(at).set_index("gpu").loc["H100 SXM5 80GB", "memory (range) of the card"])
    assert compiled < eager, (compiled, eager)
    at.selectbox(key="llm_compile").set_value("stack").run()
    at.selectbox(key="llm_stack").set_value("trl-sft").run()
    at.selectbox(key="llm_method").set_value("qlora").run()  # QLoRA fits where LoRA does not
    rows = job_table(at).set_index("gpu")
    assert rows.loc["GeForce RTX 4090", "fits?"] == "fits"
    at.number_input(key="llm_devices").set_value(2).run()
    at.checkbox(key="llm_fsdp").check().run()
    assert not at.exception, at.exception
    rows = job_table(at).set_index("gpu")
    assert "2x H100 SXM5 80GB" in rows.index and "H100 SXM5 80GB" in rows.index
    # one question a page: the headline answers for the job, with the sidebar's goal and budget
    labels = [m.label for m in at.metric]
    assert "Best GPU for this job" in labels and "Best upgrade" not in labels
    assert any("Best (value): " in plain(i.value) for i in at.info)
    at.sidebar.number_input(key="budget").set_value(1000.0).run()
    best = next(m for m in at.metric if m.label == "Best GPU for this job")
    assert any("within $1,000" in plain(i.value) for i in at.info), [i.value for i in at.info]
    assert "H100" not in best.value  # over the budget
    at.sidebar.selectbox(key="current").set_value("post-titan-rtx").run()  # the hardware you have: a 24 GB card
    mine = [plain(c.value) for c in at.caption if "On the hardware you have" in c.value]
    assert mine and mine[0].startswith("On the hardware you have (NVIDIA Titan RTX): "), mine
    assert " of 24 GB." in mine[0], mine
    at.selectbox(key="llm_hardware").set_value("whole machines only").run()  # a Mac, a mini-PC, a DGX Spark
    assert not at.exception, at.exception
    said = " ".join(plain(c.value) for c in at.caption)
    assert "Mac Studio (M4 Max, 32-core GPU, 36 GB)" in said and "GB usable of 36 GB unified" in said
    assert "H100" not in said
    at.selectbox(key="llm_hardware").set_value("Intel").run()  # memory only: nothing Intel is fitted
    assert not at.exception, at.exception
    shown = [plain(e.value) for e in (*at.caption, *at.markdown, *at.info, *at.warning)]
    assert any("Intel Arc Pro B60 fits" in line and "no oneAPI (Intel) training results" in line for line in shown)
    assert not any("None of these GPUs fits" in line for line in shown)
    at.button(key="llm_back").click().run()  # back to the profiles' workload: its answer again
    assert not at.exception, at.exception
    assert any(m.label == "Best upgrade" for m in at.metric) and at.selectbox(key="llm_model").value is None


def test_the_tuned_fp8_stack_splits_a_70b_model_over_eight_gpus(monkeypatch):
    """The MLPerf job (Llama 2 70B LoRA, 8,192 tokens) on NeMo's stack: eight H100s hold it split by tensor
    parallelism, at the FP8 stack's fitted speed; one does not."""
    at = start(monkeypatch)
    at.selectbox(key="llm_model").set_value("llama-2-70b").run()
    at.number_input(key="llm_seq").set_value(8192).run()
    at.selectbox(key="llm_stack").set_value("nemo").run()
    at.number_input(key="llm_devices").set_value(8).run()
    assert not at.exception, at.exception
    rows = job_table(at).set_index("gpu")
    split = [name for name in rows.index if name.startswith("8x H100 SXM5 80GB, tensor ")]
    assert split and rows.loc[split[0], "fits?"] == "fits" and rows.loc[split[0], "precision"] == "fp8"
    assert rows.loc["H100 SXM5 80GB", "fits?"] == "does not fit"


def test_past_200_profiles_the_pickers_search_the_names(monkeypatch, tmp_path: Path):
    for number in range(230):
        data = valid_profile(f"gpu-{number:03d}", seconds=1000.0 - number)
        data["name"] = data["device"]["name"] = f"Card {number:03d}"
        write_yaml(tmp_path / f"gpu-{number:03d}.yaml", data)
    at = start(monkeypatch, tmp_path)
    current = at.sidebar.selectbox(key="current")
    assert len(current.options) == 200 and current.value == "gpu-000"  # the slowest first, the list capped
    assert any("200 of 230 matching profiles" in c.value for c in at.sidebar.caption)
    at.sidebar.text_input(key="current_search").set_value("card 22").run()
    assert not at.exception, at.exception
    current = at.sidebar.selectbox(key="current")
    # the chosen one stays listed, and the names holding both words follow it, slowest first
    assert current.options == ["Card 000", "Card 022", "Card 122", *[f"Card 22{digit}" for digit in range(10)]]
    current.set_value("gpu-225").run()
    assert not at.exception and at.sidebar.selectbox(key="current").value == "gpu-225"
    detail = at.selectbox(key="detail")  # the details panel: its own choice, a profile decoded only when shown
    assert len(detail.options) == 200 and any(detail.value in str(shown.value) for shown in at.json)


def test_running_a_model_is_answered_per_gpu(monkeypatch):
    """'Running or serving a model?': a preset gets the analysis' picks, a row per GPU and the throughput chart; the
    engine's menus offer only the formats it runs; a format a GPU cannot run is refused on it with the reason."""
    at = start(monkeypatch)
    at.selectbox(key="run_model").set_value("llama-3.1-8b").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "TPOT ms" in d.value.columns)
    assert len(table) > 30 and set(table["memory"]) <= {"fits", "tight", "does not fit"}
    lines = [plain(m.value) for m in at.markdown if plain(m.value).startswith("- Fastest that fits")]
    assert lines and "tokens/s for one user" in lines[0]
    assert any("users at once" in spec for spec in chart_specs(at))
    at.selectbox(key="run_engine").set_value("llama.cpp").run()
    assert "awq-int4" not in at.selectbox(key="run_weights").options
    at.selectbox(key="run_weights").set_value("q4_k_m").run()
    table = next(d.value for d in at.dataframe if "TPOT ms" in d.value.columns)
    assert table["1-stream tok/s"].str.contains(r"\(").any()  # a fitted engine: a cross-validated range
    at.selectbox(key="run_engine").set_value("vllm").run()
    at.selectbox(key="run_weights").set_value("nvfp4").run()  # Blackwell only
    rtx_3090 = (
        next(d.value for d in at.dataframe if "TPOT ms" in d.value.columns).set_index("gpu").loc["GeForce RTX 3090"]
    )
    assert rtx_3090["TPOT ms"] == "-"
    assert any("nvfp4 weights need Blackwell" in plain(c.value) for c in at.caption)
    # narrowed to Apple's machines: only the Macs, their memory the GPU's allocatable share, vLLM refused on Metal
    at.selectbox(key="run_engine").set_value("llama.cpp").run()
    at.selectbox(key="run_weights").set_value("q4_k_m").run()
    at.selectbox(key="run_hardware").set_value("Apple").run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if "TPOT ms" in d.value.columns)
    assert len(table) == 16 and table["gpu"].str.startswith(("Mac Studio", "Mac mini", "MacBook Pro")).all()
    mac = table.set_index("gpu").loc["Mac Studio (M4 Max, 32-core GPU, 36 GB)"]
    assert mac["memory"] == "fits" and mac["GB need/engine"].endswith("/25.3")  # 24 GB allocatable of 36
    assert mac["1-stream tok/s"].endswith("decode only") and mac["TTFT ms"] == "-"  # Metal's own fit, no peak
    at.selectbox(key="run_engine").set_value("vllm").run()
    assert any("vLLM does not run on mps GPUs" in plain(c.value) for c in at.caption)
    # narrowed to Intel's: the Arc answered for memory (llama.cpp through SYCL), the Gaudis refused with the reason
    at.selectbox(key="run_engine").set_value("llama.cpp").run()
    at.selectbox(key="run_hardware").set_value("Intel").run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if "TPOT ms" in d.value.columns).set_index("gpu")
    assert table.loc["Intel Arc Pro B60", "memory"] == "fits" and table.loc["Intel Arc Pro B60", "TPOT ms"] == "-"
    assert any("llama.cpp does not run on hpu GPUs" in plain(c.value) for c in at.caption)
    at.selectbox(key="run_engine").set_value("vllm").run()
    # two different cards: the model split layer by layer as llama.cpp splits it; another engine is refused, said
    at.multiselect(key="run_mixed").set_value(["rtx-4090", "rtx-3090"]).run()
    assert any("costed for llama.cpp only" in plain(e.value) for e in at.error)
    at.selectbox(key="run_engine").set_value("llama.cpp").run()
    assert not at.exception and not at.error, at.exception
    shares = next(d.value for d in at.dataframe if "card" in d.value.columns)
    assert list(shares["card"]) == ["GeForce RTX 4090", "GeForce RTX 3090"] and set(shares["memory"]) == {"fits"}
    assert any(plain(m.value).startswith("- Together: fits.") for m in at.markdown)
    # a steady rate of requests: one stream over mixed cards is not a rate (said); on whole GPUs, the users in flight
    at.number_input(key="run_rate").set_value(2.0).run()
    assert any("set the requests a second to 0" in plain(e.value) for e in at.error)
    at.multiselect(key="run_mixed").set_value([]).run()
    at.selectbox(key="run_hardware").set_value(at.selectbox(key="run_hardware").options[0]).run()
    assert not at.exception and not at.error, at.exception
    table = next(d.value for d in at.dataframe if "TPOT ms" in d.value.columns)
    assert table["all tok/s"].str.contains("at once").any()
    assert any("Little's law" in plain(c.value) for c in at.caption)


def test_a_million_tokens_owned_costs_what_the_owners_hours_and_energy_say(monkeypatch):
    """The cost of a million tokens on an owned card follows the hours a week it serves (the run section's input) and
    the sidebar's electricity and years; an API's price says from how many users renting costs less."""
    at = start(monkeypatch)
    at.selectbox(key="run_model").set_value("llama-3.1-8b").run()
    at.selectbox(key="run_hardware").set_value("NVIDIA").run()

    def owned() -> str:
        table = next(d.value for d in at.dataframe if "TPOT ms" in d.value.columns).set_index("gpu")
        return str(table.loc["GeForce RTX 4090", "$/M owned"])

    def header() -> str:
        return next(plain(c.value) for c in at.caption if plain(c.value).startswith("Model: "))

    assert "serving 40 h a week, energy at $0.15/kWh" in header()
    assert any(plain(m.value).startswith("- Buying the ") for m in at.markdown)  # owning against renting the same
    costed = [spec for spec in chart_specs(at) if "USD a million output tokens" in spec]
    assert len(costed) == 1 and "GeForce RTX 4090" in costed[0]  # speed against cost, owned and rented, per GPU
    at_forty = owned()
    at.number_input(key="run_hours").set_value(168.0).run()
    assert not at.exception, at.exception
    assert "over 3 years serving 168 h a week" in header() and owned() != at_forty
    at.sidebar.number_input(key="kwh_price").set_value(0.4).run()
    at.sidebar.number_input(key="lifetime_years").set_value(5.0).run()
    assert "owned over 5 years serving 168 h a week, energy at $0.40/kWh" in header()
    assert not any(plain(m.value).startswith("- Against an API") for m in at.markdown)
    at.number_input(key="run_api").set_value(0.5).run()
    assert not at.exception and not at.error, at.exception
    assert any(plain(m.value).startswith("- Against an API at $0.50 a million tokens") for m in at.markdown)


def test_a_mixture_of_experts_runs_attention_data_parallel_over_its_gpus(monkeypatch):
    """The experts split over 8 GPUs, each its own users' attention: more sequences than tensor parallelism's split
    caches hold; a dense model asked so is refused with what would work."""
    at = start(monkeypatch)
    at.selectbox(key="run_model").set_value("qwen3-30b-a3b").run()
    at.number_input(key="run_devices").set_value(8).run()
    assert not at.exception and not at.error, at.exception

    def most(gpu: str) -> int:
        table = next(d.value for d in at.dataframe if "TPOT ms" in d.value.columns).set_index("gpu")
        return int(str(table.loc[gpu, "most seqs"]).replace(",", ""))

    split = most("H100 SXM5 80GB")
    at.checkbox(key="run_attention_dp").check().run()
    assert not at.exception and not at.error, at.exception
    assert most("H100 SXM5 80GB") > split
    at.selectbox(key="run_model").set_value("llama-3.1-8b").run()
    assert any("no routed experts to split" in plain(e.value) and "--replicas" in plain(e.value) for e in at.error)


def test_a_model_no_single_gpu_holds_says_so(monkeypatch):
    at = start(monkeypatch)
    at.selectbox(key="run_model").set_value("deepseek-v3").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "TPOT ms" in d.value.columns)
    assert (table["memory"] == "does not fit").sum() > 30  # 671 B weights in 16 bits on one GPU
    # the analysis says how it would fit: smaller formats and more GPUs, the fewest GPUs first
    ways = [plain(m.value) for m in at.markdown if plain(m.value).startswith("- Ways to fit")]
    assert ways and "GPUs" in ways[0] and "tok/s" in ways[0]
    h100 = table.set_index("gpu").loc["H100 SXM5 80GB", "to fit: fewest GPUs"]
    assert h100.startswith("8 GPUs + ") and "weights" in h100
