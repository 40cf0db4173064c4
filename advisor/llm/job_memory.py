"""A language-model training job's peak GPU memory, from its parts, calibrated and checked on published peaks.

    memory = weights                    16-bit (2 bytes), fp32 master weights in mixed precision (4 bytes), a QLoRA
                                        base's 4-bit blocks (0.5 byte + their scales) and the computing layer's
                                        16-bit copy (:func:`dequantized_bytes`); embeddings stay 16-bit
           + gradients                  of the trained weights (4 bytes; 2 in pure 16-bit training); with the
                                        optimizer step in the backward pass only the largest one at a time
           + optimizer state            by optimizer (AdamW 8 bytes per trained weight, 8-bit AdamW 2, SGD 4); none on
                                        the GPU where the stack pages or offloads it to the host
           + activations x FACTOR       what the backward pass keeps per token (every block's: what autograd saves
                                        given the norms and which weights train, or what a compiled model keeps,
                                        :func:`block_saved_values`; with activation checkpointing each block's
                                        input and one block's worth; offloaded: two blocks in flight), the logits
                                        as the loss holds them (LOGIT_BYTES)
           + OVERHEAD_GB                the CUDA context, cuBLAS workspaces, the allocator's slack

FACTOR and OVERHEAD_GB are fitted (:mod:`advisor.llm.validation`) on the published peaks of
``advisor/data/llm_memory_peaks.yaml`` and ``stack_memory_peaks.yaml``: per training stack where that stack has
enough published peaks, else on all of them, and each stack's range is its cross-validated error (each source's
model predicted without its own peaks) applied to the fitted part (the static part is the job's arithmetic),
written in ``advisor/data/llm_memory_fit.yaml``. A job ``fits`` where the
upper end of its range fits the GPU's usable memory, is ``tight`` where only the prediction or its lower end does,
and ``does not fit`` where even the lower end is beyond the card. Pure, but for :func:`load_fit` (one file).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache
from importlib import resources

from advisor.errors import AdvisorError
from advisor.llm.job import OPTIMIZER_STATE_BYTES, Loss, Method, StatePlace, TrainingJob
from advisor.perf.memory import USABLE, card_gb  # one usable share and one card size for every memory model
from advisor.store.parse import safe_load

GB = 1e9
FIT_FILE = "llm_memory_fit.yaml"
FIT_VERSION = 1

# NF4: half a byte a weight and an fp32 scale per 64 weights; with double quantization the scales in 8 bits, an
# fp32 scale per 256 of them (bitsandbytes' bnb_4bit_use_double_quant, torchao's NF4 scaler blocks)
QUANTIZED_BYTES = {False: 0.5 + 4 / 64, True: 0.5 + 1 / 64 + 4 / (64 * 256)}
# Bytes per vocabulary entry and token the loss holds at its peak. Transformers' ForCausalLMLoss: the 16-bit
# logits, their fp32 copy, the fp32 log-softmax the cross-entropy keeps, its fp32 gradient and the 16-bit cast of
# it; on the 16-bit logits themselves (Qwen v1's own modelling code): the logits, a shifted copy, the log-softmax,
# its gradient and the logits' gradient, 16-bit each; a chunk at a time: the 16-bit logits and their 16-bit
# gradient; fused: none held whole.
LOGIT_BYTES = {
    Loss.FP32_LOGITS: 2.0 + 4.0 + 4.0 + 4.0 + 2.0,
    Loss.BF16_LOGITS: 5 * 2.0,
    Loss.CHUNKED: 2.0 + 2.0,
    Loss.FUSED: 0.0,
}
IN_FLIGHT_BLOCKS = 2  # activation offloading: the block computing and the one being copied
FP8_WEIGHT_BYTES = 1.0
MOST_TENSOR_PARALLEL = 8  # tensor parallelism stays within a node's NVLink domain (8 GPUs of an HGX/DGX board)


@dataclass(frozen=True)
class Split:
    """How Megatron splits a job over its GPUs: the model over ``tensor`` GPUs of a node (tensor and sequence
    parallelism) times ``pipeline`` stages, the rest ``data`` parallel with the fp32 master weights and optimizer
    states sharded over those copies (the distributed optimizer). ``Split()``: one GPU holds the whole job."""

    tensor: int = 1
    pipeline: int = 1
    data: int = 1

    @property
    def model(self) -> int:
        """The GPUs one copy of the model is split over."""
        return self.tensor * self.pipeline


WHOLE = Split()


@dataclass(frozen=True)
class Constants:
    """A stack's fitted constants and cross-validated range: the 5th and 95th percentile of the published peak less
    the job's static part (weights, gradients, optimizer state) over the fitted part the model predicted for it."""

    factor: float
    overhead_gb: float
    range_low: float
    range_high: float
    cases: int  # published peaks the constants were fitted on
    stack: str = ""  # "": the pooled fit of every stack's peaks


