"""One model split over GPUs of different kinds (a 24 GB card beside a 16 GB one), as llama.cpp splits it by default.

llama.cpp (``src/llama-model.cpp``, ``load_tensors``) splits by layers: without ``--tensor-split`` each device's share
is its free memory over all the devices' (``// default split, by free memory``); the split points are those shares
summed, and layer ``il`` of ``n_layer`` goes to the first device whose split point lies above ``il / (n_layer + 1)``;
the output layer counts as layer ``n_layer``. So each card holds its layers' weights and their caches, and keeps its
own compute buffer; a token passes the cards in turn, so one sequence's step is the sum of each card's part of it.

Here: the cards' memory as the catalog gives it (what a fit counts: a unified-memory GPU's allocatable share), the
input embedding counted on the card of the output layer (llama.cpp keeps it in host memory: never optimistic), and
the speed of each card's part from the single-GPU model (its fitted constants, its range), weighted by the layers the
card holds. Pure: no I/O.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace

from advisor.errors import AdvisorError
from advisor.infer import speed as speed_model
from advisor.infer.engines import architecture_refusal, platform_refusal
from advisor.infer.job import InferenceJob
from advisor.infer.serving_memory import VERDICTS, card_bytes, verdict_of
from advisor.store.catalog import Catalog, Gpu

MIXED_ENGINES = ("llama.cpp",)  # the engines whose default split over several GPUs is costed here
LLAMA_CPP_SPLIT_SOURCE = "ggml-org/llama.cpp src/llama-model.cpp, load_tensors: '// default split, by free memory'"


@dataclass(frozen=True)
class CardShare:
    """One card's part of the model: its layers, what it holds (bytes) against what it has, and the verdict."""

    gpu: Gpu
    layers: int  # repeating layers
    holds_output: bool  # the output layer (and, counted here, the input embedding)
    needed_bytes: float
    card_bytes: float
    verdict: str  # fits | tight | does not fit


@dataclass(frozen=True)
class MixedAnswer:
    """The job over mixed cards: each card's share, the verdict of the worst, and the speed (None: ``why``)."""

    shares: tuple[CardShare, ...]
    verdict: str
    time_to_first_token_s: float | None
    time_per_output_token_s: float | None
    single_stream_tokens_per_s: float | None
    range_factor: float | None  # the engine's cross-validated decode error (None: its hardware bound)
    why: str | None  # no speed: why

    @property
    def names(self) -> str:
        return " + ".join(s.gpu.name for s in self.shares)


def split_layers(layers: int, cards_bytes: list[float]) -> tuple[list[int], int]:
    """llama.cpp's default layer split: (repeating layers per card, the card of the output layer)."""
    total = sum(cards_bytes)
    points, running = [], 0.0
    for size in cards_bytes:
        running += size
        points.append(running / total)
    counted = layers + 1  # every layer offloaded, the output layer too

    def card_of(layer: int) -> int:
        return min(bisect.bisect_right(points, layer / counted), len(cards_bytes) - 1)

    per_card = [0] * len(cards_bytes)
    for layer in range(layers):
        per_card[card_of(layer)] += 1
    return per_card, card_of(layers)


def _card_bytes(gpu: Gpu) -> float:
    usable = gpu.usable_memory_gb
    if not usable:
        raise AdvisorError(f"{gpu.name}: the catalog gives no memory; it cannot be part of a split")
    return card_bytes(usable)


def mixed_cards(job: InferenceJob, gpus: list[Gpu], catalog: Catalog) -> MixedAnswer:
    """``job`` (one copy, one user per sequence slot as asked) split over ``gpus`` as llama.cpp splits it."""
    if job.engine.id not in MIXED_ENGINES:
        raise AdvisorError(
            f"mixed cards: costed for {', '.join(MIXED_ENGINES)} only (its default layer split: "
            f"{LLAMA_CPP_SPLIT_SOURCE}); {job.engine.name} here runs on identical GPUs (--devices N)"
        )
    if job.rate is not None:
        raise AdvisorError(
            "mixed cards: one stream over the cards, not a rate of requests: set the requests a second to 0 "
            "(--requests-per-second)"
        )
    if len(gpus) < 2:
        raise AdvisorError("mixed cards: name two GPUs or more (e.g. rtx-4090,rtx-3090)")
    machines = [gpu.name for gpu in gpus if gpu.whole_machine]
    if machines:
        raise AdvisorError(f"mixed cards: {', '.join(machines)} is a whole machine, not a card to put beside another")
    if len({gpu.platform for gpu in gpus}) > 1:
        raise AdvisorError("mixed cards: cards of one platform (CUDA or ROCm) in one machine, as one build runs")
    job = replace(job.per_copy(), devices=1)
    sizes = [_card_bytes(gpu) for gpu in gpus]
    per_card, output_card = split_layers(len(job.model.layers), sizes)
    shares = tuple(
        _share(job, gpu, size, per_card, index, output_card)
        for index, (gpu, size) in enumerate(zip(gpus, sizes, strict=True))
    )
    verdict = max((s.verdict for s in shares), key=VERDICTS.index)
    return _with_speed(job, shares, verdict, catalog)


def _share(job: InferenceJob, gpu: Gpu, size: float, per_card: list[int], index: int, output_card: int) -> CardShare:
    """What card ``index`` holds: its layers' weights and caches, its compute buffer, the output layer if it is
    the output card's."""
    model, layers = job.model, len(job.model.layers)
    embeddings = model.embedding_parameters * (job.weights.bits / 8 if job.weights.scope == "file" else 2)
    blocks = job.weight_bytes() - embeddings
    first = sum(per_card[:index])
    mine = model.layers[first : first + per_card[index]]
    cache = job.users * job.kv_bytes(job.sequence_tokens, mine)
    needed = blocks * len(mine) / layers + cache + job.engine.reserve_fixed_gb * 1e9 + job.activation_bytes()
    if index == output_card:
        needed += embeddings
    verdict = verdict_of(needed, size * job.engine.memory_share)
    return CardShare(gpu, len(mine), index == output_card, needed, size, verdict)


def _with_speed(job: InferenceJob, shares: tuple[CardShare, ...], verdict: str, catalog: Catalog) -> MixedAnswer:
    """Each card's part of a step from the single-GPU model, weighted by the layers it holds (a token passes the
    cards in turn); no speed where any card has none (its platform, formats or peaks), with why."""
    from advisor.infer.estimate import decode_range, engine_fits, unfitted_platform_refusal

    fit = engine_fits(catalog).get(job.engine.id, speed_model.EngineFit())
    total_layers = len(job.model.layers)
    ttft = tpot = single = 0.0
    for share in shares:
        gpu = share.gpu
        why = (
            platform_refusal(job.engine, gpu.platform, gpu.architecture)
            or architecture_refusal(job.engine, gpu.architecture, job.weights, job.kv)
            or unfitted_platform_refusal(gpu)
        )
        if why is None:
            try:
                alone = speed_model.predict(job, gpu, fit)
            except AdvisorError as error:
                why = str(error)
        if why is not None:
            return MixedAnswer(shares, verdict, None, None, None, None, f"{gpu.name}: {why}")
        part = share.layers / total_layers
        ttft += part * alone.time_to_first_token_s
        tpot += part * alone.time_per_output_token_s
        single += part / alone.single_stream_tokens_per_s
    factor = decode_range(catalog).get(job.engine.id) if fit.fitted else None
    return MixedAnswer(shares, verdict, ttft, tpot, 1 / single, factor, None)
