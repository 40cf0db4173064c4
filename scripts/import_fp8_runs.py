"""Turn NVIDIA's published FP8 training throughputs (shared/data/published_2026.yaml) and MLPerf Training's Llama 2
70B LoRA logs into ``advisor/data/fp8_runs.yaml``, the evidence :mod:`advisor.llm.fp8` fits and checks the tuned
FP8 stack's speed on.

    python scripts/import_fp8_runs.py [../shared/data/published_2026.yaml]

``fit``: every throughput of NVIDIA's tuned stack (the NeMo 24.07 performance summary, the Megatron-Bridge tables)
in FP8 with per-tensor scaling ("FP8", "FP8-CS"), of a dense model with a preset, on a catalog GPU. Left out: MXFP8
and NVFP4 (other recipes), mixture-of-experts models (their work per token is not the dense model's), GPUs the
catalog lacks (the GB300), models without a preset (GPT-3 175B).

``check``: MLPerf Training's Llama 2 70B LoRA on one 8-GPU system each of H100, H200 and B200 (NVIDIA's NeMo
submissions), the samples per second the result log's ``tracked_stats`` records in the first block of training
(each sample one 8,192-token sequence, the benchmark's packed GovReport), quoted from the logs named. They never
enter the fit: they are how the fit is checked on runs it did not see.

``rocm_fit`` and ``rocm_check``: AMD's own MLPerf Training Llama 2 70B LoRA submissions on 8 Instinct GPUs (NeMo
with Transformer Engine on ROCm), the same benchmark and the same ``tracked_stats`` samples per second. The ROCm
platform's tuned stack is fitted on its CDNA 3 runs (MI300X and MI325X, rounds v5.0 and v5.1: FP8 the only
low-precision matrix type CDNA 3 has), never on NVIDIA's, and its range is theirs; the CDNA 4 runs (MI350X, MI355X,
v5.1) only check it (their recipe's precision is not in the stored logs).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "published_2026.yaml"
OUT = ROOT / "advisor" / "data" / "fp8_runs.yaml"
GPUS = {"H100 SXM 80GB": "h100-sxm", "B200 SXM 180GB": "b200", "GB200 (Blackwell, NVL72)": "gb200"}
MODELS = {
    "LLAMA2-7B": "llama-2-7b",
    "LLAMA2-13B": "llama-2-13b",
    "LLAMA2-70B": "llama-2-70b",
    "LLAMA3-8B": "llama-3-8b",
    "LLAMA3_8B": "llama-3-8b",
    "LLAMA3-70B": "llama-3.1-70b",
    "LLAMA3_70B": "llama-3.1-70b",
    "LLAMA3.1_405B": "llama-3.1-405b",
}
METHODS = {"pretraining": "full", "full fine-tuning (SFT)": "full", "SFT (full fine-tuning)": "full", "LoRA": "lora"}
PUBLISHERS = ("github:NVIDIA/NeMo ", "github:NVIDIA-NeMo/Megatron-Bridge ")
MICRO_BATCH = re.compile(r"MBS (\d+)")
MLPERF_TOKENS_PER_SAMPLE = 8192  # mlcommons/training llama2_70b_lora: GovReport packed to 8,192 tokens a sample
MLPERF = (  # (GPU, samples/s from tracked_stats at step 1536, the log)
    (
        "h100-sxm",
        2.1754396,
        "github:mlcommons/training_results_v4.1 (mirror swsok/training_results_v4.1 @ 8821c70) : "
        "NVIDIA/results/eos_ngc24.09_nemo/llama2_70b_lora/result_0.txt (config_DGXH100_1x8x4xtp4pp1cp1: TP 4, FP8)",
    ),
    (
        "h200-sxm",
        2.4732393,
        "github:mlcommons/training_results_v4.1 (mirror swsok/training_results_v4.1 @ 8821c70) : "
        "NVIDIA/results/h200_ngc24.09_nemo/llama2_70b_lora/result_0.txt (TP 2, FP8, as config_DGXH200_1x8x2xtp2pp1cp1 "
        "of v4.0)",
    ),
    (
        "b200",
        4.6717937,
        "github:mlcommons/training_results_v4.1 (mirror swsok/training_results_v4.1 @ 8821c70) : "
        "NVIDIA/results/b200_preview_nemo/llama2_70b_lora/result_0.txt (config_DGXB200_1x8x2xtp1pp1cp2: TP 1, CP 2, "
        "FP8)",
    ),
)


AMD_V50 = "github:mlcommons/training_results_v5.0 (mirror prishajain1/training_results_v5.0 @ 0fdc28f) : AMD/results/"
AMD_V51 = "github:mlcommons/training_results_v5.1 @ 4da2d1c : AMD/results/"
ROCM_FIT = (  # (GPU, samples/s from tracked_stats at step 1536, the log, the round)
    ("mi300x", 2.0265097, AMD_V50 + "MI300X_EPYC_9575F_pytorch/llama2_70b_lora/result_0.txt", "v5.0"),
    ("mi325x", 2.7344038, AMD_V50 + "MI325X_EPYC_9575F_pytorch/llama2_70b_lora/result_0.txt", "v5.0"),
    (
        "mi300x",
        2.1140250,
        AMD_V51 + "MI300X_EPYC_9575F_pytorch_llama2_70b/llama2_70b_lora/result_0.txt (ROCm 7.0.0, NeMo 2.3.0)",
        "v5.1",
    ),
    ("mi325x", 2.8375188, AMD_V51 + "MI325X_EPYC_9575F_pytorch_llama2_70b/llama2_70b_lora/result_0.txt", "v5.1"),
)
ROCM_CHECK = (
    ("mi350x", 4.8461530, AMD_V51 + "MI350X_EPYC_9575F_pytorch/llama2_70b_lora/result_0.txt", "v5.1"),
    ("mi355x", 5.8780390, AMD_V51 + "MI355X_EPYC_9575F_pytorch/llama2_70b_lora/result_0.txt", "v5.1"),
)


def _model(workload: str) -> str | None:
    head = workload.split(" ")[0]
    return MODELS.get(head)


def fit_rows(rows: list[dict]) -> list[dict]:
    """The tuned stack's FP8 throughputs the fit reads (the module docstring says which)."""
    found = []
    for row in rows:
        precision = str(row["precision"])
        fp8 = precision in ("FP8", "FP8-CS") or precision.endswith("(FP8 per section notes)")
        model, gpu = _model(row["workload"]), GPUS.get(row["gpu"])
        if (
            row["metric"] != "training_throughput"
            or not fp8
            or model is None
            or gpu is None
            or not row["source"].startswith(PUBLISHERS)
            or row["method"] not in METHODS
        ):
            continue
        micro = MICRO_BATCH.search(row["note"])
        found.append(
            {
                "model": model,
                "method": METHODS[row["method"]],
                "seq_len": int(row["seq_len"]),
                "micro_batch": int(micro.group(1)) if micro else 1,
                "gpu": gpu,
                "gpus": int(row["gpus"]),
                "tokens_per_second_per_gpu": float(row["value"]),
                "precision": precision,
                "workload": row["workload"],
                "source": row["source"],
                "note": row["note"],
            }
        )
    return found


