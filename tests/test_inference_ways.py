"""Ways to fit an inference job a GPU cannot hold as asked (advisor.infer.ways): smaller formats the engine runs there
and more GPUs, fewest GPUs first, each verdict the memory model's own."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from advisor.cli import main
from advisor.errors import AdvisorError
from advisor.infer.architecture import resolve_inference_model
from advisor.infer.engines import Format, architecture_refusal, engine_data
from advisor.infer.estimate import inference_rows, picks
from advisor.infer.job import make_job, tensor_parallel_refusal
from advisor.infer.mixed import mixed_cards
from advisor.infer.saturated import load_fit_speed
from advisor.infer.serving_memory import memory_verdict
from advisor.infer.speed import EngineFit, engine_fits, predict
from advisor.infer.ways import cache_choices, gpu_counts, ways_to_fit, weight_choices


def _ways(catalog, gpu_id: str, engine: str = "vllm", weights: str | None = None, **sizes):
    job = make_job(resolve_inference_model(sizes.pop("model", "llama-3.1-70b")), engine, weights, None, **sizes)
    fit = engine_fits(catalog).get(engine, EngineFit())
    return job, ways_to_fit(job, catalog.by_id()[gpu_id], fit, catalog)


def test_each_way_fits_by_the_memory_model_and_more_gpus_only_buy_precision(shipped_catalog):
    """Llama 3.1 70B at 32k tokens on one H100 (vLLM, bf16): 4-bit weights on one card, 8-bit on two, and as asked
    on four; each verdict is the memory model's for the changed job, and each later way keeps more bits."""
    job, ways = _ways(shipped_catalog, "h100-sxm", context=32768)
    assert memory_verdict(job, 80).verdict == "does not fit"
    assert [w.devices for w in ways] == [1, 2, 4]
    assert [w.weights for w in ways] == ["awq-int4", "fp8", "bf16"]
    assert ways[-1].changes == ("4 GPUs",)  # the asked formats: no more GPUs are tried past them
    formats = engine_data().weight_formats
    bits = [formats[w.weights].bits for w in ways]
    assert bits == sorted(bits) and len(set(bits)) == len(bits)
    gpu = shipped_catalog.by_id()["h100-sxm"]
    for way in ways:
        changed = make_job(job.model, "vllm", way.weights, way.kv, context=32768, devices=way.devices)
        assert way.memory == memory_verdict(changed, gpu.usable_memory_gb)
        assert way.memory.verdict in ("fits", "tight")
        # vLLM's load fit (its CUDA runs on one GPU and on eight) speaks for one GPU, as on the job's own row; on two
        # or four its speed is the hardware's ceiling
        loaded = load_fit_speed(changed, gpu, shipped_catalog, per_user_fitted=False)
        assert way.bound == (loaded is None) and way.single_stream_tokens_per_s > 0
        if loaded is not None:
            assert way.single_stream_tokens_per_s == loaded[0].single_stream_tokens_per_s
    assert [way.bound for way in ways] == [False, True, True]


def test_the_fewest_cards_match_what_published_multi_card_runs_needed(shipped_catalog):
    """XiongjieDai's llama.cpp table (May 2024) ran Llama 3 70B in Q4_K_M on two RTX 3090s or 4090s and lists one card
    as out of memory: the first way is two cards with the same formats."""
    for gpu_id in ("rtx-3090", "rtx-4090"):
        _, ways = _ways(shipped_catalog, gpu_id, "llama.cpp", "q4_k_m", prompt=1, output=512)
        assert ways and (ways[0].devices, ways[0].weights, ways[0].kv) == (2, "q4_k_m", "16bit"), ways
        assert ways[0].changes == ("2 GPUs",) and len(ways) == 1


