"""A language-model training job's peak GPU memory, from its parts, calibrated and checked on published peaks.

    memory = weights                    16-bit (2 bytes), fp32 master weights in mixed precision (4 bytes), a QLoRA
                                        base's 4-bit blocks (0.5 byte + their scales); embeddings stay 16-bit
           + gradients                  of the trained weights (4 bytes; 2 in pure 16-bit training)
           + optimizer state            by optimizer (AdamW 8 bytes per trained weight, 8-bit AdamW 2, SGD 4)
           + activations x FACTOR       what the backward pass keeps per token (every block's, or with activation
                                        checkpointing each block's input and one block's worth), the logits (16-bit,
                                        their fp32 copy for the loss and its gradient), LoRA's inputs and ranks
           + OVERHEAD_GB                the CUDA context, cuBLAS workspaces, the allocator's slack

FACTOR and OVERHEAD_GB are fitted (:mod:`advisor.llm.validation`) on the published peaks of
``advisor/data/llm_memory_peaks.yaml`` and the range is their cross-validated error: a job ``fits`` where the upper
end of its range fits the GPU's usable memory, is ``tight`` where only the prediction or its lower end does, and
``does not fit`` where even the lower end is beyond the card. Pure; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum

from advisor.llm.job import OPTIMIZER_STATE_BYTES, Method, TrainingJob, activation_values_per_token

GB = 1e9
# Fitted on the published peaks (python -m advisor.llm.validation prints them; tests/test_llm.py checks that
# they are still the fit's): the activations' multiplier and the framework's own memory.
ACTIVATION_FACTOR = 0.982
OVERHEAD_GB = 2.3
# The cross-validated error of the prediction (observed / predicted, leave one published source-model group out):
# its 5th and 95th percentiles. The range of every prediction.
RANGE_LOW = 0.587
RANGE_HIGH = 1.109
USABLE = 0.95  # the share of a GPU's memory a run can use (the driver, a display, fragmentation keep the rest)
QUANTIZED_BYTES = 0.5 + 4 / 64  # NF4 / GPTQ int4: half a byte, and an fp32 scale per 64 weights
LOGIT_BYTES = 2 + 4 + 4  # per vocabulary entry and token: the 16-bit logits, their fp32 copy, its gradient


class Fit(StrEnum):
    FITS = "fits"
    TIGHT = "tight"
    NO = "does not fit"


@dataclass(frozen=True)
class Footprint:
    """A job's predicted peak memory on one GPU, by part (GB), and its range."""

    weights_gb: float
    gradients_gb: float
    optimizer_gb: float
    activations_gb: float  # already times the factor
    overhead_gb: float
    low_factor: float = RANGE_LOW
    high_factor: float = RANGE_HIGH

    @property
    def total_gb(self) -> float:
        return self.weights_gb + self.gradients_gb + self.optimizer_gb + self.activations_gb + self.overhead_gb

    @property
    def low_gb(self) -> float:
        return self.total_gb * self.low_factor

    @property
    def high_gb(self) -> float:
        return self.total_gb * self.high_factor

    def verdict(self, capacity_gb: float) -> Fit:
        """fits: the range's upper end fits the usable memory; does not fit: not even its lower end fits the card."""
        if self.high_gb <= capacity_gb * USABLE:
            return Fit.FITS
        if self.low_gb > capacity_gb:
            return Fit.NO
        return Fit.TIGHT

    def parts(self) -> dict[str, float]:
        return {"weights": self.weights_gb, "gradients": self.gradients_gb, "optimizer": self.optimizer_gb,
                "activations": self.activations_gb, "framework": self.overhead_gb}  # fmt: skip


