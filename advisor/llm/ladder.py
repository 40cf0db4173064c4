"""The least memory a job needs: where the job as asked does not fit a GPU, the cheapest set of the stack's choices
that makes it fit and what each costs in time; where none does, the nearest ways out (QLoRA, a shorter sequence,
several GPUs with sharding).

Each move is a choice a stack can make (:mod:`advisor.llm.stack`), its memory the model's
(:func:`advisor.llm.job_memory.predict`, the stack's fitted constants and range: a move "fits" as a job does, by its
range's upper end) and its time an estimate with its basis:

- a chunked or fused loss, the optimizer step in the backward pass: the same work (the published kernels run about
  as fast as the plain loss: taken as no slower);
- ``torch.compile``: taken as no slower (torchtune's README measured it 27 % faster on its ladder; the time model
  does not count that gain);
- activation checkpointing: the forward pass recomputed, the FLOPs' ratio (:meth:`TrainingJob.flops_per_token`);
- activation offloading: the kept activations copied to the host and back over ``HOST_LINK_GBPS``, overlapped with
  the compute: slower only where the copies outlast it;
- paged or offloaded optimizer states: the states paged in and out over the same link once an optimizer step;
- an 8-bit optimizer (bitsandbytes' AdamW8bit: 2 bytes of state a parameter for AdamW's 8) and pure bf16 (weights,
  gradients and states in bf16, no fp32 master copy, as LitGPT's ``bf16-true`` and torchtune's ``dtype: bf16``):
  the same work, taken as no slower; what they cost is in the training's precision, which the ladder says and does
  not weigh.

Each move is also a choice some stacks make by default (:func:`stacks_choosing`), which the table names.

Pure; no I/O.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache

from advisor.llm import job_memory as memory
from advisor.llm.job import Loss, Method, StatePlace, TrainingJob

# The host link a GPU copies over: PCIe 4.0 x16 carries 32 GB/s a direction, about 25 GB/s in practice (an
# estimate: the catalog does not hold each card's link).
HOST_LINK_GBPS = 25.0
MOST_SHARDS = 8


class Move(StrEnum):
    """A choice that saves memory, as the ladder names it."""

    CHUNKED_LOSS = "chunked loss"
    FUSED_LOSS = "fused loss"
    CHECKPOINTING = "activation checkpointing"
    OFFLOADING = "activation offloading"
    PAGED_STATES = "paged optimizer states"
    OPTIMIZER_IN_BACKWARD = "optimizer step in the backward pass"
    COMPILE = "torch.compile"
    EIGHT_BIT_OPTIMIZER = "8-bit optimizer"
    PURE_BF16 = "pure bf16"


EIGHT_BIT_FOR = {"adamw": "adamw_8bit", "adam": "adamw_8bit"}  # the 8-bit optimizer standing in for each
# The stacks' choice (advisor.llm.stack.Choices' field) and the values of it that make each move.
MOVE_CHOICES: dict[Move, tuple[str, tuple]] = {
    Move.CHUNKED_LOSS: ("loss", (Loss.CHUNKED,)),
    Move.FUSED_LOSS: ("loss", (Loss.FUSED,)),
    Move.CHECKPOINTING: ("checkpointing", (True,)),
    Move.OFFLOADING: ("activation_offloading", (True,)),
    Move.PAGED_STATES: ("optimizer_states", (StatePlace.PAGED,)),
    Move.OPTIMIZER_IN_BACKWARD: ("optimizer_in_backward", (True,)),
    Move.COMPILE: ("compile", (True,)),
    Move.EIGHT_BIT_OPTIMIZER: ("optimizer", ("adamw_8bit", "paged_adamw_8bit", "adamw_bnb_8bit")),
    Move.PURE_BF16: ("pure_bf16", (True,)),
}


class Nearest(StrEnum):
    """What else could make a job fit where no set of choices does."""

    QLORA = "qlora"
    SHORTER = "shorter sequence"
    SHARDED = "sharded over several GPUs"


@dataclass(frozen=True)
class Rung:
    """A set of moves, the memory it leaves and the time it costs (slowdown: the run's time x this)."""

    moves: tuple[Move, ...]
    job: TrainingJob
    footprint: memory.Footprint
    slowdown: float
    pure_16bit: bool = False  # the rung's weights, gradients and states in bf16 (asked, or the pure bf16 move)
    defaults: tuple[tuple[Move, tuple[str, ...]], ...] = ()  # each move and the stacks that make it by default


@dataclass(frozen=True)
class Way:
    """A way out where no set of choices fits: QLoRA, the longest sequence that fits, or the GPUs sharding needs;
    ``value`` the sequence length or the GPU count, ``footprint`` with the cheapest moves that fit it."""

    kind: Nearest
    value: int
    footprint: memory.Footprint


@dataclass(frozen=True)
class Ladder:
    """The cheapest moves that fit (None: none does), else the nearest ways out."""

    fits: Rung | None
    nearest: tuple[Way, ...] = ()


def _applies(move: Move, job: TrainingJob, pure_16bit: bool = False) -> bool:
    return {
        Move.CHUNKED_LOSS: job.loss == Loss.FP32_LOGITS,
        Move.FUSED_LOSS: job.loss != Loss.FUSED,
        Move.CHECKPOINTING: not job.checkpointing,
        Move.OFFLOADING: not job.activation_offloading,
        Move.PAGED_STATES: job.optimizer_states == StatePlace.RESIDENT and job.trainable_parameters > 0,
        Move.OPTIMIZER_IN_BACKWARD: not job.optimizer_in_backward and job.grad_accum == 1,
        Move.COMPILE: not job.compiled,
        Move.EIGHT_BIT_OPTIMIZER: job.optimizer in EIGHT_BIT_FOR and job.trainable_parameters > 0,
        Move.PURE_BF16: not pure_16bit and job.method == Method.FULL,
    }[move]


def _make(job: TrainingJob, move: Move) -> TrainingJob:
    return {
        Move.CHUNKED_LOSS: lambda: replace(job, loss=Loss.CHUNKED),
        Move.FUSED_LOSS: lambda: replace(job, loss=Loss.FUSED),
        Move.CHECKPOINTING: lambda: replace(job, checkpointing=True),
        Move.OFFLOADING: lambda: replace(job, activation_offloading=True),
        Move.PAGED_STATES: lambda: replace(job, optimizer_states=StatePlace.PAGED),
        Move.OPTIMIZER_IN_BACKWARD: lambda: replace(job, optimizer_in_backward=True),
        Move.COMPILE: lambda: replace(job, compiled=True),
        Move.EIGHT_BIT_OPTIMIZER: lambda: replace(job, optimizer=EIGHT_BIT_FOR.get(job.optimizer, job.optimizer)),
        Move.PURE_BF16: lambda: job,  # not the job's: the memory model's pure_16bit (Rung.pure_16bit)
    }[move]()


def slowdown(before: TrainingJob, after: TrainingJob, pure_16bit: bool, micro_batch_seconds: float | None) -> float:
    """The run's time with ``after``'s choices over ``before``'s (1.0: no slower). ``micro_batch_seconds``: the
    estimated compute of one micro-batch on the GPU (None: the copies taken as not overlapped at all)."""
    factor = after.flops_per_token() / before.flops_per_token()
    link = HOST_LINK_GBPS * 1e9
    compute = micro_batch_seconds if micro_batch_seconds else 0.0
    extra = 0.0
    if after.activation_offloading and not before.activation_offloading:
        copies = 2 * memory.host_activation_bytes(after) / link
        extra += max(0.0, copies - compute * factor)
    if after.optimizer_states != before.optimizer_states:
        states = memory.host_state_bytes(after, pure_16bit)
        extra += 2 * states / link / after.grad_accum  # once an optimizer step, spread over its micro-batches
    return factor + (extra / compute if compute else (math.inf if extra else 0.0))


def _candidates(job: TrainingJob, pure_16bit: bool = False) -> list[tuple[Move, ...]]:
    """Every set of the moves that apply (one loss at most), fewest first."""
    moves = [m for m in Move if _applies(m, job, pure_16bit)]
    found = []
    for size in range(1, len(moves) + 1):
        for chosen in itertools.combinations(moves, size):
            if not (Move.CHUNKED_LOSS in chosen and Move.FUSED_LOSS in chosen):
                found.append(chosen)
    return found


@lru_cache(maxsize=64)
def _footprints(
    job: TrainingJob, pure_16bit: bool, shards: int, split: memory.Split = memory.WHOLE
) -> tuple[tuple[tuple[Move, ...], TrainingJob, bool, memory.Footprint], ...]:
    """Every set of moves, its job, whether it is pure bf16 and its footprint: the same on every GPU (only the
    verdict is the card's)."""
    found = []
    for moves in _candidates(job, pure_16bit):
        changed = job
        for move in moves:
            changed = _make(changed, move)
        pure = pure_16bit or Move.PURE_BF16 in moves
        found.append((moves, changed, pure, memory.predict(changed, pure, shards=shards, split=split)))
    return tuple(found)


def cheapest(
    job: TrainingJob,
    capacity_gb: float,
    pure_16bit: bool = False,
    shards: int = 1,
    micro_batch_seconds: float | None = None,
    split: memory.Split = memory.WHOLE,
) -> Rung | None:
    """The set of moves that fits the card (by its range's upper end) at the least slowdown (then the fewest moves,
    then the least memory); None where none does."""
    best: Rung | None = None
    for moves, changed, pure, footprint in _footprints(job, pure_16bit, shards, split):
        if footprint.verdict(capacity_gb) != memory.Fit.FITS:
            continue
        rung = Rung(moves, changed, footprint, slowdown(job, changed, pure, micro_batch_seconds), pure)
        if best is None or (rung.slowdown, len(rung.moves), footprint.total_gb) < (
            best.slowdown,
            len(best.moves),
            best.footprint.total_gb,
        ):
            best = rung
    return best


def _all_moves(job: TrainingJob) -> TrainingJob:
    """Every move that changes the job (pure bf16 is the memory model's: :func:`nearest` keeps the asked one)."""
    for move in Move:
        if _applies(move, job) and move not in (Move.CHUNKED_LOSS, Move.PURE_BF16):
            job = _make(job, move)
    return job


def stacks_choosing(move: Move, stacks: dict, method: Method) -> tuple[str, ...]:
    """The stacks (``advisor.llm.stack.load_stacks()``'s) whose defaults make ``move`` for ``method``."""
    name, values = MOVE_CHOICES[move]
    return tuple(key for key, stack in stacks.items() if getattr(stack.choices_for(method), name) in values)


def nearest(job: TrainingJob, capacity_gb: float, pure_16bit: bool = False) -> tuple[Way, ...]:
    """Where no set of moves fits: QLoRA with every move, the longest sequence every move fits, the fewest GPUs
    sharding (FSDP / ZeRO-3) fits it over with every move (up to ``MOST_SHARDS``)."""
    lightest = _all_moves(job)
    ways = []
    if job.method != Method.QLORA:
        quantized = replace(lightest, method=Method.QLORA)
        footprint = memory.predict(quantized, pure_16bit)
        if footprint.verdict(capacity_gb) == memory.Fit.FITS:
            ways.append(Way(Nearest.QLORA, 0, footprint))
    longest = memory.largest_seq_len(lightest, capacity_gb, pure_16bit)
    if longest > 0:
        ways.append(Way(Nearest.SHORTER, longest, memory.predict(replace(lightest, seq_len=longest), pure_16bit)))
    for shards in range(2, MOST_SHARDS + 1):
        footprint = memory.predict(lightest, pure_16bit, shards=shards)
        if footprint.verdict(capacity_gb) == memory.Fit.FITS:
            ways.append(Way(Nearest.SHARDED, shards, footprint))
            break
    return tuple(ways)


def least_memory(
    job: TrainingJob,
    capacity_gb: float,
    pure_16bit: bool = False,
    shards: int = 1,
    micro_batch_seconds: float | None = None,
    split: memory.Split = memory.WHOLE,
    stacks: dict | None = None,
) -> Ladder:
    """The ladder of a job that does not fit the card as asked (``shards`` or ``split``: as the job is split over
    its GPUs; ``stacks``: the stacks whose defaults each move is named with)."""
    rung = cheapest(job, capacity_gb, pure_16bit, shards, micro_batch_seconds, split)
    if rung is None:
        return Ladder(None, nearest(job, capacity_gb, pure_16bit))
    if stacks:
        rung = replace(rung, defaults=tuple((m, stacks_choosing(m, stacks, job.method)) for m in rung.moves))
    return Ladder(rung)
