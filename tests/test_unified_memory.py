"""Machines a buyer weighs beside a card (issue 49): a Mac, a 128 GB mini-PC, a DGX Spark. Their GPU shares the
machine's memory, so every fit counts what the GPU may allocate; their price is the machine's and every table says
so; an engine that does not run on their platform is refused with its source, never answered as if it ran."""

from __future__ import annotations

import json

import pytest

from advisor.cli import main
from advisor.infer.architecture import resolve_inference_model
from advisor.infer.estimate import inference_rows
from advisor.infer.job import make_job
from advisor.infer.serving_memory import GIB, REPORTED_SHARE
from advisor.llm.advice import advise
from advisor.llm.config import load_presets
from advisor.llm.stack import JobShape, job_request
from advisor.render import jobs as render_jobs
from advisor.store import catalog as catalog_store

UNIFIED = ("dgx-spark", "framework-desktop-395-128gb", "mac-studio-m4-max-36gb", "mac-studio-m3-ultra-512gb")


def test_a_unified_memory_gpu_counts_what_it_may_allocate(shipped_catalog):
    gpus = shipped_catalog.by_id()
    for gpu_id in UNIFIED:
        gpu = gpus[gpu_id]
        assert gpu.whole_machine and gpu.allocatable is not None, gpu_id
        assert 0 < gpu.usable_memory_gb < gpu.value("memory_gb"), gpu_id
        assert gpu.allocatable.source in shipped_catalog.sources and gpu.allocatable.note, gpu_id
        assert all(catalog_store.WHOLE_MACHINE_WORDS in p.kind for p in gpu.purchase), gpu_id
    # macOS's default GPU working set (readings of recommendedMaxWorkingSetSize): 3/4 above 36 GB, 2/3 at 36 GB
    assert gpus["mac-studio-m3-ultra-512gb"].usable_memory_gb == 384
    assert gpus["mac-studio-m4-max-36gb"].usable_memory_gb == 24
    assert gpus["framework-desktop-395-128gb"].usable_memory_gb == 96  # the driver's largest VRAM split
    # a laptop in two sizes: each its own entry, 3/4 of each for the GPU, each price the whole machine's
    laptop, larger = gpus["macbook-pro-m4-max-48gb"], gpus["macbook-pro-m4-max-128gb"]
    assert (laptop.usable_memory_gb, larger.usable_memory_gb) == (36, 96) and larger.price.usd == 5000
    assert all(catalog_store.WHOLE_MACHINE_WORDS in p.kind for p in (*laptop.purchase, *larger.purchase))
    m2_max = [gpus[f"mac-studio-m2-max-{size}gb"] for size in (32, 64, 96)]
    assert [g.usable_memory_gb for g in m2_max] == [21.3, 48, 72]  # 2/3 at 36 GB and below, 3/4 above
    assert m2_max[0].price.usd == 1999 and m2_max[1].price is None  # no stored source prices the larger sizes
    assert gpus["rtx-4090"].allocatable is None and gpus["rtx-4090"].usable_memory_gb == 24  # a card's own memory
    rows = {r["id"]: r for r in catalog_store.catalog_rows(shipped_catalog)}
    assert rows["dgx-spark"]["allocatable_gb"] == 108.8 and rows["dgx-spark"]["whole_machine"] is True
    assert rows["rtx-4090"]["allocatable_gb"] is None and rows["rtx-4090"]["whole_machine"] is False


def test_serving_a_model_fits_against_the_allocatable_share(shipped_catalog):
    """Llama 3.1 70B in Q8_0 at a 100,000-token context needs about 108 GB: it would fit the M4 Max's 128 GB whole,
    not the 96 GB its GPU may allocate, so the answer is 'does not fit' (a fit is never optimistic)."""
    job = make_job(resolve_inference_model("llama-3.1-70b"), "llama.cpp", "q8_0", None, prompt=99_000, output=1_000)
    [row] = inference_rows(job, shipped_catalog, ["mac-studio-m4-max-128gb"])
    assert row.memory.card_bytes == pytest.approx(96 * GIB * REPORTED_SHARE)
    assert 96 * GIB < row.memory.needed_bytes < 0.95 * 128 * GIB * REPORTED_SHARE
    assert row.memory.verdict == "does not fit"
    assert row.speed is None and "no speed on mps" in row.refused  # Metal's speed is not fitted: no guess


