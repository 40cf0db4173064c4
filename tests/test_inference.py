"""Inference: each attention kind's cache formula against real transformers caches, the memory verdicts, the speed
model's cross-validated accuracy, and the command's answers and refusals."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.infer.architecture import model_from_mapping, resolve_inference_model
from advisor.infer.job import make_job
from advisor.infer.serving_memory import memory_verdict

BASE = {
    "num_hidden_layers": 4,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 128,
    "max_position_embeddings": 256,
    "tie_word_embeddings": False,
}
# one tiny config per attention kind, built with transformers on the CPU
KINDS = {
    "grouped-query": dict(BASE, model_type="llama", num_key_value_heads=2),
    "multi-query": dict(BASE, model_type="llama", num_key_value_heads=1),
    "explicit head size": dict(BASE, model_type="qwen3", num_key_value_heads=2, head_dim=32),
    "sliding window": dict(BASE, model_type="mistral", num_key_value_heads=2, sliding_window=8),
    "interleaved local/global (Gemma 2)": dict(
        BASE, model_type="gemma2", num_key_value_heads=2, head_dim=16, sliding_window=8
    ),
    "local:global pattern (Gemma 3)": dict(
        BASE,
        model_type="gemma3_text",
        num_hidden_layers=6,
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=8,
        sliding_window_pattern=3,
    ),
    "latent (DeepSeek V3)": dict(
        BASE,
        model_type="deepseek_v3",
        num_key_value_heads=4,
        q_lora_rank=32,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=8,
        v_head_dim=12,
        moe_intermediate_size=32,
        n_routed_experts=4,
        n_shared_experts=1,
        num_experts_per_tok=2,
        first_k_dense_replace=1,
        n_group=1,
        topk_group=1,
    ),
    "linear hybrid (Qwen3-Next)": dict(
        BASE,
        model_type="qwen3_next",
        num_key_value_heads=2,
        head_dim=16,
        moe_intermediate_size=32,
        num_experts=4,
        num_experts_per_tok=2,
        shared_expert_intermediate_size=32,
        full_attention_interval=2,
        linear_conv_kernel_dim=4,
        linear_key_head_dim=8,
        linear_value_head_dim=8,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
    ),
    "mixture of experts (Mixtral)": dict(
        BASE, model_type="mixtral", num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2
    ),
}


def _cache_elements(cache) -> int:
    import torch

    total = 0
    for layer in cache.layers:
        for name in ("keys", "values"):
            tensor = getattr(layer, name, None)
            if isinstance(tensor, torch.Tensor):
                total += tensor.numel()
        for name in ("conv_states", "recurrent_states"):
            states = getattr(layer, name, None)
            states = list(states.values()) if isinstance(states, dict) else states
            if isinstance(states, list | tuple):
                total += sum(s.numel() for s in states if isinstance(s, torch.Tensor))
    return total


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_the_cache_formula_equals_real_tensors(kind):
    """The formula's elements equal what a real transformers model keeps after N tokens, before and past a window
    (transformers keeps window - 1 tokens of a sliding layer: its window_extra is -1), and the weights it counts are
    the model's within 6 % (the norms and small gates left out)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = KINDS[kind]
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    described = model_from_mapping(config, kind)
    for tokens in (5, 20):
        with torch.no_grad():
            out = model(torch.randint(0, config["vocab_size"], (1, tokens)), use_cache=True)
        assert _cache_elements(out.past_key_values) == described.kv_elements(tokens, window_extra=-1), tokens
    real = sum(p.numel() for p in model.parameters())
    assert abs(described.parameters / real - 1) < 0.06


def test_the_presets_add_up_to_their_published_sizes():
    """Total and active weights of the mixture-of-experts presets as their cards state them: the total within 8 %,
    the active within 20 % (cards round "A3B"; the output layer a token reads is counted here)."""
    stated = {
        "deepseek-v3": (671, 37),
        "mixtral-8x7b": (46.7, 12.9),
        "gpt-oss-120b": (117, 5.1),
        "qwen3-next-80b-a3b": (80, 3),
        "qwen3-30b-a3b": (30.5, 3.3),
        "qwen3-235b-a22b": (235, 22),
    }
    for name, (total, active) in stated.items():
        model = resolve_inference_model(name)
        assert abs(model.parameters / 1e9 / total - 1) < 0.08, name
        assert abs(model.active_parameters / 1e9 / active - 1) < 0.2, name


def test_a_kind_not_described_is_refused_with_its_field():
    with pytest.raises(AdvisorError, match="attn_layer_period"):
        model_from_mapping(dict(BASE, model_type="jamba", attn_layer_period=8), "config.json")
    with pytest.raises(AdvisorError, match="layer_types: chunked_attention not described"):
        model_from_mapping(dict(BASE, layer_types=["chunked_attention"] * 4), "config.json")
    with pytest.raises(AdvisorError, match="hidden_size: missing"):
        model_from_mapping({"num_hidden_layers": 2}, "config.json")