@lru_cache(maxsize=1)
def load_fit() -> dict[str, Constants]:
    """The fitted constants by stack ("" the pooled ones), from ``advisor/data/llm_memory_fit.yaml``."""
    data = safe_load(resources.files("advisor").joinpath("data", FIT_FILE).read_text(encoding="utf-8"))
    if data.get("fit_version") != FIT_VERSION:
        raise AdvisorError(f"advisor/data/{FIT_FILE}: fit_version must be {FIT_VERSION}")
    fitted = {"": Constants(**data["pooled"])}
    fitted.update({name: Constants(**entry, stack=name) for name, entry in (data.get("stacks") or {}).items()})
    return fitted


def constants_for(stack: str) -> Constants:
    """The stack's own fit where it has one, else the pooled fit (its range the pooled cross-validated error)."""
    fitted = load_fit()
    return fitted.get(stack, fitted[""])


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
    low_factor: float
    high_factor: float
    host_gb: float = 0.0  # what the stack keeps in the host's memory instead (paged or offloaded states, activations)
    loading_gb: float = 0.0  # a stack that quantizes on the GPU: the 16-bit weights there while loading
    gradients_apart: bool = False  # the gradients exist only in the backward pass and the step (see gradient_phases)

    @property
    def floor_static_gb(self) -> float:
        """What the job's numbers decide alone at the peaks the activations are not part of: the loading (the 16-bit
        weights before they are quantized), and, where the gradients peak apart, the end of the backward pass
        (weights, gradients and optimizer state, the activations freed); 0 where neither applies."""
        backward = self.weights_gb + self.gradients_gb + self.optimizer_gb if self.gradients_apart else 0.0
        return max(self.loading_gb, backward)

    @property
    def _floor_gb(self) -> float:
        """Those peaks with the framework's own: the footprint is never below them."""
        return self.floor_static_gb + self.overhead_gb if self.floor_static_gb else 0.0

    @property
    def static_gb(self) -> float:
        """What the job's numbers decide alone beside the activations: weights, optimizer state and the gradients
        held during the forward pass (all of them, or none where they peak apart)."""
        held = 0.0 if self.gradients_apart else self.gradients_gb
        return self.weights_gb + held + self.optimizer_gb

    @property
    def fitted_gb(self) -> float:
        """What the fit decides: the activations times the factor and the framework's own."""
        return self.activations_gb + self.overhead_gb

    @property
    def total_gb(self) -> float:
        return max(self.static_gb + self.fitted_gb, self._floor_gb)

    @property
    def low_gb(self) -> float:
        """The range's lower end: the fitted part times the cross-validated error's 5th percentile."""
        return max(0.0, self.static_gb + self.fitted_gb * self.low_factor, self._floor_gb)

    @property
    def high_gb(self) -> float:
        """The range's upper end: the fitted part times the cross-validated error's 95th percentile."""
        return max(self.static_gb + self.fitted_gb * self.high_factor, self._floor_gb)

    def verdict(self, capacity_gb: float) -> Fit:
        """fits: the range's upper end fits the usable memory; does not fit: not even its lower end fits the card
        (``capacity_gb`` as the card's datasheet states it)."""
        if self.high_gb <= card_gb(capacity_gb) * USABLE:
            return Fit.FITS
        if self.low_gb > card_gb(capacity_gb):
            return Fit.NO
        return Fit.TIGHT

    def parts(self) -> dict[str, float]:
        parts = {
            "weights": self.weights_gb,
            "gradients": self.gradients_gb,
            "optimizer": self.optimizer_gb,
            "activations": self.activations_gb,
            "framework": self.overhead_gb,
        }
        return {**parts, "loading": self.loading_gb} if self.loading_gb else parts


