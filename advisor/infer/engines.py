"""The inference engines' defaults and the weight and cache formats (``advisor/data/engines.yaml``), typed."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from advisor.errors import AdvisorError
from advisor.store.parse import safe_load

ENGINES_FILE = "engines.yaml"
ENGINES_VERSION = 1


@dataclass(frozen=True)
class Sourced:
    value: float
    source: str


MIB = 2**20
GIB = 2**30
ONE_GPU_PLATFORMS = ("mps",)  # a Mac's GPU is the machine's only one


@dataclass(frozen=True)
class MemoryRule:
    """An engine that works its memory share out per card (SGLang's mem_fraction_static): the card's memory reserved
    for activations and graphs, by tiers of the card's memory, and what is left as the share of weights and cache."""

    tiers: tuple[tuple[float | None, int, int, int], ...]  # (below GiB or None, prefill tokens, graph batch <4, >=4)
    fixed_mib: float
    prefill_mib_per_token: float
    least_prefill_tokens: int
    graph_mib_per_batch: float
    parallel_mib: float  # per GPU of tensor parallelism
    floor_mib: float  # the least reserved on a card above floor_above_gib
    floor_above_gib: float
    source: str

    def share(self, card_bytes: float, tensor_parallel: int) -> float:
        """The share of a card of ``card_bytes`` the engine keeps for weights and cache (rounded as it rounds)."""
        card_mib = card_bytes / MIB
        _, prefill, graph_small, graph_large = next(t for t in self.tiers if t[0] is None or card_mib < t[0] * 1024)
        graphs = graph_small if tensor_parallel < 4 else graph_large
        reserved = (
            self.fixed_mib
            + max(prefill, self.least_prefill_tokens) * self.prefill_mib_per_token
            + graphs * self.graph_mib_per_batch
            + tensor_parallel * self.parallel_mib
        )
        if card_mib > self.floor_above_gib * 1024:
            reserved = max(reserved, self.floor_mib)
        return max(round((card_mib - reserved) / card_mib, 3), 0.0)


@dataclass(frozen=True)
class Engine:
    """An engine's memory defaults and the formats it runs."""

    id: str
    name: str
    version: str
    memory_share: float
    share_of: str  # total | free
    block_tokens: int
    largest_step_tokens: int
    reserve_fixed_gb: float
    window_extra: int | None  # None: the engine keeps a sliding layer's whole sequence (no window applied)
    max_batch: int  # the most sequences its scheduler runs at once by default
    activation_width: float  # a forward pass's activations a token, in widths of the model (16-bit)
    fp16_accumulate: bool  # its 16-bit matrix products accumulate in float16 (GeForce: twice the float32 rate)
    weights: tuple[str, ...]
    kv_cache: tuple[str, ...]
    sources: dict[str, str]
    platforms: tuple[str, ...] = ("cuda",)  # the software platforms whose GPUs it runs on
    memory_rule: MemoryRule | None = None  # share_of "rule": the share worked out per card
    large_card_batch: tuple[float, int, tuple[str, ...]] | None = None  # from GiB, its batch, names excepted
    attention_data_parallel: str | None = None  # how it runs attention data parallel with the experts split (None: not)
    tensor_parallel_heads: str | None = None  # its source where tensor parallelism splits the heads evenly (None: not
    # known to require it)
    tensor_parallel_key_value_heads: bool = True  # whether that rule checks the key-value heads too
    split_layers: str | None = None  # its source where several GPUs each hold whole layers, a token passing them in
    # turn (llama.cpp's default split): None, tensor parallel
    architectures: tuple[str, ...] = ()  # the architectures of its platforms it runs on (empty: all of them)
    formats_on: dict[str, tuple[str, ...]] = field(default_factory=dict)  # weight format: the architectures it runs
    # it on, by the engine's own support table (in place of the format's ``needs``)

    @property
    def splits(self) -> str:
        """How it splits one copy of a model over several GPUs: "tensor parallel", "whole layers" (a token passing
        them in turn) or "one GPU" (an engine of a platform whose machines have one)."""
        if set(self.platforms) <= set(ONE_GPU_PLATFORMS):
            return "one GPU"
        return "whole layers" if self.split_layers else "tensor parallel"

    def weights_need(self, weights: Format) -> tuple[str, ...]:
        """The architectures this engine runs ``weights`` on (empty: all): its own table's, else the format's."""
        return self.formats_on.get(weights.id, weights.needs)

    def batch_limit(self, card_gib: float, gpu_name: str) -> int:
        """The most sequences it runs at once on a card reporting ``card_gib`` (vLLM raises its default on large cards
        but for the names it excepts)."""
        if self.large_card_batch is None:
            return self.max_batch
        from_gib, batch, excepted = self.large_card_batch
        name = gpu_name.lower()
        return batch if card_gib >= from_gib and not any(e in name for e in excepted) else self.max_batch


@dataclass(frozen=True)
class Format:
    """A weight format's bits per weight (with its scales), what it covers, and the architectures that run it."""

    id: str
    bits: float
    scope: str  # blocks | file
    needs: tuple[str, ...]
    source: str
    matrix_rate: float = 1.0  # the blocks' matrix products' rate over the 16-bit tensor peak, on ``rate_on``
    rate_on: tuple[str, ...] = ()

    def matrix_rate_on(self, architecture: str) -> float:
        """How many times the 16-bit tensor peak this format's matrix products run at on ``architecture`` (1 where
        it dequantizes to 16 bits, or the architecture lacks its tensor type)."""
        return self.matrix_rate if architecture in self.rate_on else 1.0


def _format(key: str, entry: dict[str, Any]) -> Format:
    rate = entry.get("matrix_rate")
    matrix_rate, rate_on = (float(rate["value"]), tuple(rate["architectures"])) if rate else (1.0, ())
    return Format(
        key, float(entry["bits"]), entry["scope"], tuple(entry["needs"]), entry["source"], matrix_rate, rate_on
    )


@dataclass(frozen=True)
class KvFormat:
    id: str
    bytes: float
    needs: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class EngineData:
    engines: dict[str, Engine]
    weight_formats: dict[str, Format]
    kv_formats: dict[str, KvFormat]


def _engine(key: str, entry: dict[str, Any]) -> Engine:
    sources = {
        name: entry[name]["source"]
        for name in ("memory_share", "block_tokens", "largest_step_tokens", "reserve_fixed_gb", "platforms")
    }
    if entry.get("architectures"):
        sources["architectures"] = entry["architectures"]["source"]
    sources.update({f"formats_on.{name}": v["source"] for name, v in (entry.get("formats_on") or {}).items()})
    return Engine(
        id=key,
        name=entry["name"],
        version=entry["version"],
        memory_share=float(entry["memory_share"]["value"]),
        share_of=entry["memory_share"]["of"],
        block_tokens=int(entry["block_tokens"]["value"]),
        largest_step_tokens=int(entry["largest_step_tokens"]["value"]),
        reserve_fixed_gb=float(entry["reserve_fixed_gb"]["value"]),
        window_extra=None if entry["window_extra"] is None else int(entry["window_extra"]),
        max_batch=int(entry["max_batch"]["value"]),
        activation_width=float(entry["activation_width"]["value"]),
        fp16_accumulate=bool(entry.get("fp16_accumulate", {}).get("value", False)),
        weights=tuple(entry["weights"]),
        kv_cache=tuple(entry["kv_cache"]),
        sources=sources,
        platforms=tuple(entry["platforms"]["value"]),
        memory_rule=_memory_rule(entry["memory_rule"]) if entry.get("memory_rule") else None,
        large_card_batch=_large_card_batch(entry.get("large_card_batch")),
        attention_data_parallel=(entry.get("attention_data_parallel") or {}).get("source"),
        tensor_parallel_heads=(entry.get("tensor_parallel_heads") or {}).get("source"),
        tensor_parallel_key_value_heads=bool((entry.get("tensor_parallel_heads") or {}).get("key_value_heads", True)),
        split_layers=(entry.get("split_layers") or {}).get("source"),
        architectures=tuple((entry.get("architectures") or {}).get("value", ())),
        formats_on={name: tuple(v["value"]) for name, v in (entry.get("formats_on") or {}).items()},
    )


def _large_card_batch(entry: dict[str, Any] | None) -> tuple[float, int, tuple[str, ...]] | None:
    if not entry:
        return None
    return float(entry["from_gib"]), int(entry["value"]), tuple(name.lower() for name in entry.get("except", []))


def _memory_rule(entry: dict[str, Any]) -> MemoryRule:
    numbers = {k: v for k, v in entry.items() if k not in ("tiers", "source")}
    tiers = tuple((None if t[0] is None else float(t[0]), int(t[1]), int(t[2]), int(t[3])) for t in entry["tiers"])
    return MemoryRule(tiers=tiers, source=entry["source"], **numbers)


@lru_cache(maxsize=1)
def engine_data() -> EngineData:
    """The shipped engines and formats."""
    text = resources.files("advisor").joinpath("data", ENGINES_FILE).read_text(encoding="utf-8")
    data = safe_load(text)
    if data.get("engines_version") != ENGINES_VERSION:
        raise AdvisorError(f"advisor/data/{ENGINES_FILE}: engines_version must be {ENGINES_VERSION}")
    formats = {key: _format(key, v) for key, v in data["weight_formats"].items()}
    kv = {
        key: KvFormat(key, float(v["bytes"]), tuple(v["needs"]), v["source"]) for key, v in data["kv_formats"].items()
    }
    engines = {key: _engine(key, entry) for key, entry in data["engines"].items()}
    for engine in engines.values():
        if (engine.share_of == "rule") != (engine.memory_rule is not None):
            raise AdvisorError(f"advisor/data/{ENGINES_FILE}: engines.{engine.id}: 'of: rule' goes with a memory_rule")
        for name in (*engine.weights, *engine.kv_cache):
            if name not in formats and name not in kv:
                raise AdvisorError(f"advisor/data/{ENGINES_FILE}: engines.{engine.id}: unknown format {name!r}")
        for name in engine.formats_on:
            if name not in engine.weights:
                raise AdvisorError(
                    f"advisor/data/{ENGINES_FILE}: engines.{engine.id}.formats_on: {name!r} is not one of its weights"
                )
    return EngineData(engines, formats, kv)


def platform_refusal(engine: Engine, platform: str, architecture: str) -> str | None:
    """Why ``engine`` does not run on a GPU of ``platform`` and ``architecture`` (None when it does), with its
    source."""
    if platform not in engine.platforms:
        runs = ", ".join(engine.platforms)
        return f"{engine.name} does not run on {platform} GPUs (it runs on {runs}: {engine.sources['platforms']})"
    if engine.architectures and architecture not in engine.architectures:  # one sentence for every such GPU
        runs = ", ".join(engine.architectures)
        return f"{engine.name} runs on {runs} GPUs only ({engine.sources['architectures']})"
    return None


def refusal(engine: Engine, weights: Format, kv: KvFormat) -> str | None:
    """Why ``engine`` cannot run these formats (None when it can): the reason, and what would work."""
    if weights.id not in engine.weights:
        return f"{engine.name} does not run {weights.id} weights (it runs {', '.join(engine.weights)})"
    if kv.id not in engine.kv_cache:
        return f"{engine.name} does not keep a {kv.id} cache (it keeps {', '.join(engine.kv_cache)})"
    return None


def weights_run_on(engine: Engine, weights: Format, architecture: str) -> bool:
    """Whether ``engine`` runs ``weights`` on a GPU of ``architecture`` (its own support table, else the format's)."""
    needs = engine.weights_need(weights)
    return not needs or architecture in needs


def kv_runs_on(kv: KvFormat, architecture: str) -> bool:
    """Whether a GPU of ``architecture`` keeps a ``kv`` cache natively."""
    return not kv.needs or architecture in kv.needs


def architecture_refusal(engine: Engine, architecture: str, weights: Format, kv: KvFormat) -> str | None:
    """Why ``engine`` cannot run these formats on a GPU of ``architecture`` (None when it can), with the source."""
    if not weights_run_on(engine, weights, architecture):
        if weights.id in engine.formats_on:
            source = engine.sources[f"formats_on.{weights.id}"]
            return f"{engine.name} runs {weights.id} weights on {' or '.join(engine.weights_need(weights))} ({source})"
        return f"{weights.id} weights need {' or '.join(weights.needs)} ({weights.source})"
    if not kv_runs_on(kv, architecture):
        return f"a {kv.id} cache needs {' or '.join(kv.needs)}"
    return None


def engine_rows(data: EngineData, platform_architectures: dict[str, set[str]] | None = None) -> list[dict[str, Any]]:
    """``advisor engines --json``: one object per engine: its version, where it runs (platforms, architectures), the
    formats it runs and, for those some of its architectures lack, the ones it runs them on (its own table's, else
    the format's), how it splits a model over GPUs, and the source of each. ``platform_architectures`` (the catalog's
    architectures of each platform) narrows those lists to the architectures the engine runs on."""
    rows = []
    for engine in data.engines.values():
        weights = [data.weight_formats[name] for name in engine.weights]
        caches = [data.kv_formats[name] for name in engine.kv_cache]
        mine = set(engine.architectures) or {
            a for p in engine.platforms for a in (platform_architectures or {}).get(p, set())
        }

        def limited(needs: tuple[str, ...], mine: set[str] = mine) -> list[str]:
            """Of the engine's own architectures, those a format runs on; empty where it runs on all of them."""
            kept = [a for a in needs if a in mine] if mine else list(needs)
            return [] if not needs or (mine and set(kept) == mine) else kept

        rows.append(
            {
                "id": engine.id,
                "name": engine.name,
                "version": engine.version,
                "platforms": list(engine.platforms),
                "architectures": list(engine.architectures) or None,  # None: every architecture of its platforms
                "weights": list(engine.weights),
                "weights_on": {
                    w.id: limited(engine.weights_need(w)) for w in weights if limited(engine.weights_need(w))
                },
                "kv_cache": list(engine.kv_cache),
                "kv_cache_on": {kv.id: limited(kv.needs) for kv in caches if limited(kv.needs)},
                "splits": engine.splits,
                "max_batch": engine.max_batch,
                "memory_share": engine.memory_share,
                "sources": {
                    **engine.sources,
                    **({"split_layers": engine.split_layers} if engine.split_layers else {}),
                    **({"tensor_parallel_heads": engine.tensor_parallel_heads} if engine.tensor_parallel_heads else {}),
                },
            }
        )
    return rows
