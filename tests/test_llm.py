"""Language-model training jobs: configs, work per token, memory against published peaks, the CLI's answer."""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys

import pytest

from advisor.cli import main
from advisor.commands.arguments import parse_tokens
from advisor.errors import AdvisorError
from advisor.llm import job_memory as memory
from advisor.llm import operations, validation
from advisor.llm import throughput_crossval as crossval
from advisor.llm.config import load_presets, read_config_json, relative_size_error, resolve
from advisor.llm.job import Method, TrainingJob, job_from_options
from helpers import ROOT, SHIPPED, load_yaml

LLAMA_CONFIG = {  # a Llama-3-like config.json, shrunk (the keys Hugging Face writes)
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-5,
}


@pytest.mark.parametrize("key", sorted(load_presets()))
def test_every_preset_adds_up_to_its_stated_size(key):
    """A preset's numbers count to the size its model card states (a mistyped field cannot hide)."""
    model = load_presets()[key]
    assert model.source
    assert abs(relative_size_error(model)) < math.log(1.04), (key, model.parameters)


def test_a_config_json_is_read_from_disk(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_CONFIG))
    model = read_config_json(tmp_path)  # the folder that holds it works too
    assert (model.layers, model.hidden, model.heads, model.kv_heads, model.intermediate, model.vocab) == (
        4,
        256,
        8,
        2,
        512,
        1000,
    )
    assert model.gated_mlp and not model.tied_embeddings and model.kv_width == 64
    assert resolve(str(path)).parameters == model.parameters


@pytest.mark.parametrize(
    "change, words",
    [
        ({"num_hidden_layers": None, "n_layer": None}, "the model's layers is missing"),
        ({"hidden_size": "big"}, "hidden_size: must be a whole number"),
        ({"num_local_experts": 8}, "mixture-of-experts"),
        ({"num_key_value_heads": 3}, "not a multiple of 3 key-value heads"),
        ({"is_encoder_decoder": True}, "encoder-decoder"),
    ],
)
def test_a_wrong_config_json_says_file_field_and_what(tmp_path, change, words):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in {**LLAMA_CONFIG, **change}.items() if v is not None}))
    with pytest.raises(AdvisorError, match=words) as raised:
        read_config_json(path)
    assert str(path) in str(raised.value)


def test_not_json_and_an_unknown_preset_are_one_line_errors(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{\n  'layers': 4\n}")
    with pytest.raises(AdvisorError, match=r"config.json: line 2: not valid JSON"):
        read_config_json(path)
    with pytest.raises(AdvisorError, match=r"model_config: no preset named like 'llama-9-400b'; closest: llama"):
        resolve("llama-9-400b")


@pytest.mark.slow  # builds real transformers models (PyTorch and transformers imported: 3-8 s)
def test_the_counted_parameters_are_the_real_models(tmp_path):
    """The config's parameter count is the real transformers model's (a tiny Llama and GPT-2 built from local
    configs, nothing downloaded): weights of the blocks, embeddings, norms."""
    transformers = pytest.importorskip("transformers")
    llama = transformers.LlamaForCausalLM(
        transformers.LlamaConfig(**{k: v for k, v in LLAMA_CONFIG.items() if k != "architectures"})
    )
    counted = sum(p.numel() for p in llama.parameters())
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    assert read_config_json(tmp_path).parameters == counted
    gpt2_config = {
        "model_type": "gpt2",
        "n_layer": 2,
        "n_embd": 128,
        "n_head": 4,
        "vocab_size": 500,
        "n_positions": 64,
        "bos_token_id": 0,
        "eos_token_id": 0,
    }
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(**gpt2_config))
    (tmp_path / "config.json").write_text(json.dumps(gpt2_config))
    model = read_config_json(tmp_path)
    assert not model.gated_mlp and model.tied_embeddings
    real = sum(p.numel() for n, p in gpt2.named_parameters() if "wpe" not in n and not n.endswith(".bias"))
    assert model.parameters == real  # the count leaves out biases and GPT-2's learned positions