def static_bytes(job: TrainingJob, pure_16bit: bool = False) -> tuple[float, float, float]:
    """(weights, gradients, optimizer state) on the GPU in bytes. Mixed precision keeps fp32 master weights of what
    trains (``pure_16bit``: weights, gradients and states in 16 bits); the optimizer step in the backward pass
    holds one parameter's gradient at a time; paged or offloaded states are not on the GPU (:func:`host_bytes`)."""
    m = job.model
    trained = float(job.trainable_parameters)
    master = 2.0 if pure_16bit else 4.0
    state = _state_bytes(job, pure_16bit) if job.optimizer_states == StatePlace.RESIDENT else 0.0
    blocks = m.layers * m.block_linear_parameters
    # FP8 (Transformer Engine's fp8 params, as NeMo sets them with FP8): the blocks' linear weights the kernels read
    # are one byte each instead of two
    compute = FP8_WEIGHT_BYTES if job.fp8 else 2.0
    if job.method == Method.FULL:
        # mixed precision: fp32 master weights and gradients beside the 16-bit ones the kernels use (DeepSpeed's,
        # Megatron's and NeMo's layout; PyTorch's autocast casts a layer at a time, a little less)
        copy = 0.0 if pure_16bit else compute * blocks + 2.0 * (job.held_parameters - blocks)
        weights = master * job.held_parameters + copy
        # the 16-bit gradients beside the fp32 ones, but in Megatron's buffer (persistent_gradients): its backward
        # hook adds each parameter's 16-bit gradient into the fp32 main_grad and frees it at once
        held_16bit = 0.0 if pure_16bit or job.persistent_gradients else 2.0 * trained
        gradients = master * trained + held_16bit
    else:
        other = job.held_parameters - blocks
        base = QUANTIZED_BYTES[job.double_quant] if job.method == Method.QLORA else compute
        weights = base * blocks + 2.0 * other + master * trained
        gradients = master * trained
    if job.optimizer_in_backward and trained:
        largest = max(m.vocab * m.hidden, *(i * o for i, o in m.linear_shapes().values()))
        gradients *= min(1.0, largest / trained)
    return weights, gradients, state * trained


def _state_bytes(job: TrainingJob, pure_16bit: bool) -> float:
    """Optimizer state per trained weight (Adam's two states in bf16 under pure bf16)."""
    halved = pure_16bit and job.optimizer in ("adamw", "adam")
    return OPTIMIZER_STATE_BYTES[job.optimizer] / (2.0 if halved else 1.0)


def host_state_bytes(job: TrainingJob, pure_16bit: bool = False) -> float:
    """The optimizer states the stack pages or offloads to the host (0 where they stay on the GPU)."""
    paged = job.optimizer_states != StatePlace.RESIDENT
    return _state_bytes(job, pure_16bit) * job.trainable_parameters if paged else 0.0


def host_activation_bytes(job: TrainingJob) -> float:
    """The activations of a micro-batch the stack offloads to the host (0 without offloading)."""
    kept, _ = _kept_and_working(job, offloaded=False)
    return kept * job.tokens_per_micro_batch if job.activation_offloading else 0.0


def host_bytes(job: TrainingJob, pure_16bit: bool = False) -> float:
    """What the stack keeps in the host's memory instead of the GPU's: paged or offloaded optimizer states, and
    offloaded activations."""
    return host_state_bytes(job, pure_16bit) + host_activation_bytes(job)