def test_memory_verdicts_and_capacity():
    """An 8B model in 16 bits fits an 80 GB card at 8k and not an 8 GB one; the most sequences and the longest
    context agree with the cache per token (128 KiB a token for Llama 3.1 8B)."""
    model = resolve_inference_model("llama-3.1-8b")
    assert model.kv_elements(1) * 2 == 32 * 2 * 8 * 128 * 2
    job = make_job(model, "vllm", "bf16", "16bit", prompt=7168, output=1024)
    big, small = memory_verdict(job, 80), memory_verdict(job, 8)
    assert big.verdict == "fits" and small.verdict == "does not fit"
    room = big.budget_bytes - big.weights_bytes - big.reserve_bytes
    assert big.most_sequences == int(room // job.kv_bytes(8192))
    assert big.longest_context == model.max_context == 131072  # the model's own maximum binds on 80 GB
    card = memory_verdict(job, 24)  # on 24 GB the memory binds
    room = card.budget_bytes - card.weights_bytes - card.reserve_bytes
    assert job.kv_bytes(card.longest_context) <= room < job.kv_bytes(card.longest_context + 16)
    fp8 = make_job(model, "vllm", "bf16", "fp8", prompt=7168, output=1024)
    assert memory_verdict(fp8, 80).most_sequences >= 2 * big.most_sequences - 1


def test_a_sliding_window_caps_the_cache():
    mistral = resolve_inference_model("mistral-7b")
    assert mistral.kv_elements(32768) == mistral.kv_elements(4096)
    gemma = resolve_inference_model("gemma-3-27b")
    assert gemma.kv_elements(65536) < 0.25 * 62 * gemma.layers[-1].per_token * 65536


def test_an_engine_that_applies_no_window_keeps_every_token_and_says_so():
    """TensorRT-LLM keeps a sliding layer's whole sequence (engines.yaml: window_extra null); vLLM caps it."""
    from advisor.render.inference import model_and_load

    mistral = resolve_inference_model("mistral-7b")
    whole = make_job(mistral, "tensorrt-llm", "bf16", None, prompt=30000, output=1000)
    capped = make_job(mistral, "vllm", "bf16", None, prompt=30000, output=1000)
    assert whole.keeps_whole_windows and not capped.keeps_whole_windows
    assert whole.kv_bytes(31000) > 7 * capped.kv_bytes(31000)
    assert "keeps every token of the sliding layers" in model_and_load(whole)[1]
    assert "sliding layers" not in model_and_load(capped)[1]
    llama = make_job(resolve_inference_model("llama-3.1-8b"), "tensorrt-llm", "bf16", None)
    assert not llama.keeps_whole_windows


def test_refusals_name_what_would_work():
    model = resolve_inference_model("llama-3.1-8b")
    with pytest.raises(AdvisorError, match=r"llama\.cpp does not run awq-int4 weights .*q4_k_m"):
        make_job(model, "llama.cpp", "awq-int4", None)
    with pytest.raises(AdvisorError, match=r"over Mistral 7B v0\.1.s own maximum of 32,768"):
        make_job(resolve_inference_model("mistral-7b"), "vllm", None, None, prompt=40000, output=1)


def test_decode_speed_cross_validated_within_its_targets():
    """Leaving each GPU out (beta fitted again in each fold, on the other GPUs alone): single-stream decode within 1.5x
    on every row, median within 1.15x, ranks kept, on 13 GPUs or more. The A100 SXM4's F16 run of the May 2024
    notebooks (42 % of its bandwidth, llama.cpp's numa_balancing warning printed) was past 1.5x before decode's
    bandwidth exponent; now every row is within the target."""
    from advisor.infer.speed import crossval, error_summary
    from advisor.store.catalog import load_catalog

    rows = crossval(load_catalog())
    summary = error_summary(rows)["decode"]
    assert summary["rows"] >= 35 and len({r.held_out for r in rows if r.metric == "decode"}) >= 13
    assert summary["median"] <= 1.15 and summary["p90"] <= 1.3 and summary["spearman"] >= 0.9
    assert summary["worst"] <= 1.5


def test_a_wider_memory_system_reaches_a_smaller_share_within_its_kind_and_no_trend_past_the_evidence(
    shipped_catalog,
):
    """Decode's bandwidth trend: beta fitted where an engine's rows span several bandwidths (llama.cpp's), 0 where
    they do not (transformers, measured on one H200: beta and k cannot be told apart); the memory kind's factor where
    the rows hold two kinds (llama.cpp's GDDR cards and the A100s' and H100 PCIe's HBM: at one user HBM reaches less
    of its bandwidth). Outside the bandwidths its kind's rows span, the nearest edge's scale: a GDDR card faster than
    every fitted one (the RTX 5090, 1,792 GB/s) reads as the fastest of them, never as an HBM card of its bandwidth;
    an 8 TB/s B200 as the fastest fitted HBM card; the DGX Spark (LPDDR, no rows of its kind) at all the rows' low
    edge."""
    from advisor.infer.speed import NO_TREND, bandwidth_scale, engine_fits

    fits = engine_fits(shipped_catalog)
    trend, other = fits["llama.cpp"].bandwidth_trend, fits["transformers"].bandwidth_trend
    assert 0 < trend.exponent <= 0.8 and other.exponent == 0 and other.factors == ()
    assert trend.span_of("gddr") == (448, 1008) and trend.span_of("hbm") == (1935, 2039)  # RTX 3070..4090, A100s
    assert [kind for kind, _ in trend.factors] == ["hbm"] and trend.factor_of("hbm") > 1
    gpus = shipped_catalog.by_id()
    beta, hbm = trend.exponent, trend.factor_of("hbm")
    assert bandwidth_scale(gpus["rtx-5090"], trend) == pytest.approx((1008 / 1000) ** beta)
    assert bandwidth_scale(gpus["rtx-5090"], trend) == bandwidth_scale(gpus["rtx-4090"], trend)
    assert bandwidth_scale(gpus["b200"], trend) == pytest.approx(hbm * (2039 / 1000) ** beta)
    assert bandwidth_scale(gpus["dgx-spark"], trend) == pytest.approx((448 / 1000) ** beta)
    assert bandwidth_scale(gpus["b200"], NO_TREND) == 1.0  # the hardware's bound: no scale


def test_a_peak_beyond_the_cards_power_is_not_reached_in_prefill(shipped_catalog):
    """Prefill's ceiling of TFLOPS a watt: fitted where an engine's prefill rows span cards of several peaks per watt
    (llama.cpp's: an RTX 3090 at 0.41, an H100 PCIe at 2.16), none for transformers (one H200); it slows the
    cards whose tensor peak outruns their power and no card below it, and the held-out prefill meets the issue's
    median (25 %) where the tensor peak alone did not (1.33x)."""
    from advisor.infer.speed import compute_scale, crossval, engine_fits, error_summary

    fits = engine_fits(shipped_catalog)
    per_watt = fits["llama.cpp"].tflops_per_watt
    assert 0 < per_watt <= 2 and fits["transformers"].tflops_per_watt == 0
    gpus = shipped_catalog.by_id()
    job = make_job(resolve_inference_model("llama-3-8b"), "llama.cpp", "q4_k_m", None)
    assert compute_scale(gpus["rtx-3090"], job, per_watt) == 1.0  # 143 TFLOPS of 350 W: under the ceiling
    assert compute_scale(gpus["h100-pcie"], job, per_watt) == pytest.approx(756.4 / (per_watt * 350), rel=0.01)
    assert compute_scale(gpus["h100-pcie"], job, 0.0) == 1.0  # the hardware's bound: no ceiling
    prefill = error_summary(crossval(shipped_catalog))["prefill"]
    assert prefill["median"] <= 1.25 and prefill["p90"] <= 1.7


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    from advisor.cli import main

    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_answers_and_refuses(capsys):
    status, out, err = _run(
        capsys,
        "estimate",
        "--model-config",
        "llama-3.1-8b",
        "--inference",
        "--gpu",
        "rtx-4090",
        "--engine",
        "llama.cpp",
        "--weights",
        "q4_k_m",
        "--json",
    )
    assert status == 0, err
    (row,) = json.loads(out)
    assert row["fits"] == "fits" and row["range_factor"] > 1
    assert 50 < row["single_stream_tokens_per_s"] < 400
    status, out, err = _run(
        capsys,
        "estimate",
        "--model-config",
        "llama-3.1-8b",
        "--inference",
        "--engine",
        "llama.cpp",
        "--weights",
        "awq-int4",
    )
    assert status == 1 and "Traceback" not in err and "does not run awq-int4" in err
    status, out, err = _run(capsys, "estimate", "--inference")
    assert status == 1 and "--model-config" in err


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--hours-per-week", "0", "--hours-per-week: must be more than 0 and at most 168 (the hours in a week); got 0"),
        ("--hours-per-week", "500", "at most 168 (the hours in a week); got 500"),
        ("--hours-per-week", "nan", "--hours-per-week: must be"),
        ("--kwh-price", "-0.1", "--kwh-price: must be a number, 0 or more; got -0.1"),
        ("--lifetime-years", "0", "--lifetime-years: must be more than 0"),
        ("--api-usd-per-million", "inf", "--api-usd-per-million must be a number more than 0, got inf"),
    ],
)
def test_an_owners_costs_out_of_bounds_are_one_line_errors(capsys, flag, value, said):
    """A week has 168 hours; a card that serves none, or energy at a negative price, has no cost a million tokens
    (0 hours once divided by zero and printed a traceback; 500 hours priced tokens below what a card can earn)."""
    job = ["estimate", "--model-config", "llama-3.1-8b", "--inference", "--gpu", "rtx-4090"]
    status, out, err = _run(capsys, *job, flag, value)
    assert status == 1 and not out and "Traceback" not in err
    assert said in err and err.count("\n") == 1


def test_owning_against_renting_the_same_gpu_says_after_how_long_it_pays(capsys, shipped_catalog):
    """The cheapest GPU a million tokens owned, bought against renting the same GPU: its price over what an hour's
    rental saves beyond its energy is the hours after which owning costs less; past the owner's years at their hours
    a week, renting costs less (said so); a GPU without a price or a rental has no such line."""
    from advisor.infer.token_costs import CostInputs, buy_or_rent

    gpu = shipped_catalog.by_id()["rtx-5090"]
    job = make_job(resolve_inference_model("llama-3.1-8b"), "vllm", "bf16", "16bit", users=16)
    found = buy_or_rent(job, gpu, 1000.0, CostInputs())
    energy = gpu.value("board_power_w") / 1000 * 0.15
    hours = gpu.price.usd / (gpu.best_rental.usd_per_hour - energy)
    assert found.hours == pytest.approx(hours) and found.weeks == pytest.approx(hours / 40)
    assert found.million_tokens == pytest.approx(hours * 3600 * 1000 / 1e6) and found.lifetime_hours == 3 * 52 * 40
    assert buy_or_rent(job, shipped_catalog.by_id()["rtx-pro-6000"], 1000.0, CostInputs()) is None  # no rental
    asked = ["estimate", "--model-config", "llama-3.1-8b", "--inference", "--users", "16", "--gpu", "rtx-5090"]
    status, out, err = _run(capsys, *asked)
    assert status == 0, err
    assert "Buying the GeForce RTX 5090 against renting it on RunPod: owning pays for itself after " in out
    status, out, err = _run(capsys, *asked, "--hours-per-week", "5")
    assert "renting costs less over 3 years at 5 h a week (owning pays for itself after " in out