def test_lora_trains_adapters_and_costs_two_thirds_of_full_work():
    model = load_presets()["llama-3.1-8b"]
    full = job_from_options(model, "full", 2048, 1)
    lora = job_from_options(model, "lora", 2048, 1, lora_rank=16)
    # rank 16 on every linear layer of Llama 3.1 8B: 41.9 M adapter weights (PEFT prints 41,943,040)
    assert lora.trainable_parameters == 41_943_040
    assert full.trainable_parameters == model.parameters
    assert 0.6 < lora.flops_per_token() / full.flops_per_token() < 0.72
    assert job_from_options(model, "lora", 2048, 1, checkpointing=True).flops_per_token() > lora.flops_per_token()
    assert job_from_options(model, "qlora", 2048, 1).dequantized_bytes_per_micro_batch() > 0


@pytest.mark.parametrize(
    "change, words",
    [
        ({"seq_len": 0}, "seq_len: must be 1 or more"),  # a field's name: the command line says --seq-len
        ({"optimizer": "sgdx"}, "optimizer: must be one of"),
        ({"lora_targets": ("q", "v_proj")}, "not linear layers"),
    ],
)
def test_a_wrong_job_option_is_named(change, words):
    with pytest.raises(AdvisorError, match=words):
        TrainingJob(model=load_presets()["llama-3.2-1b"], **change)


def test_tokens_are_read_as_people_write_them():
    assert parse_tokens("10000x2048") == 20_480_000
    assert parse_tokens("20M") == 20e6 and parse_tokens("1.5e9") == 1.5e9 and parse_tokens("3,000,000") == 3e6
    with pytest.raises(AdvisorError, match="--tokens"):
        parse_tokens("lots")


def test_memory_is_never_optimistic_on_the_published_peaks():
    """Cross-validated (each source's model predicted without it): median error within 1.2x, the prediction below
    0.8x of a published peak in at most 7 % of them, a published peak above its stack's range in at most 5 %, and
    no more than 2 of the published runs said not to fit the GPU they ran on (the Unsloth table's budgets, read as
    peaks, are upper bounds: the run fitted). A stack's range reaches an observed error at each end: of fewer than
    20 peaks, its largest (the range is never narrower than the errors it was made from)."""
    report = validation.cross_validate()
    assert len(report.cases) >= 90 and set(report.stacks()) >= {"hf-trainer", "litgpt", "torchtune", "unsloth"}
    assert report.median_error() <= 1.2
    assert report.point_below_share() <= 0.07
    assert report.optimistic_share() <= 0.05
    assert len(report.said_not_to_fit()) <= 2
    for name, constants in report.fitted.items():
        errors = [r for c, r in zip(report.cases, report.fitted_ratios, strict=True) if c.stack == name]
        if name and 0 < len(errors) < 20:
            assert constants.range_low <= min(errors) and max(errors) <= constants.range_high, name


def test_the_peaks_kept_out_of_every_fit_fall_inside_the_shipped_ranges():
    """Published peaks no fit reads (LitGPT's March 2024 TinyLlama LoRA and QLoRA, the QLoRA above the LoRA as the
    bitsandbytes of then kept each 4-bit layer's input): each is inside the range the shipped constants give it, never
    below 0.8x, and its run is not said not to fit its card."""
    found = validation.held_out()
    assert len(found) >= 2
    fitted = {(c.label, c.peak_gb) for c in validation.load_cases()}
    for item in found:
        assert (item.case.label, item.case.peak_gb) not in fitted
        assert item.in_range and item.ratio >= 0.8, item.case.label
        assert item.footprint.verdict(item.case.gpu_memory_gb) != memory.Fit.NO
    lora, qlora = sorted(found, key=lambda f: f.case.peak_gb)
    assert qlora.footprint.total_gb > lora.footprint.total_gb