def block_saved_values(job: TrainingJob) -> float:
    """The 16-bit values per token one block keeps for its backward pass: what autograd saves, counted on real steps
    (``tests/test_llm_saved.py`` checks it against the tensors a tiny Transformers model saves).

    - each norm's input: RMSNorm upcasts it to fp32 and keeps that (2 values), LayerNorm keeps it as it is (1);
      one norm where attention and MLP read the same one (``shared_norm``), else two;
    - attention (FlashAttention, PyTorch's SDPA): the queries, keys, values and its output;
    - the MLP's non-linearity: a gated MLP keeps the gate's and the up projection's outputs and the activation's
      (3 x intermediate), a plain one the first layer's output (1 x);
    - the inputs of the layers whose weights train. Full fine-tuning: each norm's output (which the next linear
      layers keep) and, RMSNorm's weight training, its normalized 16-bit value; the down projection's input (the
      output projection's is the attention's output, already kept). LoRA: each adapter's input (a copy each, or
      once per tensor where the stack's adapters share it: :func:`_adapter_values`) and its rank-wide product;
      the frozen layers keep nothing (their weight gradients are not needed), but for old bitsandbytes' 4-bit
      layers (:func:`_kept_4bit_inputs`).

    Compiled (``torch.compile``): its partitioner recomputes cheap element-wise work in the backward pass instead of
    keeping it. Each norm keeps its 16-bit input (the fp32 upcast is fused away), the MLP the gate's and the up
    projection's outputs (the activation recomputed; a plain MLP: its first layer's output), the attention its
    tensors; full fine-tuning adds the inputs of the trained linear layers (each norm's output, the MLP's product),
    LoRA the adapters' inputs. torchtune's ladder (Llama 3.2 3B, 8,192 tokens a step) measures the difference: 60.0
    GiB eager, 51.0 GiB compiled, 15 x hidden values a token and block kept compiled against 21 eager; this count
    says 14.7 and 21.3."""
    if job.transformer_engine:
        return _transformer_engine_values(job)
    m = job.model
    norms = 1 if m.shared_norm else 2
    # a norm's kept input, and (full fine-tuning) its output and normalized cast, in values a hidden unit each
    norm = 1.0 if m.layer_norm or job.compiled else 2.0
    mlp = (2 if job.compiled else 3) if m.gated_mlp else 1
    values = norms * norm * m.hidden + 2 * m.attention_width + 2 * m.kv_width + mlp * m.intermediate
    if job.method == Method.FULL:
        return values + norms * norm * m.hidden + m.intermediate
    return values + _adapter_values(job) + _kept_4bit_inputs(job)


def _kept_4bit_inputs(job: TrainingJob) -> float:
    """What QLoRA's 4-bit layers keep where bitsandbytes saves each one's input (``keeps_4bit_inputs``: before its
    pull request #1270, merged 2024-07-16, ``MatMul4Bit`` saved its input A, which only the frozen weight's gradient
    would read): each norm's output (the attention's and the MLP's input layers read it) and the down projection's
    input (the MLP's product or activation output); the output projection's input is the attention's output, already
    kept (the attention kernels lay it out as the projection reads it). None otherwise."""
    if not (job.keeps_4bit_inputs and job.method == Method.QLORA):
        return 0.0
    m = job.model
    return (1 if m.shared_norm else 2) * m.hidden + m.intermediate


# The tensor each linear layer of a block reads (a stack whose adapters read it as it is keeps it once): the query,
# key and value projections the attention's norm output, the output projection the attention's output (kept by the
# attention already), the MLP's first layers the MLP's norm output (the same tensor where one norm serves both:
# ``shared_norm``), the down projection the MLP's product
LAYER_INPUTS = {
    "q_proj": "attention_norm",
    "k_proj": "attention_norm",
    "v_proj": "attention_norm",
    "o_proj": "attention_output",
    "gate_proj": "mlp_norm",
    "up_proj": "mlp_norm",
    "down_proj": "mlp_product",
}
KEPT_ALREADY = frozenset({"attention_output"})


def _adapter_values(job: TrainingJob) -> float:
    """LoRA's own: each adapter's input and its rank-wide product (none in full fine-tuning). PEFT's adapters keep a
    copy of their layer's input each (it casts the input to the adapter's dtype; LitGPT's dropout makes one); where
    the stack's 16-bit adapters read the input itself (``shares_adapter_inputs``: torchtune's ``LoRALinear``, its
    configs' dropout 0) it is kept once per tensor read, and not at all where the block keeps it already
    (``tests/test_llm_saved.py`` counts both on real layers)."""
    shapes = job.model.linear_shapes()
    targets = [t for t in job.lora_targets if t in shapes]
    products = float(len(targets) * job.lora_rank)
    if not job.shares_adapter_inputs:
        return products + sum(shapes[t][0] for t in targets)
    read = {LAYER_INPUTS[t]: shapes[t][0] for t in targets}
    if job.model.shared_norm and "mlp_norm" in read:
        read["attention_norm"] = read.pop("mlp_norm")
    return products + sum(width for tensor, width in read.items() if tensor not in KEPT_ALREADY)


