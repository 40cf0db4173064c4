"""The operations a language-model training step launches: what a GPU's host must launch, one after the other,
for each micro-batch, whatever the GPU's speed (:mod:`advisor.perf.launch`).

Counted on a real step by ``scripts/count_llm_operations.py`` (``advisor/data/llm_operations.yaml``): per block and
for the rest of the model, for full fine-tuning and LoRA, with activation checkpointing and without. QLoRA is
counted as LoRA (its dequantization kernels are not counted: a floor, never above the step's). Pure; the only I/O
is :func:`load_counts`, which reads the packaged file.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from advisor.errors import AdvisorError
from advisor.store.parse import safe_load

OPERATIONS_FILE = "llm_operations.yaml"
OPERATIONS_VERSION = 1
COUNTED_METHODS = ("full", "lora")


def checkpointing_key(checkpointing: bool) -> str:
    return "checkpointing" if checkpointing else "no_checkpointing"


@lru_cache(maxsize=1)
def load_counts() -> dict:
    """The counted operations by method and checkpointing: {"per_block": ..., "rest": ...}."""
    where = f"advisor/data/{OPERATIONS_FILE}"
    data = safe_load(resources.files("advisor").joinpath("data", OPERATIONS_FILE).read_text(encoding="utf-8"))
    if data.get("operations_version") != OPERATIONS_VERSION:
        raise AdvisorError(f"{where}: operations_version must be {OPERATIONS_VERSION}")
    return data["per_micro_batch"]


def per_micro_batch(layers: int, full: bool, checkpointing: bool) -> int:
    """The operations one micro-batch's forward and backward pass launches in a model of ``layers`` blocks."""
    counted = load_counts()["full" if full else "lora"][checkpointing_key(checkpointing)]
    return int(counted["per_block"] * layers + counted["rest"])