def test_an_engine_runs_only_on_its_platforms(shipped_catalog):
    model = resolve_inference_model("llama-3.1-8b")
    on_mac = ["mac-studio-m4-max-36gb"]
    [vllm] = inference_rows(make_job(model, "vllm", "bf16", None), shipped_catalog, on_mac)
    assert vllm.refused.startswith("vLLM does not run on mps GPUs (it runs on cuda, rocm, xpu: https://docs.vllm.ai")
    [llama_cpp] = inference_rows(make_job(model, "llama.cpp", "q4_k_m", None), shipped_catalog, on_mac)
    assert "no speed on mps" in llama_cpp.refused and "does not run" not in llama_cpp.refused
    [tensorrt] = inference_rows(
        make_job(model, "tensorrt-llm", "bf16", None), shipped_catalog, ["framework-desktop-395-128gb"]
    )
    assert tensorrt.refused.startswith("TensorRT-LLM does not run on rocm GPUs")
    # a CUDA GPU whose 16-bit tensor peak nobody published: its memory answered, no speed guessed from float32
    [spark] = inference_rows(make_job(model, "llama.cpp", "q4_k_m", None), shipped_catalog, ["dgx-spark"])
    assert spark.memory.verdict == "fits" and spark.speed is None and "no 16-bit tensor peak" in spark.refused