def test_the_cost_chart_puts_each_gpus_speed_against_its_cost_owned_and_rented(shipped_catalog):
    from advisor.infer.estimate import inference_rows

    """One point per GPU and way of paying (owned, rented) for the GPUs that hold the job with a speed and a cost, the
    COST_CHART_GPUS cheapest; none without any (a Mac alone: one user's decode only, no point)."""
    from advisor.render.inference import COST_CHART_GPUS, cost_speed_chart

    job = make_job(resolve_inference_model("llama-3.1-8b"), "vllm", "bf16", "16bit", users=8)
    rows = inference_rows(job, shipped_catalog)
    spec = cost_speed_chart(rows)
    points = spec["datasets"]["points"]
    assert set(points["kind"]) == {"owned", "rented"} and points["gpu"].nunique() <= COST_CHART_GPUS
    card = points[(points["gpu"] == "GeForce RTX 4090") & (points["kind"] == "rented")]
    row = next(r for r in rows if r.catalog_id == "rtx-4090")
    assert list(card["usd"]) == [row.usd_per_million_rented]
    assert list(card["tokens_per_s"]) == [row.total_output_tokens_per_s]
    mac = make_job(resolve_inference_model("llama-3.1-8b"), "llama.cpp", "q4_k_m", None)
    assert cost_speed_chart(inference_rows(mac, shipped_catalog, ["mac-studio-m4-max-36gb"])) is None


def test_the_owners_costs_are_checked_by_their_fields_and_priced_as_asked(shipped_catalog):
    """``CostInputs`` refuses by the field's name (the CLI says it as its option, the app as its label); the owned
    cost of a million tokens falls as the hours a week rise and grows with the price of energy."""
    from advisor.errors import InputError
    from advisor.infer.token_costs import CostInputs, million_token_costs

    for bad in ({"hours_per_week": 168.5}, {"lifetime_years": -1.0}, {"kwh_price": float("inf")}, {"kwh_price": "x"}):
        with pytest.raises(InputError) as refused:
            CostInputs(**bad)
        assert refused.value.field == next(iter(bad))
    job = make_job(resolve_inference_model("llama-3.1-8b"), "vllm", "bf16", "16bit")
    gpu = shipped_catalog.by_id()["rtx-4090"]
    owned = {
        hours: million_token_costs(job, gpu, 100.0, CostInputs(hours_per_week=hours))[0] for hours in (10, 40, 168)
    }
    assert owned[10] > owned[40] > owned[168] > 0
    dearer = million_token_costs(job, gpu, 100.0, CostInputs(kwh_price=0.45))[0]
    assert dearer > owned[40]


def test_several_gpus_are_asked_and_a_bound_says_its_figures_are_limits(capsys):
    """``--gpu`` repeated or comma-separated answers each GPU asked, once; an engine without measurements of one user
    (SGLang here, measured under load only) shows its tokens/s as ceilings and its times, costs and the users it needs
    against an API as floors, in the picks and in every cell, while a fitted engine's figures carry no such mark."""
    asked = ["--gpu", "rtx-4090,rtx-3090", "--gpu", "RTX 4090", "--gpu", "h100-sxm5-80gb"]
    job = ["estimate", "--model-config", "llama-3.1-8b", "--inference", "--users", "32", *asked]
    job_sglang = [*job, "--engine", "sglang"]
    status, out, err = _run(capsys, *job_sglang, "--json")
    assert status == 0, err
    rows = json.loads(out)
    assert sorted(r["gpu"] for r in rows) == ["GeForce RTX 3090", "GeForce RTX 4090", "H100 SXM5 80GB"]
    assert not any(r["fitted"] for r in rows)
    status, out, err = _run(capsys, *job_sglang, "--api-usd-per-million", "0.2")
    assert status == 0, err
    assert "at most" in out and "the hardware's bound" in out
    assert "owned: " in out and "at least $" in out.split("owned: ")[1].splitlines()[0]
    assert "from at least " in out
    h100 = next(line for line in out.splitlines() if line.startswith("H100 SXM5 80GB"))
    assert h100.count(">= ") == 4 and h100.count("<= ") == 2  # TTFT, TPOT, both costs; one stream, all users
    status, out, err = _run(capsys, *job, "--engine", "llama.cpp", "--weights", "q4_k_m")
    assert status == 0, err
    assert "at most" not in out and "at least" not in out
    h100 = next(line for line in out.splitlines() if line.startswith("H100 SXM5 80GB"))
    assert ">= " not in h100 and "<= " not in h100
    status, out, err = _run(capsys, "estimate", "--gpu", "rtx-4090,not-a-gpu")
    assert status == 1 and "not-a-gpu" in err and "Traceback" not in err
    # recommend answers one GPU: a second is refused, never the last silently kept
    status, out, err = _run(capsys, "recommend", "--model-config", "llama-3.1-8b", "--gpu", "rtx-4090", "--gpu", "x")
    assert status == 1 and "names one GPU here" in err and not out


def _write_gguf(path, extra: dict | None = None) -> None:
    """A small real GGUF file: a Llama of 2 blocks with Q8_0 tensors (quantized by the gguf package itself)."""
    np = pytest.importorskip("numpy")
    gguf = pytest.importorskip("gguf")
    from gguf.quants import quantize

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    for add, value in [
        ("add_block_count", 2),
        ("add_embedding_length", 64),
        ("add_head_count", 4),
        ("add_head_count_kv", 2),
        ("add_feed_forward_length", 128),
        ("add_context_length", 4096),
        ("add_vocab_size", 256),
        ("add_key_length", 16),
        ("add_value_length", 16),
    ]:
        getattr(writer, add)(value)
    for key, value in (extra or {}).items():
        writer.add_uint32(key, value)
    rng = np.random.default_rng(0)

    def q8(name: str, shape: tuple[int, int]) -> None:
        data = quantize(rng.random(shape, dtype=np.float32), gguf.GGMLQuantizationType.Q8_0)
        writer.add_tensor(name, data, raw_shape=data.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)

    for block in range(2):
        for name, shape in [
            ("attn_q", (64, 64)),
            ("attn_k", (32, 64)),
            ("attn_v", (32, 64)),
            ("attn_output", (64, 64)),
            ("ffn_gate", (128, 64)),
            ("ffn_up", (128, 64)),
            ("ffn_down", (64, 128)),
        ]:
            q8(f"blk.{block}.{name}.weight", shape)
    q8("token_embd.weight", (256, 64))
    q8("output.weight", (256, 64))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_a_gguf_header_gives_the_model_and_its_exact_weight_bytes(tmp_path):
    from advisor.infer.gguf_file import read_gguf

    path = tmp_path / "tiny.gguf"
    _write_gguf(path)
    model, weights = read_gguf(path)
    assert (model.name, len(model.layers), model.hidden, model.vocab, model.max_context) == (
        "tiny-llama",
        2,
        64,
        256,
        4096,
    )
    assert model.kv_elements(10) == 2 * 10 * 2 * 2 * 16  # layers x tokens x (K, V) x kv heads x key_length
    job = make_job(model, "llama.cpp", weights, None)
    tensors = 2 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 128 * 64) + 2 * 256 * 64  # the weights the file holds
    assert job.weight_bytes() == pytest.approx(tensors * 34 / 32)  # Q8_0: 34 bytes a block of 32, exactly the file's
    with pytest.raises(AdvisorError, match="vLLM does not run a GGUF"):
        make_job(model, "vllm", weights, None)


