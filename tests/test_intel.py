"""Intel's devices a buyer weighs (issue 49): the Arc Pro B60 (24 GB, oneAPI: PyTorch's ``xpu``) and the Gaudi 2 and
Gaudi 3 accelerators (Intel's Gaudi software: ``hpu``). No Intel result is fitted, so every answer is memory only,
with the platform named; an engine without an Intel path read here is refused with its source; Gaudi 3's price is a
kit's list price over its eight accelerators, said so; nothing is guessed where no stored source gives it."""

from __future__ import annotations

import json

from advisor.cli import main
from advisor.infer.architecture import resolve_inference_model
from advisor.infer.estimate import inference_rows
from advisor.infer.job import make_job
from advisor.llm.advice import advise
from advisor.llm.config import load_presets
from advisor.llm.stack import JobShape, job_request
from advisor.render import jobs as render_jobs

INTEL = ("arc-pro-b60", "gaudi-2", "gaudi-3")


def test_intels_entries_carry_their_sources_and_guess_no_peak(shipped_catalog):
    gpus = shipped_catalog.by_id()
    b60, gaudi2, gaudi3 = (gpus[i] for i in INTEL)
    assert (b60.platform, gaudi2.platform, gaudi3.platform) == ("xpu", "hpu", "hpu")
    assert (b60.usable_memory_gb, gaudi2.usable_memory_gb, gaudi3.usable_memory_gb) == (24, 96, 128)
    assert b60.value("memory_bandwidth_gbs") == 456 and gaudi3.value("memory_bandwidth_gbs") == 3670  # the lower
    assert gaudi3.value("bf16_tflops") == 1835 and gaudi2.value("bf16_tflops") == 432
    # Intel quotes the Arc's INT8 TOPS only: its 16-bit peak is left out, never derived
    assert b60.value("fp16_tensor_tflops") is None and b60.value("bf16_tflops") is None
    assert b60.price.usd == 499 and gaudi2.price is None  # Gaudi 2's list price is in no stored source's text
    [kit] = gaudi3.purchase
    assert kit.usd * 8 == 125_000 and "kit of eight" in kit.kind and not gaudi3.whole_machine
    assert "Intel(R) Arc(TM) Pro B60 Graphics" in b60.aliases  # what PyTorch's xpu device names it
    for gpu in (b60, gaudi2, gaudi3):
        assert all(spec.source in shipped_catalog.sources for spec in gpu.specs.values()), gpu.id


def test_an_intel_device_answers_inference_memory_only_and_refuses_what_has_no_intel_path(shipped_catalog):
    model = resolve_inference_model("llama-3.1-8b")
    # vLLM validates the Arc Pro B-Series (its xpu.md): memory answered, no speed (nothing of it is fitted); a
    # GPTQ model among its listed formats, an FP8 cache not; Gaudi's path is a separate plugin, refused with that
    [vllm] = inference_rows(make_job(model, "vllm", "gptq-int4", None), shipped_catalog, ["arc-pro-b60"])
    assert vllm.memory.verdict == "fits" and vllm.speed is None and "no speed on xpu" in vllm.refused
    [fp8_cache] = inference_rows(make_job(model, "vllm", "bf16", "fp8"), shipped_catalog, ["arc-pro-b60"])
    assert fp8_cache.refused.startswith("a fp8 cache needs")
    [gaudi_vllm] = inference_rows(make_job(model, "vllm", "bf16", None), shipped_catalog, ["gaudi-3"])
    assert gaudi_vllm.refused.startswith("vLLM does not run on hpu GPUs") and "vllm-gaudi" in gaudi_vllm.refused
    [sglang] = inference_rows(make_job(model, "sglang", "bf16", None), shipped_catalog, ["gaudi-3"])
    assert sglang.refused.startswith("SGLang does not run on hpu GPUs")
    [arc] = inference_rows(make_job(model, "llama.cpp", "q4_k_m", None), shipped_catalog, ["arc-pro-b60"])
    assert arc.memory.verdict == "fits" and arc.speed is None and "no speed on xpu" in arc.refused
    [gaudi] = inference_rows(make_job(model, "transformers", "bf16", None), shipped_catalog, ["gaudi-3"])
    assert gaudi.memory.verdict == "fits" and gaudi.speed is None and "no speed on hpu" in gaudi.refused
    # llama.cpp has no Gaudi backend
    [none] = inference_rows(make_job(model, "llama.cpp", "q4_k_m", None), shipped_catalog, ["gaudi-2"])
    assert none.refused.startswith("llama.cpp does not run on hpu GPUs")


def test_a_fine_tune_on_intel_devices_is_answered_for_memory_never_as_none_fits(shipped_frame, shipped_catalog):
    """LoRA on Llama 3.1 8B asked of the Intel devices alone: each fits, with no time or cost; the table's headline
    must not say that none of them fits (it did whenever every asked GPU was of a platform without a fitted time)."""
    job = job_request(JobShape(load_presets()["llama-3.1-8b"], "lora")).job
    advice = advise(shipped_frame, shipped_catalog, job, gpu_ids=list(INTEL))
    assert not advice.options and {m.gpu.id for m in advice.fitting_without_time()} == set(INTEL)
    lines = render_jobs.summary_lines(advice)
    words = render_jobs.memory_only_line(advice.memory_only)
    assert "no oneAPI (Intel) training results are fitted yet" in words
    assert "no Gaudi software (Intel) training results are fitted yet" in words
    assert not any("None of these GPUs fits" in line for line in lines)


def test_the_cli_names_intels_platforms_and_keeps_their_rows(capsys):
    argv = ["estimate", "--model-config", "llama-3.1-8b", "--method", "lora", "--gpu", ",".join(INTEL)]
    assert main(argv) == 0
    shown = capsys.readouterr().out
    assert "None of these GPUs fits" not in shown
    assert "Cheaper, fits, speed not estimated: Intel Arc Pro B60 ($499, oneAPI (Intel))" in shown
    assert main([*argv, "--json"]) == 0
    records = {r["catalog_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(records) == set(INTEL) and all(r["seconds_estimate"] is None for r in records.values())


def test_a_recommendation_asked_of_gpus_that_do_not_fit_names_them_not_the_catalog(capsys):
    """Narrowed to GPUs the job does not fit (``--gpu``), no recommendation names them: 'no catalog GPU fits' is said
    only where the whole catalog was asked (a 12 GB card here, while a 24 GB one would hold the job)."""
    argv = ["recommend", "--model-config", "llama-3.1-8b", "--method", "lora"]
    assert main([*argv, "--gpu", "rtx-3060"]) == 0
    shown = capsys.readouterr().out
    assert "No recommendation (value): the GeForce RTX 3060 (12 GB) does not fit this job" in shown
    assert "no catalog GPU fits" not in shown
    assert main(["recommend", "--model-config", "llama-3.1-70b", "--method", "full", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reason"].startswith("no catalog GPU fits")


def test_a_recommendation_asked_of_an_intel_card_says_why_there_is_none(capsys):
    """One GPU without a fitted time that the job fits: no recommendation, because nothing can be weighed by speed or
    cost there, never 'no catalog GPU fits' (it does, for memory); the JSON says the same."""
    argv = ["recommend", "--model-config", "llama-3.1-8b", "--method", "lora", "--gpu", "arc-pro-b60"]
    assert main(argv) == 0
    shown = capsys.readouterr().out
    assert "No recommendation (value): what fits has no estimated time" in shown
    assert "no catalog GPU fits" not in shown
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reason"].startswith("what fits has no estimated time")
