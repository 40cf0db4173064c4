"""A language-model training job: a model, a method (full fine-tuning, LoRA, QLoRA), its sequence length, micro-batch,
gradient accumulation, optimizer, activation checkpointing and the tokens of the run; its work per token for the
performance model. Pure; no I/O.

Work per token, for the model's matmul weights N (the blocks' linear layers and the output layer):

- **full**: 6 N (forward 2 N, the activations' gradients 2 N, the weights' gradients 2 N);
- **LoRA / QLoRA**: 4 N + 6 A (the frozen weights cost the forward and the activations' gradients only; the
  adapters' A weights train): about two thirds of full fine-tuning's;
- **attention**: causal attention over the sequence, 2 x seq x width forward per token and layer (the scores and
  the weighted sum, half the positions on average), backward twice the forward;
- **activation checkpointing** recomputes the forward in the backward pass: 2 N (and the attention's forward) more;
- **QLoRA** dequantizes every 4-bit weight to 16 bits in each pass: memory traffic per micro-batch, which is why
  QLoRA is slower than LoRA at a small batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from advisor.errors import InputError
from advisor.format.units import MOST_DEVICES
from advisor.format.vocabulary import Precision, WorkloadKind
from advisor.llm import operations
from advisor.llm.config import ModelConfig


class Method(StrEnum):
    FULL = "full"
    LORA = "lora"
    QLORA = "qlora"


class Checkpointing(StrEnum):
    AUTO = "auto"  # on only where the job does not fit without it (what a user would do on each GPU)
    ON = "on"
    OFF = "off"


class Loss(StrEnum):
    """How the loss holds the output layer's logits (``advisor/data/stacks.yaml`` says which stack does which)."""

    FP32_LOGITS = "fp32-logits"  # the 16-bit logits, their fp32 copy, its log-softmax and gradient, every token
    BF16_LOGITS = "16bit-logits"  # the cross-entropy on the 16-bit logits themselves (no fp32 copy)
    CHUNKED = "chunked"  # the cross-entropy a chunk of tokens at a time: the 16-bit logits and their gradient
    FUSED = "fused"  # a fused linear cross-entropy: the logits never held whole


class StatePlace(StrEnum):
    """Where the optimizer's states live during training."""

    RESIDENT = "resident"  # on the GPU
    PAGED = "paged"  # CUDA unified memory (bitsandbytes' paged optimizers): paged out to the host under pressure
    OFFLOADED = "offloaded"  # in the host's memory, the step on the CPU (DeepSpeed / torchtune CPU offload)


# Bytes of optimizer state per trained weight (fp32 states; 8-bit Adam keeps one byte per state).
OPTIMIZER_STATE_BYTES = {
    "adamw": 8.0,
    "adam": 8.0,
    "adamw_8bit": 2.0,
    "paged_adamw_8bit": 2.0,
    "adamw_bnb_8bit": 2.0,
    "lion": 4.0,
    "adafactor": 4.0,
    "sgd": 4.0,
    "sgd_no_momentum": 0.0,
}
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
DEFAULT_RANK = 16
QLORA_PASSES_DEQUANT_BYTES = 2.5  # a 4-bit weight read (0.5 byte) and its 16-bit copy written (2 bytes), per pass
TOKENS_MAX = 10**15
FAMILY = "transformer"  # the calibration learns every language-model job's terms as one family


