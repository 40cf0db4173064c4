"""The language-model memory model against a published ladder of memory-saving choices, held out of every fit.

torchtune's README ("Optimization flags", github:pytorch/torchtune @ a9ea6d5bf0) measures Llama 3.2 3B on an A100
(full_finetune_single_device, batch 2 without accumulation, a dataset packed to 4,096 tokens, bf16, torch compile
from the second row; the chunked loss compiled is taken as fused, as for torchtune's other published peaks),
adding one technique at a time, and reports each step's "Peak Memory Active" (GiB; the allocator's active bytes, no
CUDA context). LoRA and QLoRA (rank 64 on q, v, output projections and the MLP: 3B_lora_single_device /
3B_qlora_single_device) keep every choice but the 8-bit AdamW and the step in the backward pass. These peaks are in
no fit (advisor/data/*_memory_peaks.yaml do not hold them): the check is of the model's parts, each choice's saving
above all, which is what the least-memory ladder (``estimate --model-config`` rows that do not fit) promises.

Printed: each row's published and predicted peak (the torchtune stack's constants), their ratio, and each choice's
saving, published and predicted.

Usage: python benchmarks/bench_memory_ladder.py
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.llm import memory, validation  # noqa: E402
from advisor.llm.config import load_presets  # noqa: E402

GB_PER_GIB = 2**30 / 1e9
SOURCE = 'github:pytorch/torchtune @ a9ea6d5bf0 : README.md "Optimization flags"'
FULL = {"method": "full", "lora_rank": 8, "lora_targets": "q_proj,v_proj"}
LORA = {"method": "lora", "lora_rank": 64, "lora_targets": "q_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"}
# (the row, its published GiB, the choices it runs with); "+ Packed Dataset" (60.0 GiB) is left out: it alone is not
# compiled, and the model has no choice for torch compile
LADDER = [
    ("+ Compile", 51.0, {**FULL, "loss": "16bit-logits", "checkpointing": False}),
    ("+ Chunked Cross Entropy", 42.9, {**FULL, "loss": "fused", "checkpointing": False}),
    ("+ Activation Checkpointing", 24.9, {**FULL, "loss": "fused", "checkpointing": True}),
    ("+ Fuse optimizer step into backward", 23.1, {**FULL, "loss": "fused", "checkpointing": True,
                                                   "optimizer_in_backward": "on"}),
    ("+ Activation Offloading", 21.8, {**FULL, "loss": "fused", "checkpointing": True,
                                       "optimizer_in_backward": "on", "activation_offloading": "on"}),
    ("+ 8-bit AdamW", 17.6, {**FULL, "loss": "fused", "checkpointing": True, "optimizer_in_backward": "on",
                             "activation_offloading": "on", "optimizer": "adamw_8bit"}),
    ("LoRA", 8.5, {**LORA, "loss": "fused", "checkpointing": True, "activation_offloading": "on"}),
    ("QLoRA", 4.6, {**LORA, "method": "qlora", "loss": "fused", "checkpointing": True,
                    "activation_offloading": "on"}),
]  # fmt: skip
DEFAULTS = {"optimizer": "adamw", "optimizer_in_backward": "off", "activation_offloading": "off",
            "optimizer_states": "resident"}  # fmt: skip


def predicted_gb(choices: dict) -> tuple[float, float]:
    """The torchtune stack's prediction of one row (GB), and the range's upper end."""
    entry = {"model": "llama-3.2-3b", "seq_len": 4096, "batch": 2, "grad_accum": 1, "gpu": "a100-80gb-sxm4",
             "gpu_memory_gb": 80,
             "pure_16bit": True, "stack": "torchtune", "workload": "ladder", "published_method": "ladder",
             "source": SOURCE, "peak_gb": 0.0, **DEFAULTS, **choices}  # fmt: skip
    case = validation.case_of(entry, load_presets())
    footprint = memory.predict(case.job, case.pure_16bit)
    return footprint.total_gb, footprint.high_gb


print(f"Llama 3.2 3B on an A100, torchtune's memory ladder ({SOURCE}), held out of every fit:")
print(f"{'row':<38} {'published':>10} {'predicted':>10} {'ratio':>6} {'saving: published':>18} {'predicted':>10}")
before = None
for name, gib, choices in LADDER:
    published = gib * GB_PER_GIB
    point, _ = predicted_gb(choices)
    saving = "" if before is None or name in ("LoRA", "QLoRA") else (
        f"{before[0] - published:>18.2f} {before[1] - point:>10.2f}")  # fmt: skip
    print(f"{name:<38} {published:>9.2f}G {point:>9.2f}G {published / point:>6.3f} {saving}")
    before = (published, point)