def static_bytes(job: TrainingJob, pure_16bit: bool = False) -> tuple[float, float, float]:
    """(weights, gradients, optimizer state) in bytes. Mixed precision keeps fp32 master weights of what trains
    (``pure_16bit``: LitGPT's bf16-true, weights, gradients and states in 16 bits)."""
    m = job.model
    trained = float(job.trainable_parameters)
    master = 2.0 if pure_16bit else 4.0
    state = OPTIMIZER_STATE_BYTES[job.optimizer] / (2.0 if pure_16bit and job.optimizer in ("adamw", "adam") else 1.0)
    if job.method == Method.FULL:
        # mixed precision: fp32 master weights and gradients beside the 16-bit ones the kernels use (DeepSpeed's,
        # Megatron's and NeMo's layout; PyTorch's autocast casts a layer at a time, a little less)
        weights = master * m.parameters + (0.0 if pure_16bit else 2.0 * m.parameters)
        gradients = master * trained + (0.0 if pure_16bit else 2.0 * trained)
        return weights, gradients, state * trained
    else:
        frozen_blocks = m.layers * m.block_linear_parameters
        other = m.parameters - frozen_blocks
        base = QUANTIZED_BYTES if job.method == Method.QLORA else 2.0
        weights = base * frozen_blocks + 2.0 * other + master * trained
    return weights, master * trained, state * trained


def activation_bytes(job: TrainingJob) -> float:
    """The bytes the backward pass needs at its peak, before the factor: per token of a micro-batch."""
    m = job.model
    tokens = float(job.tokens_per_micro_batch)
    per_layer = activation_values_per_token(job) / m.layers * 2.0  # 16-bit values
    if job.method != Method.FULL:
        shapes = m.linear_shapes()
        per_layer += 2.0 * sum(shapes[t][0] + job.lora_rank for t in job.lora_targets if t in shapes)
    # with checkpointing: each block's input, and one block recomputed at a time
    blocks = m.layers * 2.0 * m.hidden + per_layer if job.checkpointing else m.layers * per_layer
    logits = LOGIT_BYTES * m.vocab
    return tokens * (blocks + logits)


def predict(job: TrainingJob, pure_16bit: bool = False, factor: float = ACTIVATION_FACTOR,
            overhead_gb: float = OVERHEAD_GB, shards: int = 1) -> Footprint:  # fmt: skip
    """The job's peak memory on one GPU, with its cross-validated range. ``shards`` above 1: FSDP (ZeRO-3) over that
    many GPUs, each holding its share of the weights, gradients and optimizer state, plus the 16-bit weights of two
    blocks gathered at a time (the one computing and the one prefetched); the activations stay whole (each GPU runs
    its own micro-batch). The published peaks checked are of one GPU: the sharded figure is the parts' arithmetic."""
    weights, gradients, optimizer = static_bytes(job, pure_16bit)
    if shards > 1:
        gathered = 2 * 2.0 * job.model.block_linear_parameters
        weights, gradients, optimizer = weights / shards + gathered, gradients / shards, optimizer / shards
    return Footprint(weights / GB, gradients / GB, optimizer / GB, factor * activation_bytes(job) / GB, overhead_gb)


def largest_micro_batch(job: TrainingJob, capacity_gb: float, pure_16bit: bool = False, shards: int = 1) -> int:
    """The largest micro-batch whose range fits the usable memory (0: not even one sequence)."""
    one = predict(replace(job, micro_batch=1), pure_16bit, shards=shards)
    room = capacity_gb * USABLE / one.high_factor - (one.total_gb - one.activations_gb)
    return max(0, math.floor(room / one.activations_gb)) if one.activations_gb > 0 else 0


def largest_seq_len(job: TrainingJob, capacity_gb: float, pure_16bit: bool = False, shards: int = 1) -> int:
    """The longest sequence (a multiple of 128) whose range fits the usable memory at the job's micro-batch."""
    one = predict(replace(job, seq_len=1), pure_16bit, shards=shards)
    room = capacity_gb * USABLE / one.high_factor - (one.total_gb - one.activations_gb)
    # activations are linear in the tokens (flash attention keeps no seq x seq scores)
    return max(0, math.floor(room / one.activations_gb) // 128 * 128) if one.activations_gb > 0 else 0
