"""What each inference engine runs where (advisor/data/engines.yaml `architectures` and `formats_on`): the GPU
architectures its install pages name, and the weight formats its own support tables give per architecture. A GPU or
format an engine refuses is refused with the source, never offered as a way to fit, never costed."""

from __future__ import annotations

import json

import pytest

from advisor.infer.architecture import resolve_inference_model
from advisor.infer.engines import architecture_refusal, engine_data, platform_refusal, weights_run_on
from advisor.infer.estimate import inference_rows
from advisor.infer.job import make_job
from advisor.infer.speed import EngineFit, engine_fits
from advisor.infer.ways import ways_to_fit, weight_choices


def test_every_architecture_an_engine_names_is_one_the_catalog_has(shipped_catalog):
    """A misspelt architecture in engines.yaml would refuse every GPU of the real one: each name is a catalog GPU's."""
    known = {gpu.architecture for gpu in shipped_catalog.gpus}
    for engine in engine_data().engines.values():
        for name in (*engine.architectures, *(a for arches in engine.formats_on.values() for a in arches)):
            assert name in known, (engine.id, name)
        assert all(name in engine.weights for name in engine.formats_on), engine.id


@pytest.mark.parametrize(
    ("engine", "refused", "runs"),
    [
        (
            "vllm",
            ["gtx-1080-ti", "v100-sxm2"],
            ["t4", "rtx-3090", "mi250x-gcd", "rx-7900-xtx", "framework-desktop-395-128gb"],
        ),
        ("tensorrt-llm", ["t4", "v100-sxm2", "rtx-2080-ti"], ["rtx-3090", "a100-80gb-sxm4", "l40s", "b200"]),
        ("sglang", ["rx-7900-xtx", "mi250x-gcd", "rx-9070-xt", "v100-sxm2"], ["t4", "h100-sxm", "mi300x", "mi355x"]),
        ("llama.cpp", [], ["gtx-1080-ti", "v100-sxm2", "rx-7900-xtx", "mi250x-gcd"]),
    ],
)
def test_an_engine_runs_on_the_architectures_its_install_pages_name(shipped_catalog, engine, refused, runs):
    """vLLM needs compute capability 7.5 (no Pascal or Volta) and runs on the AMD GPUs its ROCm page lists;
    TensorRT-LLM on Ampere and newer; SGLang on Turing and newer and AMD's CDNA 3 and 4 only; llama.cpp anywhere."""
    data, gpus = engine_data(), shipped_catalog.by_id()
    for gpu_id in refused:
        why = platform_refusal(data.engines[engine], gpus[gpu_id].platform, gpus[gpu_id].architecture)
        assert why and why.startswith(f"{data.engines[engine].name} runs on ") and "GPUs only" in why, (engine, gpu_id)
        assert gpus[gpu_id].architecture not in why.split(" GPUs only")[0].split(", "), (engine, gpu_id)
    for gpu_id in runs:
        assert platform_refusal(data.engines[engine], gpus[gpu_id].platform, gpus[gpu_id].architecture) is None


def test_an_engines_own_format_table_decides_where_it_runs_a_format():
    """vLLM's table: int8 W8A8 not on AMD GPUs; FP8 weight-only on Ampere through Marlin (not Turing, where its
    sources disagree); MXFP4 on Ampere, Hopper, Blackwell and the AMD GPUs its gpt-oss recipe names, not on Ada or
    RDNA 3. TensorRT-LLM's MXFP4 on Hopper and Blackwell only. A format without a table entry keeps its own needs."""
    data = engine_data()
    vllm, trt, formats = data.engines["vllm"], data.engines["tensorrt-llm"], data.weight_formats
    assert not weights_run_on(vllm, formats["int8"], "CDNA3") and weights_run_on(vllm, formats["int8"], "Ampere")
    assert weights_run_on(vllm, formats["fp8"], "Ampere") and not weights_run_on(vllm, formats["fp8"], "Turing")
    assert [weights_run_on(vllm, formats["mxfp4"], a) for a in ("Ampere", "Ada", "RDNA3", "CDNA3")] == [
        True,
        False,
        False,
        True,
    ]
    assert not weights_run_on(trt, formats["mxfp4"], "Ada") and weights_run_on(trt, formats["mxfp4"], "Hopper")
    assert weights_run_on(data.engines["llama.cpp"], formats["mxfp4"], "Pascal")  # GGUF MXFP4 on any backend
    why = architecture_refusal(vllm, "RDNA3", formats["mxfp4"], data.kv_formats["16bit"])
    assert why and why.startswith("vLLM runs mxfp4 weights on Ampere or Hopper") and "GPT-OSS.md" in why


