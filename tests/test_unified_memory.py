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
    assert vllm.refused.startswith("vLLM does not run on mps GPUs (it runs on cuda, rocm: https://docs.vllm.ai")
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
    assert choices == ("every GPU and machine", "NVIDIA", "AMD", "Apple", "whole machines only")
    assert catalog_store.gpu_ids_of(shipped_catalog, "every GPU and machine") is None
    apple = catalog_store.gpu_ids_of(shipped_catalog, "Apple")
    amd = catalog_store.gpu_ids_of(shipped_catalog, "AMD")
    nvidia = catalog_store.gpu_ids_of(shipped_catalog, "NVIDIA")
    assert len(apple) == 7 and "mi300x" in amd and "framework-desktop-395-128gb" in amd and "dgx-spark" in nvidia
    assert len(apple) + len(amd) + len(nvidia) == len(shipped_catalog.gpus)  # every GPU has one vendor
    machines = catalog_store.gpu_ids_of(shipped_catalog, "whole machines only")
    assert set(machines) == {gpu.id for gpu in shipped_catalog.gpus if gpu.whole_machine} and set(UNIFIED) <= set(
        machines
    )
    with pytest.raises(AdvisorError, match="hardware: 'Intel' is not one of every GPU and machine, NVIDIA"):
        catalog_store.gpu_ids_of(shipped_catalog, "Intel")
