"""Does an inference job fit a GPU: weights, the engine's reserve and the cache against what the engine may take.

Never optimistic: the card's memory is the catalog's size in GiB less 1.9 % (what the driver reports of a 24 GB
GeForce card; an 80 GB H100 reports 0.4 % less), the engine takes its share of it as its defaults say, and a job is
"tight" (not "fits") when it needs more than 95 % of that: the reserve is an estimate (see
``advisor/data/engines.yaml``). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.infer.architecture import unknown_maximum_cap
from advisor.infer.engines import GIB
from advisor.infer.job import InferenceJob

# what the driver reports of a card's stated GiB, the smallest share seen (a fit is never optimistic): a 24 GB RTX 3090
# Ti 24,112 MiB (github.com/pegainfer-project/pegainfer/issues/422) and an RTX 3090 23.58 GiB (vLLM's log,
# github.com/vllm-project/vllm/issues/10517), 0.981-0.983; an "80 GB" H100 81,559 MiB (0.996)
REPORTED_SHARE = 0.981
TIGHT_SHARE = 0.95  # over this part of the engine's share: tight
VERDICTS = ("fits", "tight", "does not fit")  # best first


def card_bytes(memory_gb: float) -> float:
    """What the driver reports of a card the catalog gives as ``memory_gb`` (its stated GiB), in bytes."""
    return memory_gb * GIB * REPORTED_SHARE


def verdict_of(needed: float, budget: float) -> str:
    """fits, tight (over TIGHT_SHARE of what the engine takes) or does not fit."""
    return VERDICTS[0] if needed <= TIGHT_SHARE * budget else VERDICTS[1] if needed <= budget else VERDICTS[2]


@dataclass(frozen=True)
class MemoryVerdict:
    """What a job needs on each GPU and what the engine may take, in bytes, and the answers that follow."""

    card_bytes: float
    budget_bytes: float  # what the engine may take in all (weights, reserve, cache)
    weights_bytes: float  # per GPU
    reserve_bytes: float
    cache_bytes: float  # the users' sequences at the asked context, per GPU
    verdict: str  # fits | tight | does not fit
    longest_context: int  # the longest context that fits at the asked load (0: not even the weights)
    most_sequences: int  # the most sequences of the asked context that fit
    model_max: int | None  # the model's own longest context (None: not known)

    @property
    def needed_bytes(self) -> float:
        return self.weights_bytes + self.reserve_bytes + self.cache_bytes


def _budget(job: InferenceJob, card: float, weights: float, reserve: float) -> float:
    engine = job.engine
    if engine.memory_rule is not None:  # SGLang: the share worked out for this card
        return card * engine.memory_rule.share(card, job.devices)
    if engine.share_of == "free":  # TensorRT-LLM: a share of what is free after the weights and activations
        return weights + reserve + max(card - weights - reserve, 0) * engine.memory_share
    return card * engine.memory_share


def _parts(job: InferenceJob, memory_gb: float) -> tuple[float, float, float, float, float, float]:
    """What one GPU of ``memory_gb`` reports, and the job's weights, reserve and budget on it, one sequence's cache and
    the busiest GPU's users' cache."""
    card = card_bytes(memory_gb)
    weights = job.weight_bytes_per_gpu()
    reserve = job.engine.reserve_fixed_gb * 1e9 + job.activation_bytes()
    per_sequence = job.kv_bytes_per_gpu(job.sequence_tokens)
    cache = job.sequences_per_gpu(job.users) * per_sequence
    return card, weights, reserve, _budget(job, card, weights, reserve), per_sequence, cache


def verdict_only(job: InferenceJob, memory_gb: float) -> str:
    """:func:`memory_verdict`'s verdict alone (fits, tight, does not fit), without its searches."""
    _, weights, reserve, budget, _, cache = _parts(job, memory_gb)
    return verdict_of(weights + reserve + cache, budget)


def memory_verdict(job: InferenceJob, memory_gb: float) -> MemoryVerdict:
    """``job`` on GPUs of ``memory_gb`` each (the catalog's figure)."""
    card, weights, reserve, budget, per_sequence, cache = _parts(job, memory_gb)
    room = budget - weights - reserve
    # the users' own part of the reserve grows with them: room for one more user is its cache and that part
    shared_room = budget - weights - job.engine.reserve_fixed_gb * 1e9 - job.activation_fixed_bytes()
    verdict = verdict_of(weights + reserve + cache, budget)
    per_user = per_sequence + job.activation_per_user_bytes()
    most = int(shared_room // per_user) * job.attention_groups if shared_room > 0 else 0
    longest = _longest(job, room)
    return MemoryVerdict(card, budget, weights, reserve, cache, verdict, longest, most, job.model.max_context)


def cache_pool_tokens(job: InferenceJob, memory_gb: float, share: float | None = None) -> int:
    """The tokens the engine's cache pool holds on GPUs of ``memory_gb`` (what vLLM logs as "GPU KV cache size", SGLang
    as "#tokens"): what the engine takes (its default share, or ``share`` of the card as a run's setting gives it) less
    the weights and its reserve, over one token's cache on each GPU in every layer, in whole blocks (with attention
    data parallelism, each GPU's own pool); 0 where the weights leave no room."""
    card = card_bytes(memory_gb)
    weights = job.weight_bytes_per_gpu()
    reserve = job.engine.reserve_fixed_gb * 1e9 + job.activation_fixed_bytes()
    budget = card * share if share is not None else _budget(job, card, weights, reserve)
    per_gpu = job.kv_bytes_per_gpu(1, paged=False)  # one token
    room = budget - weights - reserve
    block = job.engine.block_tokens
    return int(room / per_gpu // block * block) if room > 0 else 0


def _longest(job: InferenceJob, room: float) -> int:
    """The longest context whose ``users`` sequences fit in ``room`` bytes (up to the model's maximum)."""
    top = job.model.max_context or unknown_maximum_cap()
    users = job.sequences_per_gpu(job.users)
    if room <= 0 or users * job.kv_bytes_per_gpu(1) > room:
        return 0
    low, high = 1, top
    while low < high:
        mid = (low + high + 1) // 2
        if users * job.kv_bytes_per_gpu(mid) <= room:
            low = mid
        else:
            high = mid - 1
    return low