def test_a_peak_below_its_own_jobs_step_floor_is_set_aside_and_named():
    """A published peak below what its stated job's weights, gradients and optimizer states hold at the step (LitGPT's
    config hub: Llama 3.2 3B full fine-tuning in bf16-true at 16.51 GB on one A10G, where those alone are 28.9 GB, its
    tied embedding held and trained twice as LitGPT's model does)
    describes another run: it is left out of every fit and the report says so, with both figures."""
    report = validation.cross_validate()
    named = {c.workload for c in report.set_aside}
    assert "llama-3.2-3b fine-tuning (LitGPT config hub)" in named
    assert all(c.peak_gb < validation.step_floor_gb(c) for c in report.set_aside)
    assert not set(report.cases) & set(report.set_aside)
    assert all(c.peak_gb >= validation.step_floor_gb(c) for c in report.cases)
    from advisor.render.fits import memory_fit_text

    text = memory_fit_text(report)
    assert "16.51 GB published, below the 28.85 GB" in text


def test_the_maintainers_script_refits_without_writing_unless_asked(tmp_path):
    """scripts/maintain.py (the maintainers' commands, outside the package) prints each fit's check; nothing in
    advisor/data changes without --write."""
    data = ROOT / "advisor" / "data"
    before = {p.name: p.read_bytes() for p in data.glob("*.yaml")}
    for command, expected in (("memory-fit", "kept out of every fit"), ("fp8-fit", "MLPerf Training")):
        done = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "maintain.py"), command],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert expected in done.stdout
    assert {p.name: p.read_bytes() for p in data.glob("*.yaml")} == before


def test_the_shipped_fit_is_the_cross_validation():
    """advisor/data/llm_memory_fit.yaml holds the constants and ranges the cross-validation gives (re-fit:
    python scripts/maintain.py memory-fit --write)."""
    report = validation.cross_validate()
    assert memory.load_fit() == report.fitted


def test_fits_tight_and_does_not_fit_follow_the_range():
    job = job_from_options(load_presets()["llama-3.1-8b"], "qlora", 2048, 1, checkpointing=True)
    footprint = memory.predict(job)
    stated = memory.card_gb(1.0)  # a card's stated GB are binary: its memory in the footprint's decimal GB
    assert stated == pytest.approx(1.073741824)
    assert footprint.verdict(footprint.high_gb / memory.USABLE / stated + 0.01) == memory.Fit.FITS
    assert footprint.verdict(footprint.total_gb / stated) == memory.Fit.TIGHT
    assert footprint.verdict(footprint.low_gb * 0.99 / stated) == memory.Fit.NO
    largest = memory.largest_seq_len(job, 24)
    assert largest % 128 == 0
    longer = job_from_options(load_presets()["llama-3.1-8b"], "qlora", largest + 128, 1, checkpointing=True)
    assert memory.predict(longer).verdict(24) != memory.Fit.FITS
    fitting = job_from_options(load_presets()["llama-3.1-8b"], "qlora", largest, 1, checkpointing=True)
    assert memory.predict(fitting).verdict(24) == memory.Fit.FITS


def test_each_bound_has_its_share_of_a_language_model_result(shipped_frame, shipped_catalog):
    """The shares of the predicted time by bound add up to the whole. Qwen's small LoRA rows (1.0 s an iteration at
    256 to 1,024 tokens alike) are launch-bound: the kernels they launch decide a third of their time or more, and
    they make the range of a launch floor; MPT 30B's pre-training steps are decided by their arithmetic."""
    from advisor.perf import calibration, estimates

    samples = estimates.calibration_samples(shipped_frame, shipped_catalog)
    fit = calibration.fit(samples)
    language = [s for s in samples if s.model]
    for sample in language:
        shares = fit.shares(sample.work, sample.device, sample.precision, sample.workload)
        assert sum(shares.values()) == pytest.approx(1.0)
    launch_bound = {s.model for s in language if crossval.launch_bound(fit, s)}
    assert launch_bound and launch_bound <= {"qwen-1.8b", "qwen-7b", "qwen-14b"}
    for sample in (s for s in language if s.model == "mpt-30b"):
        shares = fit.shares(sample.work, sample.device, sample.precision, sample.workload)
        assert max(shares, key=shares.get) == "arithmetic"


