"""The cache pools engines logged at start, against the serving memory model's count: a check on runs it never saw.

An engine logs the tokens its cache pool holds once the weights are loaded (vLLM "GPU KV cache size: N tokens",
SGLang "KV Cache is allocated. #tokens: N"). Each row of ``cache_pools`` in ``advisor/data/inference_results.yaml``
gives the engine, GPU, tensor-parallel GPUs, model, weight format, the share of the card the run set, the tokens of
the forward pass the engine profiled (its largest step; null: the engine's default today) and the tokens logged;
:func:`predicted_tokens` counts the same pool with :func:`advisor.infer.serving_memory.cache_pool_tokens`. Nothing is
fitted on these rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.errors import AdvisorError
from advisor.infer.architecture import resolve_inference_model
from advisor.infer.job import make_job
from advisor.infer.serving_memory import cache_pool_tokens
from advisor.infer.speed import RESULTS_FILE, results_file
from advisor.store.catalog import Catalog


@dataclass(frozen=True)
class LoggedPool:
    """One engine's logged cache pool (a row of ``cache_pools``)."""

    engine: str
    gpu: str
    devices: int
    model: str
    weights: str
    share: float  # the part of the card the run gave the engine (gpu_memory_utilization, mem_fraction_static)
    step_tokens: int | None  # the profiled forward pass's tokens (vLLM before chunked prefill: max_model_len)
    tokens: int  # what the engine logged
    source: str


def load_logged_pools() -> tuple[LoggedPool, ...]:
    """The logged cache pools (``cache_pools`` in inference_results.yaml)."""
    data = results_file()
    pools = []
    for index, row in enumerate(data.get("cache_pools") or []):
        if len(row) != 9 or row[8] not in data["sources"]:
            where = f"advisor/data/{RESULTS_FILE}: cache_pools[{index}]"
            raise AdvisorError(f"{where}: 9 fields and a known source expected")
        engine, gpu, devices, model, weights, share, step, tokens, source = row
        step_tokens = None if step is None else int(step)
        pools.append(
            LoggedPool(engine, gpu, int(devices), model, weights, float(share), step_tokens, int(tokens), source)
        )
    return tuple(pools)


def predicted_tokens(pool: LoggedPool, catalog: Catalog) -> int:
    """The serving memory model's pool for the logged run (its share and profiled step as the run set them)."""
    job = make_job(resolve_inference_model(pool.model), pool.engine, pool.weights, None, devices=pool.devices)
    if pool.step_tokens is not None:
        job = replace(job, engine=replace(job.engine, largest_step_tokens=pool.step_tokens))
    memory_gb = float(catalog.by_id()[pool.gpu].usable_memory_gb or 0)
    return cache_pool_tokens(job, memory_gb, pool.share)