def dequantized_bytes(job: TrainingJob) -> float:
    """QLoRA: the layer computing, its 4-bit weight turned back into 16 bits for the matmul (bitsandbytes'
    ``MatMul4Bit`` and torchao's ``linear_nf4``, which torchtune calls, dequantize in each forward and backward and
    free the copy after it): one layer's at a time, the largest's at the peak. None otherwise."""
    if job.method != Method.QLORA:
        return 0.0
    return 2.0 * max(i * o for i, o in job.model.linear_shapes().values())


def _transformer_engine_values(job: TrainingJob) -> float:
    """What Transformer Engine's fused blocks keep (16-bit values per token; an FP8 tensor is half of one). The
    norm-and-linear modules keep the norm's 16-bit input and its output (FP8 under ``fp8``), the MLP's module its
    first layer's 16-bit output (gate and up) and the activation's output (FP8 under ``fp8``), the output projection
    its input (FP8 under ``fp8``), the attention its q, k, v and output. Adapters (NeMo's LoRA) keep their own copy
    of their input, as elsewhere."""
    m = job.model
    cast = 0.5 if job.fp8 else 1.0
    first = (2 if m.gated_mlp else 1) * m.intermediate
    values = 2 * (1.0 + cast) * m.hidden + 2 * m.attention_width + 2 * m.kv_width + cast * m.attention_width
    values += first + cast * m.intermediate
    if job.method == Method.FULL:
        return values
    return values + _adapter_values(job)


def _kept_and_working(job: TrainingJob, offloaded: bool) -> tuple[float, float]:
    """Bytes per token the backward pass keeps across the blocks, and one block's working set."""
    m = job.model
    per_layer = 2.0 * block_saved_values(job)
    # with checkpointing: each block's input kept, and one block recomputed at a time
    kept, working = (m.layers * 2.0 * m.hidden, per_layer) if job.checkpointing else (m.layers * per_layer, 0.0)
    if offloaded:
        kept = kept / m.layers * min(m.layers, IN_FLIGHT_BLOCKS)
    return kept, working


def activation_bytes(job: TrainingJob) -> float:
    """The bytes the backward pass needs on the GPU at its peak, before the factor: per token of a micro-batch."""
    kept, working = _kept_and_working(job, offloaded=job.activation_offloading)
    # the loss's tensors are freed once its backward pass has made the last hidden state's gradient, before the
    # first checkpointed block is recomputed: the two never peak together
    return float(job.tokens_per_micro_batch) * (kept + max(working, LOGIT_BYTES[job.loss] * job.model.vocab))


def predict(
    job: TrainingJob,
    pure_16bit: bool = False,
    factor: float | None = None,
    overhead_gb: float | None = None,
    shards: int = 1,
    split: Split = WHOLE,
) -> Footprint:
    """The job's peak memory on one GPU, with its stack's cross-validated range (``factor`` and ``overhead_gb``
    given: those constants, as the fit tries them). ``shards`` above 1: FSDP (ZeRO-3) over that many GPUs, each
    holding its share of the weights, gradients and optimizer state, plus the 16-bit weights of two blocks gathered
    at a time (the one computing and the one prefetched); the activations stay whole (each GPU runs its own
    micro-batch). ``split``: Megatron's (:class:`Split`): each GPU holds 1/model of the weights and gradients, the
    fp32 master weights and optimizer states over all the GPUs, and 1/tensor of the activations (1F1B's first
    pipeline stage keeps its layers' activations for as many micro-batches as there are stages: all the layers'
    worth of one). The published peaks checked are of one GPU: the split figures are the parts' arithmetic."""
    fitted = constants_for(job.stack)
    factor = fitted.factor if factor is None else factor
    overhead_gb = fitted.overhead_gb if overhead_gb is None else overhead_gb
    weights, gradients, optimizer = static_bytes(job, pure_16bit)
    if shards > 1:
        gathered = 2 * 2.0 * job.model.block_linear_parameters
        weights, gradients, optimizer = weights / shards + gathered, gradients / shards, optimizer / shards
    loading = 2.0 * job.held_parameters / shards if job.loads_16bit and job.method == Method.QLORA else 0.0
    if split != WHOLE:
        trained = job.trainable_parameters
        master = 0.0 if pure_16bit else 4.0 * trained
        everywhere = split.model * split.data
        weights = (weights - master) / split.model + master / everywhere
        gradients, optimizer, loading = gradients / split.model, optimizer / everywhere, loading / split.model
    weights += dequantized_bytes(job)  # one layer's, whatever the split
    return Footprint(
        weights / GB,
        gradients / GB,
        optimizer / GB,
        factor * activation_bytes(job) / split.tensor / GB,
        overhead_gb,
        fitted.range_low,
        fitted.range_high,
        host_bytes(job, pure_16bit) / GB,
        loading / GB,
        gradient_phases(job),
    )