def test_the_llm_crossval_file_has_every_situation():
    widths = crossval.load_widths()
    assert set(widths) == set(crossval.SITUATIONS)
    assert all(w > 0 for w in widths.values())


def _cli(*args: str) -> subprocess.CompletedProcess:
    """The command line run in this process (``python -m advisor`` as a process is tested in test_cli): its exit
    status and what it printed. An exception a user's mistake raises fails the test rather than print a traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["--profiles", str(SHIPPED), *args])
    return subprocess.CompletedProcess(["advisor", *args], status, out.getvalue(), err.getvalue())


def test_estimate_model_config_answers_the_buyers_question():
    """'Can I fine-tune Llama 3.1 8B with LoRA on an RTX 4090, how long for 10,000 examples of 2,048 tokens, and would
    renting an H100 be cheaper?' as rows with fits, memory, tokens/s, the run's time and its rented cost."""
    done = _cli(
        "estimate",
        "--model-config",
        "llama-3.1-8b",
        "--method",
        "lora",
        "--seq-len",
        "2048",
        "--tokens",
        "10000x2048",
        "--checkpointing",
        "auto",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    rows = {(r["catalog_id"], r["devices"]): r for r in json.loads(done.stdout)}
    rtx, h100 = rows[("rtx-4090", 1)], rows[("h100-sxm", 1)]
    for row in (rtx, h100):
        assert row["fits"] in ("fits", "tight", "does not fit")
        assert row["memory_low_gb"] < row["memory_gb"] < row["memory_high_gb"]
        assert row["tokens_per_second"] == pytest.approx(20_480_000 / row["seconds_estimate"])
        assert row["low"] < row["seconds_estimate"] < row["high"]
    assert rtx["checkpointing"] is True  # auto: it does not fit 24 GB without it
    assert h100["checkpointing"] is False and h100["fits"] == "fits"
    assert h100["rental_cost_usd"] == pytest.approx(h100["rental_usd_per_hour"] * h100["high"] / 3600)
    text = _cli("estimate", "--model-config", "Llama 3.1 8B", "--tokens", "10000x2048", "--gpu", "h100-sxm")
    assert text.returncode == 0 and "Cheapest rented: H100 SXM5 80GB" in text.stdout


def test_the_newest_consumer_cards_are_estimated_in_mixed_precision():
    done = _cli("estimate", "--model-config", "qwen2.5-7b", "--method", "qlora", "--json")
    rows = {r["catalog_id"]: r for r in json.loads(done.stdout)}
    for gpu in ("rtx-5080", "rtx-5090"):
        assert rows[gpu]["precision"] == "mixed_bfloat16"


def test_a_wrong_model_config_is_one_line_and_exit_1(tmp_path):
    done = _cli("estimate", "--model-config", "no-such-model")
    assert done.returncode == 1 and "Traceback" not in done.stderr and "--model-config" in done.stderr
    bad = tmp_path / "config.json"
    bad.write_text("[1, 2]")
    done = _cli("estimate", "--model-config", str(bad))
    assert done.returncode == 1 and "not a model configuration" in done.stderr


SHARED = ROOT.parent / "shared" / "data" / "published_2026.yaml"  # beside a checkout of the project's workspace


def test_the_shipped_llm_data_is_what_the_import_script_makes():
    """Every shipped memory case builds its job on a preset and a GPU of known memory, every collection workload is
    a preset's job; where the shared reference data is beside the checkout, the import reproduces both files."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import import_published_llm as script

    shipped = load_yaml((ROOT / "advisor" / "data" / "llm_memory_peaks.yaml").read_text(encoding="utf-8"))
    recorded = load_yaml((ROOT / "advisor" / "data" / "stack_memory_peaks.yaml").read_text(encoding="utf-8"))
    assert len(shipped["cases"]) + len(recorded["cases"]) == len(validation.load_cases()) >= 90
    assert all(c["method"] in {m.value for m in Method} and c["gpu_memory_gb"] > 0 for c in shipped["cases"])
    collection = load_yaml((ROOT / "profiles" / "published-llm-2026.yaml").read_text(encoding="utf-8"))
    names = {m.name for m in load_presets().values()}
    assert all(w["name"].split(",")[0] in names for w in collection["workloads"].values())
    if SHARED.exists():
        rows = load_yaml(SHARED.read_text(encoding="utf-8"))
        assert shipped["cases"] == script.memory_cases(rows)
        assert collection == load_yaml(script.collection.dump(script.build_collection(rows)))