def test_a_refused_gpu_is_not_shown_and_never_a_way_to_fit(shipped_catalog):
    """Llama 3.1 8B on vLLM: the GTX 1080 Ti and the V100 are not shown (with vLLM's own words), and no way to fit
    is offered there; on a Radeon RX 7900 XTX Qwen3 30B-A3B's ways never use the MXFP4 or FP8 vLLM does not run on
    RDNA 3."""
    catalog = shipped_catalog
    job = make_job(resolve_inference_model("llama-3.1-8b"), "vllm", None, None)
    rows = {row.catalog_id: row for row in inference_rows(job, catalog, ["gtx-1080-ti", "v100-sxm2", "t4"])}
    assert not rows["gtx-1080-ti"].runs and not rows["v100-sxm2"].runs and rows["t4"].runs
    assert "compute capability 7.5 or higher" in rows["v100-sxm2"].refused
    assert rows["gtx-1080-ti"].ways == () and rows["v100-sxm2"].ways == ()
    fit = engine_fits(catalog).get("vllm", EngineFit())
    assert ways_to_fit(job, catalog.by_id()["v100-sxm2"], fit, catalog) == ()
    moe = make_job(resolve_inference_model("qwen3-30b-a3b"), "vllm", None, None, context=32768, users=8)
    assert [w.id for w in weight_choices(moe, "RDNA3")] == ["bf16"]
    ways = ways_to_fit(moe, catalog.by_id()["rx-7900-xtx"], fit, catalog)
    assert ways and all(way.weights == "bf16" and way.kv == "16bit" for way in ways)


def test_the_apps_engine_menu_says_where_each_engine_runs(shipped_catalog):
    """The app's engine menu's help is engines.yaml's platforms and architectures, each engine's, never retyped."""
    from advisor.render.page import inference_inputs

    data = engine_data()
    menu = next(s for s in inference_inputs({}, data, None, shipped_catalog)["left"] if s.key == "run_engine")
    for engine in data.engines.values():
        assert f"{engine.name}: {', '.join(engine.platforms)}" in menu.help
    assert "TensorRT-LLM: cuda (Ampere, Ada, Hopper, Blackwell)" in menu.help


def test_the_engines_command_says_where_each_engine_runs_from_engines_yaml(capsys):
    """`advisor engines` prints each engine's platforms, architectures, formats (a limited one with its
    architectures, narrowed to the engine's own) and how it splits a model; `--json` gives every source."""
    from advisor.cli import main

    assert main(["engines"]) == 0
    text = capsys.readouterr().out
    assert "runs on: cuda: Ampere, Ada, Hopper, Blackwell; several GPUs: tensor parallel" in text  # TensorRT-LLM
    assert "mxfp4 (Hopper/Blackwell)" in text and "weights: bf16 (Apple M3/Apple M4), fp16, mlx-8bit" in text
    assert main(["engines", "--json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(engine_data().engines)
    assert rows["vllm"]["weights_on"]["int8"] == ["Turing", "Ampere", "Ada", "Hopper", "Blackwell"]
    assert "compute capability 7.5" in rows["vllm"]["sources"]["architectures"]
    assert rows["llama.cpp"]["architectures"] is None and rows["llama.cpp"]["splits"] == "whole layers"
    assert rows["mlx"]["splits"] == "one GPU"


def test_the_engines_command_says_what_each_engines_speeds_are_fitted_on(capsys, shipped_catalog):
    """Each engine's fits, by platform and kind of speed, with the runs and GPUs each rests on, from the same data the
    estimates fit: llama.cpp's CUDA fit and its own Metal and ROCm decode fits; vLLM's throughput under load, on CUDA
    and on ROCm, each its own fit (ROCm's on CDNA 3 alone); SGLang's under load on the Hopper cards alone (its runs span
    one architecture)."""
    from advisor.cli import main
    from advisor.infer.evidence import ONE_USER_AND_BATCH, ONE_USER_DECODE, UNDER_LOAD, engine_evidence
    from advisor.infer.saturated import load_saturated

    evidence = engine_evidence(shipped_catalog)
    kinds = {(e.speed, e.platform) for e in evidence["llama.cpp"]}
    assert kinds == {(ONE_USER_AND_BATCH, "cuda"), (ONE_USER_DECODE, "mps"), (ONE_USER_DECODE, "rocm")}
    on_cuda, on_rocm = evidence["vllm"]
    assert (on_cuda.speed, on_cuda.platform, on_cuda.gpus) == (
        UNDER_LOAD,
        "cuda",
        ("a100-80gb-sxm4", "h100-sxm", "h200-sxm", "rtx-4090"),
    )
    assert (on_rocm.speed, on_rocm.platform, on_rocm.gpus) == (UNDER_LOAD, "rocm", ("mi300x",))
    assert on_cuda.runs + on_rocm.runs == sum(1 for r in load_saturated() if r.engine == "vllm")
    [sglang] = evidence["sglang"]
    assert (sglang.speed, sglang.platform, sglang.gpus, sglang.only) == (
        UNDER_LOAD,
        "cuda",
        ("h100-sxm", "h200-sxm"),
        ("Hopper",),
    )
    assert on_cuda.only == () and on_rocm.only == ("CDNA3",)
    assert main(["engines"]) == 0
    text = capsys.readouterr().out
    assert (
        f"speeds fitted: under maximum load on cuda ({on_cuda.runs} runs, 4 GPUs); under maximum load on rocm "
        f"({on_rocm.runs} runs, 1 GPU; CDNA3 only)"
    ) in text
    assert f"speeds fitted: under maximum load on cuda ({sglang.runs} runs, 2 GPUs; Hopper only)" in text
    assert main(["engines", "--json"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["vllm"]["fitted"] == [on_cuda.as_dict(), on_rocm.as_dict()] and rows["sglang"]["fitted"] == [
        sglang.as_dict()
    ]