def gradient_phases(job: TrainingJob) -> bool:
    """Whether the activations and the gradients peak apart: the forward pass keeps the activations and holds no
    gradient (each optimizer step frees them: ``zero_grad(set_to_none=True)``, PyTorch's default), the backward pass
    frees the activations layer by layer as it makes the gradients, so the peak is the larger of the two, never their
    sum. Not with gradient accumulation (the earlier micro-batches' gradients are held through the next forward
    pass), nor in a stack that keeps every gradient in one buffer for the run (Megatron), nor with the step in the
    backward pass (one parameter's gradient at a time: counted beside the activations)."""
    return job.grad_accum == 1 and not job.persistent_gradients and not job.optimizer_in_backward


def _room_for_activations(one: Footprint, capacity_gb: float) -> float:
    """The activations' GB the range's upper end leaves room for on the card (none where the loading does not fit)."""
    usable = card_gb(capacity_gb) * USABLE
    if one._floor_gb > usable:
        return 0.0
    return (usable - one.static_gb) / one.high_factor - one.overhead_gb


def split_for(job: TrainingJob, capacity_gb: float, devices: int, pure_16bit: bool = False) -> Split:
    """How a model-parallel job splits over ``devices`` GPUs: the fewest GPUs per model copy (a power of two: tensor
    parallel up to a node's 8, then pipeline stages of them) on which its range fits, else the most; the rest data
    parallel. ``WHOLE`` for a job that does not split its model, or one GPU."""
    if not job.tensor_parallel or devices < 2:
        return WHOLE
    splits = []
    model = 2
    while model <= devices and model // MOST_TENSOR_PARALLEL <= job.model.layers:
        tensor = min(model, MOST_TENSOR_PARALLEL)
        splits.append(Split(tensor, model // tensor, devices // model))
        model *= 2
    for split in splits:
        if predict(job, pure_16bit, split=split).verdict(capacity_gb) == Fit.FITS:
            return split
    return splits[-1] if splits else WHOLE


def largest_micro_batch(
    job: TrainingJob, capacity_gb: float, pure_16bit: bool = False, shards: int = 1, split: Split = WHOLE
) -> int:
    """The largest micro-batch whose range fits the usable memory (0: not even one sequence)."""
    one = predict(replace(job, micro_batch=1), pure_16bit, shards=shards, split=split)
    room = _room_for_activations(one, capacity_gb)
    return max(0, math.floor(room / one.activations_gb)) if one.activations_gb > 0 else 0


def largest_seq_len(
    job: TrainingJob, capacity_gb: float, pure_16bit: bool = False, shards: int = 1, split: Split = WHOLE
) -> int:
    """The longest sequence (a multiple of 128) whose range fits the usable memory at the job's micro-batch."""
    one = predict(replace(job, seq_len=1), pure_16bit, shards=shards, split=split)
    room = _room_for_activations(one, capacity_gb)
    # activations are linear in the tokens (flash attention keeps no seq x seq scores)
    return max(0, math.floor(room / one.activations_gb) // 128 * 128) if one.activations_gb > 0 else 0