def _mlperf_row(gpu: str, samples: float, source: str, round_: str) -> dict:
    """MLPerf's Llama 2 70B LoRA on 8 GPUs, as tokens/s per GPU."""
    return {
        "model": "llama-2-70b",
        "method": "lora",
        "seq_len": MLPERF_TOKENS_PER_SAMPLE,
        "micro_batch": 1,
        "gpu": gpu,
        "gpus": 8,
        "samples_per_second": samples,
        "tokens_per_second_per_gpu": round(samples * MLPERF_TOKENS_PER_SAMPLE / 8, 1),
        "workload": f"MLPerf Training {round_} llama2_70b_lora (global batch 8, LoRA rank 16)",
        "source": source,
    }


def check_rows() -> list[dict]:
    """NVIDIA's MLPerf Llama 2 70B LoRA on 8 GPUs (v4.1)."""
    return [_mlperf_row(gpu, samples, source, "v4.1") for gpu, samples, source in MLPERF]


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else DEFAULT_SOURCE
    rows = yaml.safe_load(source.read_text(encoding="utf-8"))
    data = {
        "fp8_runs_version": 1,
        "fit": fit_rows(rows),
        "check": check_rows(),
        "rocm_fit": [_mlperf_row(*run) for run in ROCM_FIT],
        "rocm_check": [_mlperf_row(*run) for run in ROCM_CHECK],
    }
    head = (
        "# NVIDIA's tuned FP8 stack's published throughputs (fit) and MLPerf's Llama 2 70B LoRA logs (check; AMD's: "
        "rocm_fit, rocm_check),\n# written by scripts/import_fp8_runs.py (do not edit: re-run it); its docstring says "
        "which rows and why. Read by advisor.llm.fp8.\n"
    )
    OUT.write_text(head + yaml.safe_dump(data, sort_keys=False, width=120), encoding="utf-8")
    counts = ", ".join(f"{len(data[part])} {part}" for part in ("fit", "check", "rocm_fit", "rocm_check"))
    print(f"{counts} rows -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