@dataclass(frozen=True)
class TrainingJob:
    """What the user trains: the model, how, and how much. ``tokens`` is the whole run (examples x length x
    epochs); ``micro_batch`` sequences of ``seq_len`` tokens go through the model at once, ``grad_accum`` of them
    make an optimizer step."""

    model: ModelConfig
    method: Method = Method.LORA
    seq_len: int = 2048
    micro_batch: int = 1
    grad_accum: int = 1
    tokens: float = 0.0  # 0: one optimizer step's tokens (set it for a run's time)
    optimizer: str = "adamw"
    checkpointing: bool = False
    precision: Precision = Precision.MIXED_BFLOAT16
    lora_rank: int = DEFAULT_RANK
    lora_targets: tuple[str, ...] = field(default=ALL_LINEAR)
    # the stack's memory choices (advisor.llm.stack puts them here); the defaults are a plain Transformers loop's
    loss: Loss = Loss.FP32_LOGITS
    activation_offloading: bool = False
    optimizer_states: StatePlace = StatePlace.RESIDENT
    optimizer_in_backward: bool = False
    compiled: bool = False  # torch.compile: fused kernels that keep fewer activations (advisor.llm.job_memory)
    loads_16bit: bool = False  # QLoRA: the stack puts the 16-bit weights on the GPU before quantizing them
    double_quant: bool = False  # QLoRA: the 4-bit blocks' scales quantized too (bitsandbytes' double quantization)
    persistent_gradients: bool = False  # the stack keeps every gradient in one buffer for the whole run (Megatron)
    transformer_engine: bool = False  # the blocks are Transformer Engine's fused modules (NeMo, Megatron-Core)
    keeps_4bit_inputs: bool = False  # QLoRA: each 4-bit layer keeps its input (bitsandbytes before July 2024)
    unties_embeddings: bool = False  # the stack's model has its own output layer where the model ties it (LitGPT)
    shares_adapter_inputs: bool = False  # LoRA: the adapters read their layer's 16-bit input itself (torchtune)
    fp8: bool = False  # the linear layers' matmuls in FP8 (Transformer Engine), at the tuned stack's fitted speed
    tensor_parallel: bool = False  # the model split over the GPUs as Megatron does (tensor, sequence, pipeline)
    stack: str = ""  # the stack's name: its fitted memory constants ("": the pooled fit's)

    def __post_init__(self) -> None:
        checks = (  # (holds, the field, what it must be)
            (self.seq_len >= 1, "seq_len", f"must be 1 or more, got {self.seq_len}"),
            (self.micro_batch >= 1, "batch", f"must be 1 or more, got {self.micro_batch}"),
            (self.grad_accum >= 1, "grad_accum", f"must be 1 or more, got {self.grad_accum}"),
            (0 <= self.tokens <= TOKENS_MAX, "tokens", f"must be 0 to {TOKENS_MAX:.0e}, got {self.tokens:g}"),
            (
                self.optimizer in OPTIMIZER_STATE_BYTES,
                "optimizer",
                f"must be one of {', '.join(OPTIMIZER_STATE_BYTES)}, got {self.optimizer!r}",
            ),
            (self.lora_rank >= 1, "lora_rank", f"must be 1 or more, got {self.lora_rank}"),
            (
                self.precision != Precision.FLOAT32 or self.method != Method.QLORA,
                "method",
                "QLoRA computes in 16 bits: choose bf16 or fp16",
            ),
        )
        for ok, name, message in checks:
            if not ok:
                raise InputError(name, message)
        unknown = set(self.lora_targets) - set(self.model.linear_shapes())
        if self.method != Method.FULL and unknown:
            raise InputError(
                "lora_targets",
                f"{sorted(unknown)} are not linear layers of {self.model.name} "
                f"({', '.join(self.model.linear_shapes())})",
            )

    @property
    def tokens_per_micro_batch(self) -> int:
        return self.seq_len * self.micro_batch

    @property
    def tokens_per_step(self) -> int:
        return self.tokens_per_micro_batch * self.grad_accum

    @property
    def run_tokens(self) -> float:
        return self.tokens or float(self.tokens_per_step)

    @property
    def adapter_parameters(self) -> int:
        """LoRA's trained weights: rank x (inputs + outputs) for each targeted layer of each block."""
        if self.method == Method.FULL:
            return 0
        shapes = self.model.linear_shapes()
        return self.model.layers * sum(
            self.lora_rank * (shapes[t][0] + shapes[t][1]) for t in self.lora_targets if t in shapes
        )

    @property
    def trainable_parameters(self) -> int:
        return self.held_parameters if self.method == Method.FULL else self.adapter_parameters

    @property
    def held_parameters(self) -> int:
        """The weights the stack's model holds while training: the model's, and an output layer of its own where
        the stack unties the one the model shares with its input embedding (``unties_embeddings``: LitGPT)."""
        untied = self.unties_embeddings and self.model.tied_embeddings
        return self.model.parameters + (self.model.vocab * self.model.hidden if untied else 0)

    def attention_flops_per_token(self) -> float:
        """Causal attention's forward per token over all layers: scores and weighted sum, 2 x 2 x (seq / 2) x width."""
        return 2.0 * self.seq_len * self.model.attention_width * self.model.layers

    def flops_per_token(self) -> float:
        """Training FLOPs per token (forward, backward and, with checkpointing, the recomputed forward)."""
        n = float(self.model.matmul_parameters)
        attention = self.attention_flops_per_token()
        if self.method == Method.FULL:
            total = 6 * n + 3 * attention
        else:
            total = 4 * n + 6 * self.adapter_parameters + 3 * attention
        if self.checkpointing:
            total += 2 * n + attention
        return total

    def dequantized_bytes_per_micro_batch(self) -> float:
        """QLoRA: every 4-bit block weight turned back into 16 bits, in each forward, backward (and recompute)."""
        if self.method != Method.QLORA:
            return 0.0
        return self.passes * QLORA_PASSES_DEQUANT_BYTES * self.model.layers * self.model.block_linear_parameters

    @property
    def passes(self) -> int:
        """Passes through the blocks per micro-batch: forward, backward, and the recomputed forward."""
        return 3 if self.checkpointing else 2

    def with_checkpointing(self, on: bool) -> TrainingJob:
        return replace(self, checkpointing=on)

    def describe(self) -> str:
        """'Llama 3.1 8B, LoRA rank 16 on all linear layers, 2,048 tokens x 1 (x 8 accumulated), adamw'."""
        method = {
            Method.FULL: "full fine-tuning",
            Method.LORA: f"LoRA rank {self.lora_rank}",
            Method.QLORA: f"QLoRA (4-bit base) rank {self.lora_rank}",
        }[self.method]
        if self.method != Method.FULL:
            on = (
                "all linear layers"
                if set(self.lora_targets) >= set(self.model.linear_shapes())
                else ", ".join(self.lora_targets)
            )
            method += f" on {on}"
        accum = f" (x {self.grad_accum} accumulated)" if self.grad_accum > 1 else ""
        ckpt = ", activation checkpointing" if self.checkpointing else ""
        stack = f" ({self.stack})" if self.stack else ""
        return (
            f"{self.model.name}, {method}, {self.seq_len:,} tokens x {self.micro_batch}{accum}, "
            f"{self.optimizer}{ckpt}{stack}"
        )

    def workload_spec(self) -> dict[str, Any]:
        """The job as the performance model's published-style workload: a sample is a token, a batch the tokens of a
        micro-batch, the run ``run_tokens`` of them; one matmul phase (its FLOPs per token) and one element-wise
        phase (the activations it moves, and QLoRA's dequantization)."""
        per_token = self.flops_per_token()
        activations = activation_values_per_token(self)
        dequant = self.dequantized_bytes_per_micro_batch() / (6.0 * self.tokens_per_micro_batch)
        # the optimizer's step reads and writes every trained weight, its gradient and its states once per step
        step_bytes = 2 * self.trainable_parameters * (4 + 4 + OPTIMIZER_STATE_BYTES[self.optimizer])
        optimizer = step_bytes / (6.0 * self.tokens_per_step)
        tokens = max(1, round(self.run_tokens))
        return {
            "name": self.describe(),
            "kind": WorkloadKind.PUBLISHED,
            "unit": "tokens",
            "train_samples": tokens,
            "batch_size": self.tokens_per_micro_batch,
            "epochs": 1,
            "optimizer": self.optimizer,
            "parameters": int(self.model.parameters),
            "flops_per_sample": per_token,
            "phases": [
                {"kind": "matmul", "flops_per_sample": per_token},
                {"kind": "elementwise", "activations_per_sample": activations + dequant + optimizer},
            ],
            "source": f"{self.model.source}; work per token by advisor.llm.job",
            "family": FAMILY,
            # the kernels a micro-batch launches (counted on a real step: advisor.llm.operations)
            "operations_per_step": operations.per_micro_batch(
                self.model.layers, self.method == Method.FULL, self.checkpointing
            ),
            # data parallel all-reduces the trained weights' fp32 gradients once an optimizer step
            "gradient_bytes_per_batch": 4.0 * self.trainable_parameters / self.grad_accum,
        }