def test_recommend_model_config_names_the_cheapest_way_that_fits():
    done = _cli(
        "recommend",
        "--model-config",
        "llama-3.1-8b",
        "--method",
        "qlora",
        "--tokens",
        "10000x2048",
        "--budget",
        "3000",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    choice = json.loads(done.stdout)
    assert choice["best"]["fits"] == "fits" and choice["best"]["price_usd"] <= 3000
    assert choice["rent"]["fits"] == "fits" and choice["break_even_runs"] > 1
    cost = json.loads(
        _cli("recommend", "--model-config", "llama-3.1-8b", "--tokens", "10000x2048", "--goal", "cost", "--json").stdout
    )
    assert cost["best"]["rental_cost_usd"] == min(r["rental_cost_usd"] for r in [cost["best"], cost["rent"]])
    missing = _cli("recommend")
    assert missing.returncode == 1 and "--current ID is required" in missing.stderr


def test_fsdp_shards_what_every_gpu_would_otherwise_hold():
    """With --fsdp a GPU holds its share of the weights, gradients and optimizer state and two gathered blocks;
    the activations stay whole. Llama 3.1 70B full fine-tuning does not fit one H100 nor, with fp32 master weights
    and AdamW, eight of them sharded (22 bytes a weight / 8 = 194 GB): it needs more GPUs, and 32 fit."""
    job = job_from_options(load_presets()["llama-3.1-70b"], "full", 4096, 1, checkpointing=True)
    whole, eight, many = memory.predict(job), memory.predict(job, shards=8), memory.predict(job, shards=32)
    assert eight.activations_gb == whole.activations_gb
    assert eight.optimizer_gb == pytest.approx(whole.optimizer_gb / 8)
    assert eight.verdict(80) == memory.Fit.NO and many.verdict(80) == memory.Fit.FITS
    done = _cli(
        "estimate",
        "--model-config",
        "llama-3.1-70b",
        "--method",
        "lora",
        "--devices",
        "2",
        "--fsdp",
        "--gpu",
        "a100-80gb-sxm4",
        "--json",
    )
    rows = {r["devices"]: r for r in json.loads(done.stdout)}
    assert rows[2]["memory_gb"] < rows[1]["memory_gb"] and "FSDP" in rows[2]["basis"]


@pytest.mark.slow
def test_the_shipped_operation_counts_are_a_real_steps():
    """advisor/data/llm_operations.yaml holds what a real step launches: one block of a Llama in transformers with
    PEFT's LoRA on every linear layer and activation checkpointing, counted again here (re-count:
    python scripts/count_llm_operations.py --write)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("count_llm_operations", ROOT / "scripts" / "count_llm_operations.py")
    counting = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(counting)
    shallow, deep = (counting.count_step(depth, "lora", True) for depth in counting.DEPTHS)
    shipped = operations.load_counts()["lora"]["checkpointing"]
    assert (deep - shallow) / (counting.DEPTHS[1] - counting.DEPTHS[0]) == shipped["per_block"]
    assert operations.per_micro_batch(24, full=False, checkpointing=True) == 24 * shipped["per_block"] + shipped["rest"]
