"""Tokens per second of published fine-tuning runs of several training stacks against the estimate of the same job
(issue 35: median within 1.25x). Each published figure is quoted with its source; the estimate is the performance
model's (`advisor estimate --model-config ... --stack ...`), run with the settings the source states.

    python benchmarks/bench_stack_throughput.py

Not a test: it prints a table and the median error (published / predicted, either way).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.cli import main  # noqa: E402

TORCHTUNE = (
    "github:pytorch/torchtune @ 0031bfb080 : README.md 'Memory and training speed' (batch 2, packed 2,048, "
    "torch.compile)"
)
FACTORY = (
    "github:unslothai/unsloth @ 0a2c397393 : README.md (LLaMA-Factory's benchmark: LoRA rank 8 on q_proj and "
    "v_proj, batch 4, gradient accumulation 2, length 1,024, A100)"
)
LORA_8B = "--model-config llama-3.1-8b --seq-len 2048 --batch 2 --lora-rank 8 --stack torchtune --gpu rtx-4090"
FACTORY_JOB = (
    "--model-config llama-2-7b --seq-len 1024 --batch 4 --grad-accum 2 --lora-rank 8 --lora-targets "
    "q_proj,v_proj --gpu a100-40gb-sxm4"
)
CASES = (  # (what, published tokens/s, the estimate's options, source)
    ("torchtune LoRA, Llama 3.1 8B, RTX 4090", 3083, f"{LORA_8B} --method lora --loss fused", TORCHTUNE),
    ("torchtune QLoRA, Llama 3.1 8B, RTX 4090", 2413, f"{LORA_8B} --method qlora --loss fused", TORCHTUNE),
    ("torchtune full, Llama 3.1 8B, RTX 4090", 1650, f"{LORA_8B} --method full", TORCHTUNE),
    (
        "Transformers + FA2 LoRA, Llama 2 7B, A100",
        2954,
        f"{FACTORY_JOB} --method lora --stack hf-trainer --checkpointing on",
        FACTORY,
    ),
    (
        "Unsloth LoRA, Llama 2 7B, A100",
        4007,
        f"{FACTORY_JOB} --method lora --stack unsloth --activation-offloading off",
        FACTORY,
    ),
    (
        "Transformers QLoRA, Llama 2 7B, A100",
        2415,
        f"{FACTORY_JOB} --method qlora --stack hf-trainer --checkpointing on",
        FACTORY,
    ),
    (
        "Unsloth QLoRA, Llama 2 7B, A100",
        3726,
        f"{FACTORY_JOB} --method qlora --stack unsloth --activation-offloading off",
        FACTORY,
    ),
)


def predicted_tokens_per_second(options: str) -> float:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["--profiles", str(ROOT / "profiles"), "estimate", *options.split(), "--json"])
    if status != 0:
        raise SystemExit(f"estimate {options}: exit {status}")
    rows = [row for row in json.loads(out.getvalue()) if row["devices"] == 1]
    return float(rows[0]["tokens_per_second"])


def run() -> None:
    ratios = []
    for what, published, options, source in CASES:
        predicted = predicted_tokens_per_second(options)
        ratios.append(published / predicted)
        print(
            f"{what:45s} published {published:6,d}  predicted {predicted:8,.0f}  published / predicted "
            f"{published / predicted:5.2f}   ({source})"
        )
    error = math.exp(statistics.median(abs(math.log(r)) for r in ratios))
    print(f"median error {error:.3f}x over {len(ratios)} published throughputs (target: at most 1.25x)")


if __name__ == "__main__":
    run()
