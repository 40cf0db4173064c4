"""The language-model memory model against a published ladder of memory-saving choices, each row predicted by a fit
that did not see its model.

torchtune's README ("Optimization flags", github:pytorch/torchtune @ a9ea6d5bf0) measures Llama 3.2 3B on an A100
(batch 2 without accumulation, a dataset packed to 4,096 tokens, bf16, torch compile), adding one technique at a time,
and reports each step's "Peak Memory Active"; LoRA and QLoRA keep every technique but the 8-bit AdamW and the step in
the backward pass. The rows are torchtune's peaks in ``advisor/data/stack_memory_peaks.yaml`` (their settings and
sources there); the cross-validation (:func:`advisor.llm.validation.cross_validate`) predicts them with constants
fitted without the model's rows. What this adds: each choice's saving, published against predicted, which is what the
least-memory ladder (``estimate --model-config`` rows that do not fit) promises a user.

Usage: python benchmarks/bench_memory_ladder.py
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.llm import validation  # noqa: E402

LADDER = "Llama 3.2 3B memory ladder (torchtune README), "  # the rows' workload, then the technique

report = validation.cross_validate()
rows = [(c, ratio) for c, ratio in zip(report.cases, report.ratios, strict=True) if c.workload.startswith(LADDER)]
print(
    f"Llama 3.2 3B on an A100, torchtune's memory ladder, each row predicted without the model's rows "
    f"({len(rows)} rows):"
)
print(f"{'row':<38} {'published':>10} {'predicted':>10} {'ratio':>6} {'saving: published':>18} {'predicted':>10}")
before = None
for case, ratio in rows:
    name = case.workload.removeprefix(LADDER)
    published, predicted = case.peak_gb, case.peak_gb / ratio
    full = case.job.method == "full"
    saving = f"{before[0] - published:>18.2f} {before[1] - predicted:>10.2f}" if before and full else ""
    print(f"{name:<38} {published:>9.2f}G {predicted:>9.2f}G {ratio:>6.3f} {saving}")
    before = (published, predicted) if full else None
ratios = sorted(ratio for _, ratio in rows)
print(f"median published / predicted {ratios[len(ratios) // 2]:.3f}, from {ratios[0]:.3f} to {ratios[-1]:.3f}")