def test_formats_are_the_engines_and_the_architectures_and_a_whole_machine_stays_one(shipped_catalog):
    """Every way's formats run on the GPU's architecture (a Turing card gets fp16 and int8, never bf16 or fp8); a
    whole machine or a Mac is never asked to be several; a job that fits has no ways."""
    catalog = shipped_catalog
    data = engine_data()
    for gpu in catalog.gpus:
        _, ways = _ways(catalog, gpu.id, context=32768)
        for way in ways:
            weights, kv = data.weight_formats[way.weights], data.kv_formats[way.kv]
            refused = architecture_refusal(data.engines["vllm"], gpu.architecture, weights, kv)
            assert refused is None, (gpu.id, way)
            if gpu.whole_machine or gpu.platform == "mps":
                assert way.devices == 1, (gpu.id, way)
    turing = make_job(resolve_inference_model("llama-3.1-70b"), "vllm", "fp16", None)
    assert [f.id for f in weight_choices(turing, "Turing")] == ["fp16", "int8", "awq-int4"]
    assert _ways(catalog, "b200", context=32768)[1] == ()  # fits as asked


def test_a_gguf_files_own_weights_stay_and_only_the_cache_and_the_cards_change():
    """A GGUF file's tensors are what they are: its one weight format is kept; the cache and the cards may change."""
    job = make_job(resolve_inference_model("llama-3.1-70b"), "llama.cpp", "q4_k_m", None, context=32768)
    gguf = Format("gguf:Q4_K_M", job.weights.bits, "file", (), "a file's own tensors")
    assert weight_choices(replace(job, weights=gguf), "Ada") == [gguf]
    assert [kv.id for kv in cache_choices(job, "Ada")] == ["16bit", "q8_0", "q4_0"]