def activation_values_per_token(job: TrainingJob) -> float:
    """16-bit values a block's forward pass writes per token, over all blocks (what the element-wise work moves):
    the norms' inputs and outputs, queries, keys, values, the attention output, the MLP's branches."""
    m = job.model
    mlp = (3 if m.gated_mlp else 1) * m.intermediate + m.intermediate
    per_layer = 5 * m.hidden + 2 * m.attention_width + 2 * m.kv_width + mlp
    return float(m.layers * per_layer)


def job_from_options(
    model: ModelConfig,
    method: str,
    seq_len: int,
    batch: int,
    grad_accum: int = 1,
    tokens: float = 0.0,
    optimizer: str = "adamw",
    checkpointing: bool = False,
    precision: str = Precision.MIXED_BFLOAT16.value,
    lora_rank: int = DEFAULT_RANK,
    lora_targets: str = "all-linear",
) -> TrainingJob:
    """A job from the command line's (or the app's) words; a clear error for a wrong one."""
    try:
        chosen = Method(method.lower())
    except ValueError:
        raise InputError("method", f"must be one of {', '.join(m.value for m in Method)}, got {method!r}") from None
    targets = (
        tuple(model.linear_shapes())
        if lora_targets in ("all-linear", "all")
        else tuple(t.strip() for t in lora_targets.split(",") if t.strip())
    )
    return TrainingJob(
        model=model,
        method=chosen,
        seq_len=seq_len,
        micro_batch=batch,
        grad_accum=grad_accum,
        tokens=float(tokens),
        optimizer=optimizer.lower(),
        checkpointing=checkpointing,
        precision=Precision(precision),
        lora_rank=lora_rank,
        lora_targets=targets,
    )


@dataclass(frozen=True)
class JobRequest:
    """A language-model job and how it is run: what the command line's options and the app's inputs both make, and
    what :meth:`advisor.decision.pipeline.Advisor.job_advice` answers. ``checkpointing`` auto: on only on a GPU the
    job does not fit without it; ``devices`` above 1: that many GPUs too, each with a whole copy (DDP) or, with
    ``sharded``, their share (FSDP / ZeRO-3); ``pure_16bit``: no fp32 master copy (LitGPT's bf16-true);
    ``gpu_ids``: these catalog GPUs only (None: every one). :func:`advisor.llm.stack.job_request` makes one from the
    command line's options and the app's inputs alike."""

    job: TrainingJob
    checkpointing: Checkpointing = Checkpointing.AUTO
    devices: int = 1
    sharded: bool = False
    pure_16bit: bool = False
    gpu_ids: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.devices <= MOST_DEVICES:
            raise InputError("devices", f"must be 1 to {MOST_DEVICES}, got {self.devices}")