def test_a_gguf_of_a_kind_not_described_or_not_gguf_is_refused(tmp_path):
    from advisor.infer.gguf_file import read_gguf

    path = tmp_path / "mamba.gguf"
    _write_gguf(path, {"llama.ssm.state_size": 16})
    with pytest.raises(AdvisorError, match=r"llama\.ssm\.state_size: state-space"):
        read_gguf(path)
    text = tmp_path / "notes.gguf"
    text.write_text("not a gguf", encoding="utf-8")
    with pytest.raises(AdvisorError, match="not a readable GGUF file"):
        read_gguf(text)


def test_saturated_throughput_cross_validated_within_its_targets():
    """Leaving each GPU out, TensorRT-LLM's published throughput under maximum load (v0.17 and v1.0, seven GPUs, one to
    eight of them, its mixtures of experts on several GPUs as attention data parallel): median within 1.25x; every
    row within 2x but the B200's Qwen3 30B-A3B (one GPU, over-predicted where the RTX PRO 6000's same runs are not:
    said in benchmarks/README.md). vLLM's ROCm runs, on one GPU, have their own test."""

    from advisor.infer.saturated import crossval_saturated
    from advisor.store.catalog import load_catalog

    catalog = load_catalog()
    rows = [(r, p) for r, p in crossval_saturated(catalog) if r.engine == "tensorrt-llm"]
    factors = [max(p / r.value, r.value / p) for r, p in rows]
    assert len(rows) >= 300 and statistics.median(factors) <= 1.25
    others = [f for (r, _), f in zip(rows, factors, strict=True) if (r.gpu, r.model) != ("b200", "qwen3-30b-a3b")]
    assert max(others) <= 2.0
    # an architecture none of whose GPUs the fit saw (Ampere, Ada, Hopper, Blackwell in turn): median within 1.5x
    gpus = catalog.by_id()
    held = [(r, p) for r, p in crossval_saturated(catalog, by="architecture") if r.engine == "tensorrt-llm"]
    for architecture in {gpus[r.gpu].architecture for r, _ in held}:
        mine = [max(p / r.value, r.value / p) for r, p in held if gpus[r.gpu].architecture == architecture]
        assert statistics.median(mine) <= 1.5, architecture


def test_a_format_that_quantizes_the_activations_runs_its_matrix_products_at_its_own_rate(shipped_catalog):
    """FP8 (W8A8) runs the blocks' matrix products at the FP8 tensor rate, twice the 16-bit one, where the
    architecture has it; NVFP4 is counted at that rate too (engines.yaml says why); weight-only formats (AWQ)
    dequantize to 16 bits; the attention of the prompt stays 16-bit."""
    from advisor.infer.speed import _matrix_peak, _peak_tflops, _prefill_work

    model = resolve_inference_model("llama-3.1-8b")
    gpus = shipped_catalog.by_id()
    h100, b200 = gpus["h100-sxm"], gpus["b200"]
    bf16, fp8 = make_job(model, "tensorrt-llm", "bf16", None), make_job(model, "tensorrt-llm", "fp8", None)
    assert _matrix_peak(h100, fp8) == 2 * _peak_tflops(h100, fp8) == 2 * _matrix_peak(h100, bf16)
    assert _matrix_peak(b200, make_job(model, "tensorrt-llm", "nvfp4", None)) == 2 * _peak_tflops(b200, bf16)
    awq = make_job(model, "vllm", "awq-int4", None)
    assert _matrix_peak(h100, awq) == _peak_tflops(h100, awq)
    short, long = (_prefill_work(fp8, h100, n, 1) / _prefill_work(bf16, h100, n, 1) for n in (128, 32_768))
    assert short == pytest.approx(0.5, abs=0.02) and 0.5 < long < 0.9  # the attention's share grows, at 16 bits


def test_the_asked_users_throughput_counts_their_prompts_as_under_maximum_load(shipped_catalog):
    """Each user's next prompt is computed between the steps, once in its output's steps, in the asked load's output
    tokens a second (and so in the cost of a million tokens) as under maximum load: a prompt-heavy job's users never
    read more than the engine's throughput under maximum load, where before (the steps alone) 32 users of Llama 3.1
    8B at 1,024 + 256 tokens on an A100 read 2,728 tokens a second beside a fitted 1,557 under load."""
    from advisor.infer.estimate import inference_rows

    for engine in ("vllm", "tensorrt-llm", "llama.cpp"):
        job = make_job(resolve_inference_model("llama-3.1-8b"), engine, None, None, users=32)
        for row in inference_rows(job, shipped_catalog, ["a100-80gb-sxm4", "h100-sxm"]):
            s = row.speed
            prefill = s.time_to_first_token_s - 1 / s.single_stream_tokens_per_s
            counted = 32 * 256 / (256 * s.decode_step_s + 32 * prefill)
            assert s.output_tokens_per_s == pytest.approx(counted), (engine, row.gpu)
            assert s.output_tokens_per_s < 32 / s.time_per_output_token_s
            # each user's time per output token: a step and the other 31 users' prompts spread over its 256 tokens
            assert s.time_per_output_token_s == pytest.approx(s.decode_step_s + 31 * prefill / 256)
            if row.saturated_fitted:
                assert row.total_output_tokens_per_s <= row.saturated_tokens_per_s * 1.05, (engine, row.gpu)