def test_a_fine_tune_on_the_machines_is_answered_for_memory(shipped_frame, shipped_catalog, capsys):
    """LoRA on Llama 3.1 8B: the Mac and the DGX Spark are planned as any GPU, judged against the share their GPU may
    allocate, no time (Metal has no fitted results; the Spark no published 16-bit peak), and
    their price is the machine's in the table, the JSON and the sentences."""
    job = job_request(JobShape(load_presets()["llama-3.1-8b"], "lora", tokens=1000 * 2048)).job
    ids = ["rtx-4090", "mac-studio-m4-max-36gb", "dgx-spark"]
    advice = advise(shipped_frame, shipped_catalog, job, gpu_ids=ids)
    [card] = advice.options
    answers = {a.gpu.id: a for a in advice.memory_only}
    assert set(answers) == {"mac-studio-m4-max-36gb", "dgx-spark"}
    mac, spark = answers["mac-studio-m4-max-36gb"], answers["dgx-spark"]
    assert mac.footprint == card.footprint  # planned as on the 24 GB card: activation checkpointing on
    assert spark.footprint.activations_gb > card.footprint.activations_gb  # 108.8 GB: no checkpointing needed
    assert mac.why.platform == "mps" and spark.why.peak == "float16 tensor"
    assert mac.verdict == card.footprint.verdict(24) and mac.price_usd == 1999
    line = render_jobs.memory_only_line(advice.memory_only)
    assert "no Metal (Apple) training results are fitted yet" in line
    assert "of 24 GB usable of 36 GB unified" in line and "of 108.8 GB usable of 128 GB unified" in line
    assert main(["estimate", "--model-config", "llama-3.1-8b", "--method", "lora", "--json"]) == 0
    records = {r["catalog_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert records["mac-studio-m4-max-36gb"]["seconds_estimate"] is None
    assert records["mac-studio-m4-max-36gb"]["gpu_usable_memory_gb"] == 24
    assert records["mac-studio-m4-max-36gb"]["price_is_whole_machine"] is True
    assert records["rtx-4090"]["price_is_whole_machine"] is False and records["rtx-4090"]["seconds_estimate"] > 0
    assert main(["catalog"]) == 0
    shown = capsys.readouterr().out
    assert "$1,999 (2025-03, machine)" in shown and "24 of 36" in shown


def test_the_catalog_narrows_to_a_vendor_or_to_whole_machines(shipped_catalog):
    from advisor.errors import AdvisorError

    choices = catalog_store.hardware_choices()
    assert choices == ("every GPU and machine", "NVIDIA", "AMD", "Apple", "Intel", "whole machines only")
    assert catalog_store.gpu_ids_of(shipped_catalog, "every GPU and machine") is None
    apple = catalog_store.gpu_ids_of(shipped_catalog, "Apple")
    amd = catalog_store.gpu_ids_of(shipped_catalog, "AMD")
    nvidia = catalog_store.gpu_ids_of(shipped_catalog, "NVIDIA")
    intel = catalog_store.gpu_ids_of(shipped_catalog, "Intel")  # Arc (oneAPI) and Gaudi (its own software): one vendor
    assert (
        len(apple) == 16
        and "mac-mini-m4-pro-24gb" in apple
        and "mi300x" in amd
        and "framework-desktop-395-128gb" in amd
        and "dgx-spark" in nvidia
        and set(intel) == {"arc-pro-b60", "gaudi-2", "gaudi-3"}
    )
    assert len(apple) + len(amd) + len(nvidia) + len(intel) == len(shipped_catalog.gpus)  # every GPU has one vendor
    machines = catalog_store.gpu_ids_of(shipped_catalog, "whole machines only")
    assert set(machines) == {gpu.id for gpu in shipped_catalog.gpus if gpu.whole_machine} and set(UNIFIED) <= set(
        machines
    )
    with pytest.raises(AdvisorError, match="hardware: 'Qualcomm' is not one of every GPU and machine, NVIDIA"):
        catalog_store.gpu_ids_of(shipped_catalog, "Qualcomm")


# --------------------------------------------------------------------------- Metal's own decode fit


def test_a_macs_decode_has_its_own_fit_and_the_whole_range_of_its_held_out_error(shipped_catalog):
    """Three Macs' published llama.cpp results (M1 Max, M2 Ultra, M3 Max) fit one user's decode on Metal; each Mac
    left out in turn, the worst error is the range every Mac's figure carries (not the CUDA fit's)."""
    from advisor.infer import platform_decode
    from advisor.infer.estimate import decode_range

    fit = platform_decode.platform_fits(shipped_catalog)[("llama.cpp", "mps")]
    assert fit.rows == 10 and len(fit.gpus) == 3 and fit.k[0] >= 1 and fit.k[1] >= 1
    held = platform_decode.held_out(shipped_catalog)
    errors = [h.error for h in held if h.engine == "llama.cpp" and h.gpu in fit.gpus]
    assert len(errors) == 10 and fit.range_factor == max(errors)
    assert sorted(errors)[len(errors) // 2] < 1.2 and max(errors) < 1.7  # measured: median 1.13x, worst 1.64x
    assert fit.range_factor > decode_range(shipped_catalog)["llama.cpp"]  # few Macs: a wider range than CUDA's


def test_amds_rocm_decode_has_its_own_fit_from_its_own_published_runs(shipped_catalog):
    """llama.cpp's HIP backend on an RX 7900 XTX (two rows) and a Ryzen AI Max+ 395 (three, from three sources): ROCm's
    own fit, each GPU predicted from the other (measured: median 1.07x, worst 1.13x, the range). Every AMD GPU then
    gets one user's decode with that range, marked extrapolated outside the two GPUs' 256-960 GB/s (an MI300X's 5.3
    TB/s); SGLang, without ROCm results, still gets none (vLLM's speed there is its fit under load's, on the eight
    GPUs its runs used, tests/test_inference.py)."""
    from advisor.infer import platform_decode

    fit = platform_decode.platform_fits(shipped_catalog)[("llama.cpp", "rocm")]
    assert fit.rows == 5 and fit.gpus == ("framework-desktop-395-128gb", "rx-7900-xtx")
    assert fit.evidence_span == (256.0, 960.0)
    errors = [h.error for h in platform_decode.held_out(shipped_catalog) if h.gpu in fit.gpus]
    assert len(errors) == 5 and fit.range_factor == max(errors) < 1.2
    model = resolve_inference_model("llama-3.1-8b")
    job = make_job(model, "llama.cpp", "q4_k_m", None)
    rows = {r.catalog_id: r for r in inference_rows(job, shipped_catalog, ["rx-7900-xtx", "mi300x"])}
    xtx, mi300x = rows["rx-7900-xtx"], rows["mi300x"]
    assert xtx.speed is None and xtx.decode_only is not None and xtx.costs_are_floors
    value, factor = xtx.decode_only.tokens_per_s, xtx.decode_only.range_factor
    assert value / factor < 105.75 < value * factor  # the published tg64 of the 8B Q4_K_M, fitted
    assert not xtx.decode_only.extrapolated and mi300x.decode_only.extrapolated
    [sglang] = inference_rows(make_job(model, "sglang", "bf16", None), shipped_catalog, ["mi300x"])
    assert sglang.decode_only is None and "no speed on rocm" in sglang.refused
    [vllm] = inference_rows(make_job(model, "vllm", "bf16", None, devices=8), shipped_catalog, ["mi300x"])
    assert vllm.refused is None and vllm.load_fit_speed  # on eight, as its runs
    [vllm_one] = inference_rows(make_job(model, "vllm", "bf16", None), shipped_catalog, ["mi300x"])
    assert vllm_one.speed is None and vllm_one.saturated_fitted  # on one: its throughput under load only


def test_machines_the_decode_fits_never_saw_fall_within_their_range(shipped_catalog):
    """Published runs no decode fit saw, each predicted by its platform's fit for the engine: llama.cpp on an M3
    Ultra and an M1 Ultra (chips the Metal fit has none of), on the GB10 of a DGX Spark (no published tensor peak: one
    user's decode from the CUDA fit) and at 32k tokens of context on an M3 Max (the fit's rows are at 512); MLX on an
    M3 Max (its fit has none). Each within the range its fit states; llama.cpp's long contexts never predicted faster
    than they ran."""
    from advisor.infer import platform_decode

    fits = {**platform_decode.platform_fits(shipped_catalog), **platform_decode.fitted_platform_fits(shipped_catalog)}
    found = platform_decode.published_held_out(shipped_catalog)
    unseen = [h for h in found if h.source != OLLAMA_RTX_5090]  # a known miss: the test below
    assert len(unseen) == 9 and len(found) == 9 + 21
    gpus = shipped_catalog.by_id()
    for held in unseen:  # llama.cpp 1.04-1.32x (Metal's range 1.64x); MLX 1.21x and 1.39x (its range 2.00x)
        fit = fits[(held.engine, gpus[held.gpu].platform)]
        assert held.error <= fit.range_factor, held
        assert held.gpu not in fit.gpus or held.gpu == "macbook-pro-m3-max-64gb", held
    long_context = [h for h in unseen if h.engine == "llama.cpp" and h.gpu == "macbook-pro-m3-max-64gb"]
    assert len(long_context) == 3 and all(h.predicted < h.measured for h in long_context)  # 0.79-0.85x


OLLAMA_RTX_5090 = "nikolasent_rtx5090"  # Ollama 0.5.11 on an RTX 3090, 4090 and 5090 in one machine


def _lead_over_the_4090(catalog) -> list[tuple[str, float, float]]:
    """(model, published, predicted) one-user decode of the RTX 5090 over the RTX 4090, one machine, one Ollama, each
    model (the ratio cancels Ollama's own cost and the unstated prompts)."""
    from advisor.infer import platform_decode

    rows = [h for h in platform_decode.published_held_out(catalog) if h.source == OLLAMA_RTX_5090]
    fast, old = ([h for h in rows if h.gpu == gpu] for gpu in ("rtx-5090", "rtx-4090"))  # one tag order per GPU
    assert len(fast) == len(old) == 7 and [h.model for h in fast] == [h.model for h in old]
    return [(a.model, a.measured / b.measured, a.predicted / b.predicted) for a, b in zip(fast, old, strict=True)]


def test_a_gddr7_card_past_the_fitted_gddr_cards_keeps_its_bandwidths_lead_where_the_weights_decide(shipped_catalog):
    """The RTX 5090 (GDDR7, 1,792 GB/s) over the RTX 4090 on models of 7B and more, whose weights decide a step: within
    1.3x of the published lead (1.01-1.25x at this change), where llama.cpp's decode fit once took its bandwidth trend
    from the HBM cards and said 1.26-1.37x for a published 1.62-1.79x (1.19-1.41x off)."""
    large = [row for row in _lead_over_the_4090(shipped_catalog) if row[0] not in SMALL_MODELS]
    assert len(large) == 4
    for model, published, predicted in large:
        assert max(published / predicted, predicted / published) <= 1.3, (model, published, predicted)


SMALL_MODELS = ("llama-3.2-3b", "qwen2.5-1.5b", "phi-3-mini")


@pytest.mark.xfail(
    strict=True,
    reason="issue 48, a known miss: small models' steps are mostly llama.cpp's per-step floor, fitted as one figure "
    "for every GPU (2.55 ms); under Ollama the RTX 5090's is far lower than the 4090's (qwen2.5 1.5B: 2.5 ms a token "
    "against 4.7), so its lead on the 1.5B-3.8B models (1.60-1.87x) is predicted 1.16-1.32x",
)
def test_a_gddr7_cards_lead_over_the_4090_holds_on_every_model(shipped_catalog):
    """Every model, small ones too: the published lead within 1.25x."""
    for model, published, predicted in _lead_over_the_4090(shipped_catalog):
        assert max(published / predicted, predicted / published) <= 1.25, (model, published, predicted)


def test_mlx_on_a_mac_answers_one_users_decode_from_its_own_published_runs(shipped_catalog):
    """MLX's decode on Metal rests on MLX's published runs (mlx-lm's M4 Max table, an M2 Ultra and an M4 Pro), never
    on llama.cpp's or the CUDA fits; its range is its worst error leaving each Mac out (the M2 Ultra at 32k tokens,
    predicted 2x too fast), so a Mac's figure spans that whole factor both ways; no first token, load or cost."""
    from advisor.infer import platform_decode

    fit = platform_decode.platform_fits(shipped_catalog)[("mlx", "mps")]
    assert fit.gpus == ("mac-mini-m4-pro-64gb", "mac-studio-m2-ultra-192gb", "mac-studio-m4-max-128gb")
    assert 1.9 < fit.range_factor < 2.1 and fit.rows == 8
    model = resolve_inference_model("llama-3.1-8b")
    [row] = inference_rows(make_job(model, "mlx", "mlx-4bit", None), shipped_catalog, ["mac-studio-m4-max-128gb"])
    assert row.speed is None and row.decode_only is not None and row.decode_only.fit is fit
    assert row.decode_only.range_factor == fit.range_factor and not row.decode_only.extrapolated
    assert 50 < row.decode_only.tokens_per_s < 110  # 4.5 GB of weights a token at 546 GB/s


def test_a_mac_answers_one_users_decode_only_and_nothing_it_cannot_know(shipped_catalog):
    from advisor.infer.estimate import picks
    from advisor.render.inference import inference_records, pick_lines, table_notes

    model = resolve_inference_model("llama-3.1-8b")
    macs = ["mac-studio-m2-ultra-192gb", "macbook-pro-m3-max-64gb"]
    rows = inference_rows(make_job(model, "llama.cpp", "q4_k_m", None, users=4), shipped_catalog, macs)
    for row in rows:
        assert row.speed is None and row.decode_only is not None  # no first token, load or cost: no peak
        assert row.usd_per_million_owned is None and row.saturated_tokens_per_s is None
        assert row.decode_only.range_factor == row.decode_only.fit.range_factor
    ultra, m3 = sorted(rows, key=lambda r: r.catalog_id)
    assert ultra.decode_only.tokens_per_s > 1.4 * m3.decode_only.tokens_per_s  # 800 against 400 GB/s
    value, factor = m3.decode_only.tokens_per_s, m3.decode_only.range_factor
    low, high = value / factor, value * factor
    assert low < 48.97 < high  # the published M3 Max figure (at 512 tokens) lies within the range
    [line] = pick_lines(picks(rows))
    assert line.startswith("Holds the job, one user's decode only: Mac Studio (M2 Ultra")
    said = "decode only (mps): one user's decode from llama.cpp's 10 published"
    assert any(n.startswith(said) for n in table_notes(rows))
    record = inference_records(rows)[0]
    assert record["decode_only_tokens_per_s"] > 0 and record["time_to_first_token_s"] is None
    # what has no Metal results gets no decode: two Macs (no tensor parallelism), a vLLM (it does not run there)
    [pair] = inference_rows(make_job(model, "llama.cpp", "q4_k_m", None, devices=2), shipped_catalog, macs[:1])
    [vllm] = inference_rows(make_job(model, "vllm", "bf16", None), shipped_catalog, macs[:1])
    assert pair.decode_only is None and vllm.decode_only is None


def test_the_cuda_fit_never_sees_a_mac_or_an_amd_gpu(shipped_catalog):
    from advisor.infer import speed

    measured = speed.load_measured()
    kept = speed.on_fitted_platform(measured, shipped_catalog)
    assert len(measured) - len(kept) == 23  # the Metal rows (llama.cpp's and MLX's) and the ROCm ones
    assert {r.held_out for r in speed.crossval(shipped_catalog)}.isdisjoint(
        {"mac-studio-m2-ultra-192gb", "macbook-pro-m1-max-64gb", "macbook-pro-m3-max-64gb", "rx-7900-xtx"}
    )


def test_a_gpu_with_one_users_decode_only_costs_at_least_its_floor_and_is_never_picked_cheapest(shipped_catalog):
    """Without a first token or a load (a Mac, a Radeon, a DGX Spark), the cost of a million tokens is a floor: the
    users at the top of one user's decode range, all no faster than the memory's full bandwidth reads a step (an
    extrapolated GPU: the bandwidth alone), the prompts' time left out. Marked '>=' and never the cheapest pick: said
    as 'maybe cheaper' beside it."""
    from advisor.infer.estimate import picks
    from advisor.infer.platform_decode import decode_ceiling
    from advisor.infer.speed import decode_memory_seconds
    from advisor.infer.token_costs import DEFAULT_COSTS, million_token_costs
    from advisor.render.inference import inference_text

    model = resolve_inference_model("llama-3.1-70b")
    job = make_job(model, "llama.cpp", "q4_k_m", None, context=32768)
    ids = ["rtx-pro-6000", "macbook-pro-m4-max-128gb", "mac-studio-m3-ultra-96gb", "mi300x"]
    rows = {r.catalog_id: r for r in inference_rows(job, shipped_catalog, ids)}
    gpus = shipped_catalog.by_id()
    for key in ids[1:]:
        row, gpu = rows[key], gpus[key]
        assert row.speed is None and row.costs_are_floors and row.memory.verdict == "fits"
        decode = row.decode_only
        physical = 1 / decode_memory_seconds(job, gpu, 1, job.prompt + job.output // 2)
        ceiling = decode_ceiling(job, gpu, decode, 1)
        assert ceiling <= physical and ceiling >= decode.tokens_per_s
        assert ceiling == (
            physical if decode.extrapolated else min(physical, decode.tokens_per_s * decode.range_factor)
        )
        owned = million_token_costs(job, gpu, decode.tokens_per_s, DEFAULT_COSTS)[0]
        assert owned is None or row.usd_per_million_owned <= owned  # never above the central figure's cost
    assert rows["mac-studio-m3-ultra-96gb"].decode_only.extrapolated  # 819 GB/s: past the Macs' fitted bandwidths
    found = picks(list(rows.values()))
    assert found.cheapest_owned.catalog_id == "rtx-pro-6000"  # the only GPU with a cost estimated, not a floor
    floor = found.floor_under_owned
    assert floor is not None and floor.usd_per_million_owned < found.cheapest_owned.usd_per_million_owned
    text = inference_text(job, list(rows.values()), DEFAULT_COSTS, found)
    assert f"Maybe cheaper owned: {floor.gpu}, at least $" in text and ">= $" in text
    # more users than one: each no faster than one stream, all no faster than the bandwidth reads their caches too
    spark, users = gpus["dgx-spark"], 8
    [row] = inference_rows(make_job(model, "llama.cpp", "q4_k_m", None, users=users), shipped_catalog, ["dgx-spark"])
    assert row.costs_are_floors and decode_ceiling(job, spark, row.decode_only, users) < users / decode_memory_seconds(
        job, spark, 1, job.prompt + job.output // 2
    )