def test_the_command_names_the_ways_where_nothing_holds_the_job(capsys):
    """The summary names each asked GPU's ways where none holds the job; the table's last column the first way; --json
    every way."""
    asked = ["estimate", "--model-config", "llama-3.1-70b", "--inference", "--context", "32768", "--gpu", "h100-sxm"]
    assert main(asked) == 0
    out = capsys.readouterr().out
    assert "No GPU of the catalog holds this job as asked" in out
    # one GPU from vLLM's load fit, four at the hardware's ceiling (the fit's runs are on one GPU and on eight)
    assert "Ways to fit H100 SXM5 80GB: awq-int4 weights: " in out and "; or 4 GPUs: <= " in out
    assert "awq-int4 weights: <= " not in out
    assert "to fit: fewest GPUs" in out
    assert main([*asked, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert [w["devices"] for w in row["ways_to_fit"]] == [1, 2, 4]
    assert row["ways_to_fit"][0]["changes"] == ["awq-int4 weights"] and row["ways_to_fit"][0]["fits"] == "fits"
    assert main(["estimate", "--model-config", "llama-3.1-8b", "--inference", "--gpu", "h100-sxm", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["ways_to_fit"] == []


def test_an_engine_that_splits_the_heads_refuses_a_count_that_does_not_divide_them(shipped_catalog):
    """vLLM, SGLang and TensorRT-LLM split the attention heads evenly over tensor-parallel GPUs (their sources in
    engines.yaml): Qwen2.5 7B's 28 query heads over 8 GPUs is refused with the counts that work, and the ways never
    offer it; TensorRT-LLM's source checks the query heads only (7 GPUs split 28 of them, not the 4 key-value heads
    vLLM also checks); llama.cpp splits layers, so any count runs; attention data parallel splits no heads."""
    model = resolve_inference_model("qwen2.5-7b")
    for engine in ("vllm", "sglang", "tensorrt-llm"):
        with pytest.raises(AdvisorError, match=r"28 query, 4 key-value\) over 8 GPUs .* over 1, 2, 4 \(--devices\)"):
            make_job(model, engine, None, None, devices=8)
    assert tensor_parallel_refusal(model, engine_data().engines["tensorrt-llm"], 7) is None
    assert tensor_parallel_refusal(model, engine_data().engines["vllm"], 7)
    assert make_job(model, "llama.cpp", None, None, devices=3).devices == 3
    grouped = resolve_inference_model("llama-3.1-8b")  # 8 key-value heads: 16 GPUs would replicate them, 3 cannot
    assert tensor_parallel_refusal(grouped, engine_data().engines["vllm"], 3)
    assert tensor_parallel_refusal(grouped, engine_data().engines["vllm"], 8) is None
    job = make_job(model, "vllm", None, None, context=131072, users=64)
    assert all(n != 8 for n in gpu_counts(job, shipped_catalog.by_id()["rtx-4090"]))
    assert gpu_counts(job, shipped_catalog.by_id()["rtx-4090"]) == (1, 2, 4)


def test_several_identical_cards_of_a_layer_split_run_one_stream_as_one_card_would(shipped_catalog):
    """llama.cpp's default split gives each card whole layers and a token passes them in turn: --devices N of one
    card runs one stream at the single-GPU model's speed, as --mixed with N of that card does, never N times faster;
    XiongjieDai's May 2024 runs of Llama 3 70B Q4_K_M on 2 to 8 RTX 3090s or 4090s read 16.6-19.8 tok/s."""
    model = resolve_inference_model("llama-3.1-70b")
    fit = engine_fits(shipped_catalog)["llama.cpp"]
    for gpu_id, count, published in (("rtx-3090", 2, 16.57), ("rtx-4090", 2, 19.22), ("rtx-4090", 8, 18.94)):
        gpu = shipped_catalog.by_id()[gpu_id]
        job = make_job(model, "llama.cpp", "q4_k_m", None, prompt=1, output=512, devices=count)
        assert job.splits_layers
        speed = predict(job, gpu, fit).single_stream_tokens_per_s
        mixed = mixed_cards(replace(job, devices=1), [gpu] * count, shipped_catalog).single_stream_tokens_per_s
        assert speed == pytest.approx(mixed, rel=1e-9)
        assert 0.75 < speed / published < 1.25, (gpu_id, count, speed)
        assert memory_verdict(job, gpu.usable_memory_gb).verdict == "fits"
    vllm = make_job(model, "vllm", "awq-int4", None, prompt=1, output=512, devices=2)
    assert not vllm.splits_layers  # tensor parallel: each layer split, the GPUs reading at once


def test_a_way_to_fit_is_priced_and_named_where_it_costs_less_than_the_job_as_asked(shipped_catalog, capsys):
    """Each way carries what a million tokens cost on its GPUs at the asked load (its GPU count times the card's
    price or rental); the picks name the way that costs less than every GPU holding the job as asked, never one that
    costs more."""
    model = resolve_inference_model("llama-3.1-70b")
    for context in (8192, 32768):
        rows = inference_rows(make_job(model, "llama.cpp", "q4_k_m", None, context=context), shipped_catalog)
        found = picks(rows)
        for kind in ("owned", "rented"):
            pair = getattr(found, f"cheaper_way_{kind}")
            asked = getattr(found, f"cheapest_{kind}")
            if pair is None:
                continue
            row, way = pair
            assert row.memory.verdict == "does not fit" and way in row.ways
            cost = getattr(way, f"usd_per_million_{kind}")
            assert asked is None or cost < getattr(asked, f"usd_per_million_{kind}")
    h100 = make_job(model, "vllm", None, None, context=32768)
    (row,) = inference_rows(h100, shipped_catalog, ["h100-sxm"])
    one, two = row.ways[0], row.ways[1]
    assert two.devices == 2 * one.devices and two.usd_per_million_rented > one.usd_per_million_rented
    asked = ["estimate", "--model-config", "llama-3.1-70b", "--inference", "--context", "32768", "--gpu", "h100-sxm"]
    assert main(asked) == 0
    out = capsys.readouterr().out
    assert "Cheapest a million tokens rented, the job changed: H100 SXM5 80GB on " in out
    assert "with awq-int4 weights, $" in out  # one GPU: vLLM's load fit, a cost of its own (no "at least")