def test_a_rate_of_requests_keeps_the_users_littles_law_gives_or_overloads_the_gpu(shipped_catalog, capsys):
    """A steady rate of requests: each GPU serves the users it keeps in flight (the rate times a request's time, in
    whole users), delivers the rate's tokens, and more GPUs than the rate needs are never asked; past what the GPU
    runs at once it is said to be overloaded, with what would help; users and a rate together are refused."""
    from advisor.infer.estimate import inference_rows

    model = resolve_inference_model("llama-3.1-8b")
    users = []
    for rate in (0.2, 1.0, 3.0, 12.0):
        job = make_job(model, "llama.cpp", "q4_k_m", None, rate=rate, output=128)
        (row,) = inference_rows(job, shipped_catalog, ["h100-sxm"])
        found = row.at_rate
        if found.overloaded:
            assert row.speed is None and "overloaded" in row.refused and "--replicas" in row.refused
            users.append(None)
            continue
        assert found.users == max(1, -(-round(rate * found.seconds_per_request, 6) // 1))  # Little's law, whole
        assert row.speed.output_tokens_per_s == pytest.approx(rate * 128)  # what the rate delivers
        assert row.speed.time_per_output_token_s == found.step_s and 0 < found.prefill_share < 1
        users.append(found.users)
    assert users[0] == 1 and users[1] < users[2] and users[-1] is None  # llama.cpp runs a few sequences at once
    asked = ["estimate", "--model-config", "llama-3.1-8b", "--inference", "--requests-per-second"]
    status, out, err = _run(capsys, *asked, "2", "--gpu", "h100-sxm", "--api-usd-per-million", "0.5")
    assert status == 0, err
    assert "2 request(s) a second" in out and "at once)" in out and "queueing" in out
    assert "at this rate costs $" in out  # against an API: the rate's own cost, not a count of users
    status, out, err = _run(capsys, *asked, "900", "--gpu", "rtx-4090")
    assert status == 0 and "No GPU of the catalog carries 900 requests a second" in out
    status, out, err = _run(capsys, *asked, "2", "--users", "4")
    assert status == 1 and "not both" in err and "Traceback" not in err


def test_where_a_job_stopped_fitting_on_a_real_card_is_never_predicted_optimistically():
    """The edges measured on an H200 (advisor/data/inference_results.yaml, fit_edges): the predicted most sequences
    are at most the largest batch that ran, and not below 85 % of it; a batch that ran is never "does not fit"."""
    from advisor.store.catalog import load_catalog
    from advisor.store.parse import safe_load

    data = safe_load((Path(__file__).parent.parent / "advisor" / "data" / "inference_results.yaml").read_text())
    gpus = load_catalog().by_id()
    for engine, gpu, model, weights, prompt, output, ran, failed, _ in data["fit_edges"]:
        job = make_job(resolve_inference_model(model), engine, weights, None, prompt=prompt, output=output, users=1)
        memory_gb = gpus[gpu].value("memory_gb")
        most = memory_verdict(job, memory_gb).most_sequences
        if failed is not None:
            assert 0.85 * ran <= most <= ran, (model, most, ran)
        loaded = make_job(job.model, engine, weights, None, prompt=prompt, output=output, users=ran)
        assert memory_verdict(loaded, memory_gb).verdict != "does not fit" or failed is not None


def test_data_parallel_copies_share_the_users_and_add_up_their_throughput(shipped_catalog, capsys):
    from advisor.cli import main
    from advisor.infer.estimate import inference_rows

    model = resolve_inference_model("llama-3.1-8b")
    one = make_job(model, "vllm", "bf16", None, users=32)
    four = make_job(model, "vllm", "bf16", None, users=32, replicas=4)
    assert (
        four.gpus == 4
        and four.per_copy().users == 8
        and make_job(model, "vllm", None, None, users=9, replicas=2).per_copy().users == 5
    )
    ids = ["h100-sxm", "rtx-4090"]
    by_one = {r.catalog_id: r for r in inference_rows(one, shipped_catalog, ids)}
    by_four = {r.catalog_id: r for r in inference_rows(four, shipped_catalog, ids)}
    eight = {
        r.catalog_id: r for r in inference_rows(make_job(model, "vllm", "bf16", None, users=8), shipped_catalog, ids)
    }
    for gpu in ids:
        copy, alone = by_four[gpu], eight[gpu]  # a copy of four serves 8 users: as one GPU serving 8
        assert copy.memory == alone.memory and copy.speed == alone.speed and copy.replicas == 4
        assert (
            copy.usd_per_million_rented == alone.usd_per_million_rented
        )  # four copies cost four times, make four times
        assert copy.total_output_tokens_per_s == pytest.approx(4 * alone.speed.output_tokens_per_s)
        assert copy.memory.cache_bytes == pytest.approx(by_one[gpu].memory.cache_bytes / 4)
        # at the same users, more copies: each user waits less a token
        assert copy.speed.time_per_output_token_s <= by_one[gpu].speed.time_per_output_token_s
    with pytest.raises(AdvisorError, match="replicas: must be 1 or more"):
        make_job(model, "vllm", None, None, replicas=0)
    assert (
        main(
            [
                "estimate",
                "--model-config",
                "llama-3.1-8b",
                "--inference",
                "--users",
                "32",
                "--replicas",
                "4",
                "--gpu",
                "rtx-4090",
                "--json",
            ]
        )
        == 0
    )
    found = json.loads(capsys.readouterr().out)[0]
    assert found["replicas"] == 4 and found["output_tokens_per_s"] == pytest.approx(
        by_four["rtx-4090"].total_output_tokens_per_s, rel=1e-3
    )


def test_sglang_works_its_share_out_per_card_as_its_source_does(shipped_catalog):
    """SGLang's mem_fraction_static (server_args.py, _handle_gpu_memory_settings): the card's memory less what it
    reserves for activations and CUDA graphs, by tiers of the card's memory; the share holds weights and cache."""
    from advisor.infer.engines import GIB as RULE_GIB
    from advisor.infer.engines import engine_data
    from advisor.infer.serving_memory import GIB, REPORTED_SHARE

    rule = engine_data().engines["sglang"].memory_rule
    h100 = 80 * GIB * REPORTED_SHARE  # what the advisor counts of an "80 GB" card (never more than reported), in bytes
    # 512 MiB + 8,192 prefill tokens x 1.5 MiB + 256 graph batches x 2 MiB + 1 GPU x 128 MiB = 13,440 MiB (> 10 GiB)
    assert rule.share(h100, 1) == round((h100 / 2**20 - 13_440) / (h100 / 2**20), 3) == 0.833
    rtx_4090 = 24 * GIB * REPORTED_SHARE  # below 35 GiB: 2,048 prefill tokens, 24 graph batches
    assert rule.share(rtx_4090, 1) == round((rtx_4090 / 2**20 - 3_760) / (rtx_4090 / 2**20), 3)
    assert rule.share(h100, 8) < rule.share(h100, 1)  # more GPUs: larger graph batches, more reserved
    small = 16 * RULE_GIB * REPORTED_SHARE  # a 16 GB card: 2,048 prefill tokens, 8 graph batches
    assert rule.share(small, 1) == round((small / 2**20 - 3_728) / (small / 2**20), 3)
    job = make_job(resolve_inference_model("llama-3.1-8b"), "sglang", "bf16", None)
    verdict = memory_verdict(job, 80)
    assert verdict.budget_bytes == pytest.approx(verdict.card_bytes * 0.833)
    assert verdict.reserve_bytes == pytest.approx(job.model.vocab * 4)  # its activations are outside the share
    from advisor.infer.estimate import inference_rows

    [row] = inference_rows(job, shipped_catalog, ["mi300x"])
    assert row.runs and "no speed on rocm" in row.refused  # SGLang runs on ROCm; its speed there is not fitted


def test_a_cache_pool_an_engine_logged_is_counted_within_ten_percent_never_optimistic_past_it(shipped_catalog):
    """Logged pools the serving memory model never saw: SGLang's of Qwen3-235B-A22B-FP8 on 4 H100s at
    mem_fraction_static 0.93 (vLLM issue 21348: 367,404 tokens, 8.23 GiB of keys a GPU; measured 1.09x) and vLLM 0.3's
    of Qwen1.5-7B GPTQ on an RTX 3090 (Qwen issue 16: 24,320 tokens after a 32,768-token profiling pass; 0.96x). The
    Qwen3 cache a token is exact: 94 layers x 1 key-value head a GPU x 128 x 2 x 2 bytes, as the log's K size says.
    (The same issue's vLLM pool, with a connector and version unstated, is 1.80x: reported in benchmarks/README.md.)"""
    from advisor.infer.logged_pools import load_logged_pools, predicted_tokens

    pools = {(p.engine, p.model): p for p in load_logged_pools()}
    sglang, dense = pools[("sglang", "qwen3-235b-a22b")], pools[("vllm", "qwen1.5-7b")]
    job = make_job(resolve_inference_model(sglang.model), "sglang", "fp8", None, devices=4)
    assert job.model.kv_elements(1, 0) * job.kv.bytes / 4 == 94 * 128 * 2 * 2
    assert sglang.tokens * 94 * 128 * 2 / 2**30 == pytest.approx(8.23, abs=0.01)  # the logged K size
    for pool in (sglang, dense):
        assert 0.9 <= predicted_tokens(pool, shipped_catalog) / pool.tokens <= 1.1, pool


def test_vllm_runs_four_times_the_sequences_on_a_large_card_but_an_a100_as_its_source_says(shipped_catalog):
    """vLLM's get_batch_defaults: max_num_seqs 1024 where the card reports 70 GiB or more and is not an A100, else
    256; its saturated bound is then a ceiling on an H100 too (at 256 it was below what vLLM's defaults may run)."""
    from advisor.infer.saturated import terms

    engine = make_job(resolve_inference_model("llama-3.1-8b"), "vllm", "bf16", None).engine
    gpus = shipped_catalog.by_id()
    assert engine.batch_limit(78.5, gpus["h100-sxm"].name) == 1024
    assert engine.batch_limit(78.5, gpus["a100-80gb-sxm4"].name) == 256 and engine.batch_limit(23.5, "RTX 4090") == 256
    job = make_job(resolve_inference_model("llama-3.1-8b"), "vllm", "fp8", None, prompt=128, output=128)
    assert terms(job, gpus["h100-sxm"]).batch > 256 and terms(job, gpus["a100-80gb-sxm4"]).batch == 256


def test_mlx_runs_on_apple_only_and_grows_its_cache_in_steps_of_256(shipped_catalog, capsys):
    from advisor.cli import main
    from advisor.infer.estimate import inference_rows, picks

    model = resolve_inference_model("llama-3.1-70b")
    job = make_job(model, "mlx", "mlx-4bit", None, prompt=200, output=100)
    assert job.kv_bytes(300) == job.kv_bytes(512) < job.kv_bytes(513)  # KVCache.step = 256
    assert job.weight_bytes() == pytest.approx(model.parameters * 4.5 / 8, rel=0.01)  # 4 bits + scale and bias / 64
    rows = {r.catalog_id: r for r in inference_rows(job, shipped_catalog, ["mac-studio-m4-max-128gb", "rtx-4090"])}
    assert rows["mac-studio-m4-max-128gb"].runs and not rows["rtx-4090"].runs
    assert rows["rtx-4090"].refused.startswith("MLX (mlx-lm) does not run on cuda GPUs")
    found = picks(list(rows.values()))
    assert found.fastest is None and [r.catalog_id for r in found.fit_without_speed] == ["mac-studio-m4-max-128gb"]
    argv = ["estimate", "--model-config", "llama-3.1-70b", "--inference", "--engine", "mlx", "--weights", "mlx-4bit"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Holds the job, one user's decode only: Mac Studio (M1 Ultra, 64-core GPU, 128 GB) fastest" in text
    assert "GeForce RTX 4090" not in text.split("\n\n")[2]  # the table lists the GPUs the engine runs on
    assert re.search(r"not shown: \d+ GPU\(s\) \(.+ and \d+ more\): MLX \(mlx-lm\) does not run on", text)
    assert main([*argv, "--json"]) == 0
    records = {r["catalog_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert records["rtx-4090"]["runs"] is False and records["mac-studio-m4-max-128gb"]["runs"] is True


def test_mixed_cards_split_a_model_layer_by_layer_as_llama_cpp_does(shipped_catalog, capsys):
    """llama.cpp's default split over several GPUs: by each card's free memory, the output layer counted as one more
    layer; each card holds its layers' weights and caches and its own compute buffer; a token passes the cards in
    turn, so one stream goes no faster than on one card of the kind (the layers add up, they do not overlap)."""
    from advisor.cli import main
    from advisor.infer import speed as speed_model
    from advisor.infer.estimate import engine_fits, inference_rows
    from advisor.infer.mixed import mixed_cards, split_layers

    assert split_layers(80, [24, 24]) == ([41, 39], 1)  # layer il to the first card whose point is above il / 81
    assert split_layers(80, [24, 16]) == ([49, 31], 1)
    assert split_layers(32, [1, 1, 1]) == ([11, 11, 10], 2)
    gpus = shipped_catalog.by_id()
    job = make_job(resolve_inference_model("llama-3.1-70b"), "llama.cpp", "q4_k_m", None, context=8192)
    [alone] = inference_rows(job, shipped_catalog, ["rtx-4090"])
    assert alone.memory.verdict == "does not fit"  # 42 GB of weights
    pair = mixed_cards(job, [gpus["rtx-4090"], gpus["rtx-3090"]], shipped_catalog)
    assert pair.verdict == "fits" and [s.layers for s in pair.shares] == [41, 39] and pair.shares[1].holds_output
    held = sum(s.needed_bytes for s in pair.shares)
    assert held == pytest.approx(
        job.weight_bytes() + job.kv_bytes(8192) + 2 * (job.engine.reserve_fixed_gb * 1e9 + job.activation_bytes())
    )  # the weights and the cache once, a compute buffer on each card
    twins = mixed_cards(job, [gpus["rtx-4090"], gpus["rtx-4090"]], shipped_catalog)
    one_card = speed_model.predict(job, gpus["rtx-4090"], engine_fits(shipped_catalog)["llama.cpp"])
    assert twins.single_stream_tokens_per_s == pytest.approx(one_card.single_stream_tokens_per_s)
    assert pair.single_stream_tokens_per_s < twins.single_stream_tokens_per_s  # the 3090's part is slower
    assert pair.range_factor is not None and pair.why is None
    too_small = mixed_cards(job, [gpus["rtx-4090"], gpus["rtx-4060-ti"]], shipped_catalog)
    assert too_small.verdict == "does not fit"
    for names, message in (
        (["rtx-4090", "mac-studio-m4-max-36gb"], "is a whole machine"),
        (["rtx-4090", "rx-7900-xtx"], "cards of one platform"),
        (["rtx-4090"], "name two GPUs or more"),
    ):
        with pytest.raises(AdvisorError, match=message):
            mixed_cards(job, [gpus[n] for n in names], shipped_catalog)
    vllm = make_job(job.model, "vllm", "bf16", None)
    with pytest.raises(AdvisorError, match=r"costed for llama\.cpp only"):
        mixed_cards(vllm, [gpus["h100-sxm"], gpus["a100-80gb-sxm4"]], shipped_catalog)
    argv = ["estimate", "--model-config", "llama-3.1-70b", "--inference", "--engine", "llama.cpp"]
    argv += ["--weights", "q4_k_m"]
    assert main([*argv, "--context", "8192", "--mixed", "rtx-4090,rtx-3090"]) == 0
    text = capsys.readouterr().out
    assert "Split over GeForce RTX 4090 + GeForce RTX 3090" in text and "39 + output" in text
    assert "Together: fits." in text
    assert main([*argv, "--context", "8192", "--mixed", "rtx-4090,rtx-3090", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["fits"] == "fits" and [c["layers"] for c in record["cards"]] == [41, 39]
    assert main([*argv, "--mixed", "rtx-4090,rtx-4095"]) == 1
    assert "no GPU named 'rtx-4095'" in capsys.readouterr().err


def test_attention_data_parallel_keeps_all_but_the_experts_and_each_gpus_own_caches(shipped_catalog, capsys):
    """Qwen3 30B-A3B (48 layers of 128 experts of 3 x 2,048 x 768 weights) on 8 GPUs: each GPU holds every weight but
    the routed experts and 1/8 of those, and its own sequences' whole caches; the engine's batch limit is each
    GPU's (a scheduler a rank), so it runs 8 times tensor parallelism's 2,048 where the cache holds them."""
    from advisor.cli import main
    from advisor.infer.saturated import sequences_at_once

    model = resolve_inference_model("qwen3-30b-a3b")
    assert model.moe_layers == 48 and model.expert_parameters == 48 * 128 * 3 * 2048 * 768
    sizes = {"prompt": 1000, "output": 1000, "users": 64, "devices": 8}
    tp = make_job(model, "tensorrt-llm", "nvfp4", "fp8", **sizes)
    dp = make_job(model, "tensorrt-llm", "nvfp4", "fp8", **sizes, attention_data_parallel=True)
    experts = model.expert_parameters * dp.weight_bytes() / model.parameters
    assert dp.weight_bytes_per_gpu() == pytest.approx(dp.weight_bytes() - experts * 7 / 8)
    assert tp.weight_bytes_per_gpu() == pytest.approx(tp.weight_bytes() / 8)
    card = shipped_catalog.by_id()["rtx-pro-6000"]
    memory_tp, memory_dp = memory_verdict(tp, card.usable_memory_gb), memory_verdict(dp, card.usable_memory_gb)
    whole = dp.kv_bytes(2000)  # one sequence's cache, every layer
    # tensor parallel: 4 key-value heads over 8 GPUs, one whole head on each (each kept twice, as vLLM does)
    assert memory_tp.cache_bytes == pytest.approx(64 * whole / 4)
    two = make_job(model, "tensorrt-llm", "nvfp4", "fp8", **{**sizes, "devices": 2})
    assert two.kv_bytes_per_gpu(2000) == pytest.approx(whole / 2)
    assert memory_dp.cache_bytes == pytest.approx(8 * whole)  # 8 users a GPU, each cache whole
    assert memory_dp.most_sequences % 8 == 0 and memory_dp.most_sequences > 2048
    assert sequences_at_once(tp, card) == 2048 and sequences_at_once(dp, card) == memory_dp.most_sequences
    argv = ["estimate", "--model-config", "qwen3-30b-a3b", "--inference", "--engine", "tensorrt-llm", "--weights"]
    argv += ["nvfp4", "--kv-cache", "fp8", "--devices", "8", "--gpu", "rtx-pro-6000", "--attention-data-parallel"]
    assert main(argv) == 0
    assert "8 GPU(s) each (attention data parallel: each GPU its own users' attention" in capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["attention_data_parallel"] is True


def test_attention_data_parallel_is_refused_where_it_does_not_apply():
    dense, moe = resolve_inference_model("llama-3.1-8b"), resolve_inference_model("qwen3-30b-a3b")
    with pytest.raises(AdvisorError, match=r"no routed experts to split; .* --replicas N"):
        make_job(dense, "vllm", None, None, devices=2, attention_data_parallel=True)
    with pytest.raises(AdvisorError, match="needs --devices 2 or more"):
        make_job(moe, "vllm", None, None, attention_data_parallel=True)
    with pytest.raises(AdvisorError, match=r"llama.cpp does not run it \(vLLM, TensorRT-LLM, SGLang do\)"):
        make_job(moe, "llama.cpp", "q4_k_m", None, devices=2, attention_data_parallel=True)


def test_published_mixtures_of_experts_on_several_gpus_run_as_attention_data_parallel():
    """TensorRT-LLM's Qwen3 30B-A3B on 2, 4 and 8 RTX PRO 6000s (its command for mixtures of experts sets
    enable_attention_dp), the GPU's rows held out: within 10 % as attention data parallel; the same rows predicted as
    tensor parallel are 12-54 % too slow (a batch limit of 2,048 for the whole group, every cache split)."""
    from dataclasses import replace

    from advisor.infer.saturated import crossval_saturated, fit_saturated, load_saturated, row_job, terms, throughput
    from advisor.store.catalog import load_catalog

    catalog = load_catalog()
    held = [(r, p) for r, p in crossval_saturated(catalog) if r.gpu == "rtx-pro-6000" and r.devices > 1]
    assert len(held) == 14 and all(r.attention_data_parallel for r, _ in held)
    assert all(0.9 <= p / r.value <= 1.1 for r, p in held)
    mine = [r for r in load_saturated() if r.engine == "tensorrt-llm" and r.gpu != "rtx-pro-6000"]
    others = fit_saturated(mine, catalog)
    gpu = catalog.by_id()["rtx-pro-6000"]
    as_tensor_parallel = [
        throughput(terms(row_job(replace(r, attention_data_parallel=False)), gpu), r.osl, others) / r.value
        for r, _ in held
    ]
    assert max(as_tensor_parallel) < 0.9


def test_saturated_runs_no_fit_saw_are_near_the_fit(shipped_catalog):
    """A third party's runs at the engine's defaults (GPUStack's performance lab, A100 80 GB, random prompts of 128 to
    32,000 tokens): TensorRT-LLM's on Qwen3 32B, a model its fit never saw, within 1.2x of the fit. Oracle's vLLM runs
    of Llama 3.1 405B on eight MI300X (a year older than AMD's own runs the ROCm fit rests on, a model whose one-batch
    runs it never saw), from one sequence to 256 at once and under maximum load: within 1.3x. The lab's vLLM runs of
    mixtures of experts at four sequences at once (gpt-oss-120b on an H100, DeepSeek-R1 over eight H200), which no
    fitted run is: 1.15x and 1.59x too fast, within 1.6x. (The lab's vLLM runs under load are fitted: vLLM on CUDA.)"""
    from advisor.infer.saturated import held_out_saturated

    gpus = shipped_catalog.by_id()
    found = held_out_saturated(shipped_catalog)
    limits = {("tensorrt-llm", "cuda"): 1.2, ("vllm", "rocm"): 1.3, ("vllm", "cuda"): 1.6}
    assert {(row.engine, gpus[row.gpu].platform) for row, _, _ in found} == set(limits)
    for row, predicted, bound in found:
        assert not bound, row
        limit = limits[row.engine, gpus[row.gpu].platform]
        assert 1 / limit <= predicted / row.value <= limit, (row, predicted)


def test_vllm_on_cuda_has_its_own_throughput_closer_than_the_bound(shipped_catalog):
    """vLLM on CUDA is fitted on a third party's runs at its defaults (GPUStack's lab: gpt-oss-120b, Qwen3 14B, Qwen3
    32B and Qwen3 235B-A22B on A100 80 GB and H100 SXM, DeepSeek-R1 on eight H200, one and eight GPUs) and a published
    concurrency sweep on an RTX 4090 (Mistral 7B, 4 to 48 sequences at once): four GPUs of three architectures. The
    Hopper cards' matrix work is capped at ``w`` TFLOPS a watt of their 700 W (the H100's prompts run 1.2-1.9x faster
    than the A100's, not its peak's 3.2x), the A100's a little, the 4090's not. Each GPU held out in turn is predicted
    within 3x by the others (the range the fit's figures carry; the issue's 2x is missed), and the A100 runs, held
    out, nearer than the bound. A card none of them is gets
    the fitted figure, under its bound, and, its sweep starting at four sequences at once, one user's and the asked
    load's speeds from the same fit."""
    from advisor.infer.estimate import inference_rows
    from advisor.infer.saturated import (
        SaturatedFit,
        crossval_saturated,
        held_out_error,
        row_job,
        rows_by_engine_platform,
        saturated_fit,
        terms,
        throughput,
    )
    from advisor.infer.speed import peak_per_watt, power_ceiling

    gpus = shipped_catalog.by_id()
    mine = rows_by_engine_platform(shipped_catalog)[("vllm", "cuda")]
    assert {r.gpu for r in mine} == {"a100-80gb-sxm4", "h100-sxm", "h200-sxm", "rtx-4090"} and len(mine) == 41
    fit = saturated_fit(shipped_catalog, "vllm", "cuda")
    assert fit.rows == 41 and fit.architectures == ("Ada", "Ampere", "Hopper")
    ceiling = {
        g: power_ceiling(peak_per_watt(gpus[g], row_job(mine[0])), fit.tflops_per_watt) for g in {r.gpu for r in mine}
    }
    assert ceiling["h100-sxm"] == pytest.approx(ceiling["h200-sxm"], rel=0.01) and ceiling["h100-sxm"] > 1.5
    assert 1.0 < ceiling["a100-80gb-sxm4"] < 1.2 and ceiling["rtx-4090"] == 1.0
    fitted = [throughput(terms(row_job(r), gpus[r.gpu]), r.osl, fit) / r.value for r in mine]
    assert statistics.median(max(f, 1 / f) for f in fitted) <= 1.3
    held = [(r, p) for r, p in crossval_saturated(shipped_catalog) if r in mine]
    assert len(held) == 41
    assert all(1 / 3 <= p / r.value <= 3 for r, p in held), held
    assert held_out_error(shipped_catalog, "vllm", "cuda") == max(max(p / r.value, r.value / p) for r, p in held)
    a100 = [(r, p) for r, p in held if r.gpu == "a100-80gb-sxm4"]
    bounds = [throughput(terms(row_job(r), gpus[r.gpu]), r.osl, SaturatedFit()) for r, _ in a100]
    fitted_error = sorted(abs(math.log(p / r.value)) for r, p in a100)
    bound_error = sorted(abs(math.log(b / r.value)) for (r, _), b in zip(a100, bounds, strict=True))
    assert fitted_error[len(a100) // 2] < bound_error[len(a100) // 2]  # the median error, in logs
    job = make_job(resolve_inference_model("llama-3.1-8b"), "vllm", "bf16", None, users=32)
    [h100] = inference_rows(job, shipped_catalog, ["h100-sxm"])
    bound = throughput(terms(job, gpus["h100-sxm"]), job.output, SaturatedFit())
    assert h100.saturated_fitted and h100.saturated_tokens_per_s < bound
    # its runs of four sequences at once tell a step's fixed cost: one user's speeds and the asked load's come from the
    # same fit, with its held-out range, on one GPU and on eight (its runs'), never on two
    assert h100.load_fit_speed and h100.range_factor == held_out_error(shipped_catalog, "vllm", "cuda")
    assert h100.speed.fitted and 80 < h100.speed.single_stream_tokens_per_s < 221  # the bandwidth's bound: 221
    on_two = make_job(resolve_inference_model("llama-3.1-8b"), "vllm", "bf16", None, users=32, devices=2)
    [two] = inference_rows(on_two, shipped_catalog, ["h100-sxm"])
    assert not two.load_fit_speed and not two.speed.fitted


def test_sglang_on_cuda_has_its_own_throughput_on_the_hopper_cards_alone(shipped_catalog):
    """SGLang under maximum load is fitted on the same lab's runs (Qwen3 14B in FP8 on one H100 SXM at its defaults,
    DeepSeek-R1 over eight H200 with the attention data parallel): every run within 1.3x of the fit, each GPU (here
    each model and parallelism too) held out within 2.6x, where the hardware's bound lay 3.0-6.5x over them. Its runs
    span one architecture, so it answers the Hopper cards alone: an A100's figure stays the bound, never a Hopper
    fit's share of another generation's peaks. One user's speeds stay the bound (no run of a few sequences at once
    tells a step's fixed cost)."""
    from advisor.infer import saturated as sat
    from advisor.infer.estimate import inference_rows

    gpus = shipped_catalog.by_id()
    mine = sat.rows_by_engine_platform(shipped_catalog)[("sglang", "cuda")]
    fit = sat.saturated_fit(shipped_catalog, "sglang", "cuda")
    assert len(mine) == fit.rows == 8 and fit.architectures == ("Hopper",) and not fit.small_batch
    for row in mine:
        t = sat.terms(sat.row_job(row), gpus[row.gpu])
        assert 1 / 1.3 <= sat.throughput(t, row.osl, fit) / row.value <= 1.3, row
        assert 2.9 <= sat.throughput(t, row.osl, sat.SaturatedFit()) / row.value <= 6.5, row
    held = [(r, p) for r, p in sat.crossval_saturated(shipped_catalog) if r in mine]
    assert len(held) == 8 and all(1 / 2.6 <= p / r.value <= 2.6 for r, p in held), held
    job = make_job(resolve_inference_model("llama-3.1-8b"), "sglang", "bf16", None, users=32)
    rows = {r.catalog_id: r for r in inference_rows(job, shipped_catalog, ["h100-sxm", "a100-80gb-sxm4"])}
    assert rows["h100-sxm"].saturated_fitted and not rows["a100-80gb-sxm4"].saturated_fitted
    assert not rows["h100-sxm"].load_fit_speed and not rows["h100-sxm"].speed.fitted


def test_vllm_on_rocm_has_its_own_throughput_never_cudas(shipped_catalog):
    """AMD's published vLLM runs on eight MI300X (Llama 3.1 70B and 405B in FP8 under maximum load at four prompt and
    output lengths; 70B in one batch of 1, 2 and 4 sequences) fit vLLM on ROCm alone: every run within 1.3x of the
    fit. The one-batch runs are what tell a step's fixed cost from its work: fitted on the runs under load alone, a
    step cost 40 ms whatever its batch and one user's 70B decode came out 3x too slow. Each model held out, its
    runs under load are within 1.8x, and the 70B's small batches, which no other model has, 2.7-3.3x too slow: the
    range a new model's figure carries. TensorRT-LLM's CUDA fit would have put the runs under load up to 1.68x too
    fast, so an MI300X is never given CUDA's share of its peaks. Eight MI300X exchange over their seven Infinity
    Fabric links, not PCIe: over PCIe the runs under load were up to 1.4x faster than that 'bound'. The fit answers
    on the architecture its runs are on (CDNA 3: the MI300X and MI325X), no other; its per-user speeds (one user, the
    asked load, the cost) on the eight GPUs its runs used only, with its held-out range."""
    from dataclasses import replace

    from advisor.infer.estimate import inference_rows
    from advisor.infer.saturated import (
        SaturatedFit,
        crossval_saturated,
        fit_saturated,
        held_out_error,
        load_saturated,
        row_job,
        saturated_fit,
        terms,
        throughput,
    )
    from advisor.infer.speed import _link

    gpus = shipped_catalog.by_id()
    published = [r for r in load_saturated() if r.engine == "vllm" and r.gpu == "mi300x"]
    under_load = [r for r in published if r.max_num_seqs > 16]
    assert len(published) == 11 and len(under_load) == 8
    fit = saturated_fit(shipped_catalog, "vllm", "rocm")
    assert all(1 / 1.3 <= throughput(terms(row_job(r), gpus[r.gpu]), r.osl, fit) / r.value <= 1.3 for r in published)
    alone = fit_saturated(under_load, shipped_catalog)
    one_user = next(r for r in published if r.max_num_seqs == 1)
    assert throughput(terms(row_job(one_user), gpus["mi300x"]), one_user.osl, alone) < one_user.value / 2.5
    held = dict(crossval_saturated(shipped_catalog))
    assert all(1 / 1.8 <= held[r] / r.value <= 1.8 for r in under_load)
    assert all(1 / 3.3 <= held[r] / r.value <= 1 / 2.7 for r in published if r not in under_load)
    cuda = saturated_fit(shipped_catalog, "tensorrt-llm", "cuda")
    borrowed = [throughput(terms(row_job(r), gpus[r.gpu]), r.osl, cuda) / r.value for r in under_load]
    assert max(borrowed) > 1.6
    assert _link(gpus["mi300x"]) == ("infinity fabric", 448.0)
    specs = {k: v for k, v in gpus["mi300x"].specs.items() if k != "infinity_fabric_gbs"}
    over_pcie = replace(gpus["mi300x"], specs=specs)
    bounds = [throughput(terms(row_job(r), over_pcie), r.osl, SaturatedFit()) / r.value for r in under_load]
    assert min(bounds) < 1 / 1.3
    job = make_job(resolve_inference_model("llama-3.1-70b"), "vllm", "fp8", "fp8", prompt=128, output=2048, devices=8)
    rows = {r.catalog_id: r for r in inference_rows(job, shipped_catalog, ["mi300x", "mi325x", "mi355x"])}
    assert rows["mi300x"].saturated_fitted and rows["mi300x"].saturated_tokens_per_s
    mi300x = rows["mi300x"]  # its per-user speeds are this fit's too, with its held-out range
    assert mi300x.load_fit_speed and mi300x.range_factor == held_out_error(shipped_catalog, "vllm", "rocm") > 3
    one_user = next(r for r in published if r.max_num_seqs == 1)  # 129 tokens a second, AMD's latency table
    assert one_user.value / 1.3 < mi300x.speed.single_stream_tokens_per_s < one_user.value * 1.3
    assert mi300x.usd_per_million_rented is not None
    at_rate = make_job(resolve_inference_model("llama-3.1-70b"), "vllm", "fp8", "fp8", devices=8, rate=1.0)
    [paced] = inference_rows(at_rate, shipped_catalog, ["mi300x"])
    assert paced.speed is None and paced.refused  # a rate of requests: that fit does not answer it
    fewer = make_job(resolve_inference_model("llama-3.1-70b"), "vllm", "fp8", "fp8", devices=4)
    [four] = inference_rows(fewer, shipped_catalog, ["mi300x"])
    assert four.speed is None and four.saturated_fitted  # its runs are on eight GPUs: per-user speeds on eight only
    assert rows["mi325x"].saturated_fitted
    assert rows["mi355x"].saturated_tokens_per_s is None  # CDNA 4: no run of its own
