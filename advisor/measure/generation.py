"""Time a real text generation on this device: a decoder-only model from its config (random weights: the speed of a
generation does not depend on their values) or a local model folder, run by transformers' ``generate``.

What is timed, per batch size (concurrent sequences), after a warm-up run that is never counted:

- **prefill**: the prompt's forward pass that fills the cache (``generate`` with one new token: the time to the
  first token, unloaded);
- **decode**: ``generate`` of ``output_tokens`` new tokens; a step's time is the difference between the two runs over
  the ``output_tokens - 1`` steps after the first, so the prompt's work is not counted twice.

Each figure is the median of ``repeats`` runs with its spread (min, max, relative standard deviation). Peak memory is
the framework allocator's peak over the runs. torch and transformers are imported here only (``measure_generation``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from advisor.format.vocabulary import DeviceKind, DType
from advisor.llm.config import ModelConfig
from advisor.measure import timing
from advisor.measure.peak_memory import torch_counters

DTYPES = tuple(d.value for d in (DType.BFLOAT16, DType.FLOAT16, DType.FLOAT32))


@dataclass(frozen=True)
class GenerationPlan:
    """What to time: the model, the prompt and output lengths, the batch sizes (concurrent sequences) and repeats."""

    model: ModelConfig | None = None  # a config's shape with random weights (None: ``model_path`` is loaded)
    model_path: Path | None = None  # a local folder with config.json (and weights, if any)
    dtype: str = "bfloat16"
    prompt_tokens: int = 512
    output_tokens: int = 128
    batches: tuple[int, ...] = (1,)
    repeats: int = 5
    device: str = "auto"  # auto | cpu | gpu
    seed: int = 0
    attention: str = "sdpa"  # transformers' attn_implementation


@dataclass
class GenerationResult:
    """One batch size's timings (seconds) and what they give in tokens per second."""

    batch: int
    prefill_seconds: list[float] = field(default_factory=list)
    generate_seconds: list[float] = field(default_factory=list)
    peak_memory_bytes: int | None = None

    def record(self, prompt_tokens: int, output_tokens: int) -> dict[str, Any]:
        prefill = timing.stats_of(self.prefill_seconds)
        whole = timing.stats_of(self.generate_seconds)
        assert prefill is not None and whole is not None
        if whole.median <= prefill.median:  # the output's steps are lost in this device's noise: no figure follows
            raise AdvisorError(
                f"batch {self.batch}: generating {output_tokens} tokens took no longer than the first one (medians "
                f"{whole.median:.4g} s and {prefill.median:.4g} s): the steps are below this device's timing noise; "
                "measure more of them (a larger --output or --repeats)"
            )
        steps = max(output_tokens - 1, 1)
        step = (whole.median - prefill.median) / steps
        out: dict[str, Any] = {
            "batch": self.batch,
            "prefill": prefill.as_dict(),
            "generate": whole.as_dict(),
            "time_to_first_token_s": round(prefill.median, 6),
            "time_per_output_token_s": float(f"{step:.6g}"),
            "prefill_tokens_per_s": float(f"{self.batch * prompt_tokens / prefill.median:.6g}"),
            "decode_tokens_per_s": float(f"{self.batch / step:.6g}"),
        }
        if self.peak_memory_bytes is not None:
            out["peak_memory_gb"] = round(self.peak_memory_bytes / 1e9, 3)
        return out


def hf_config_of(model: ModelConfig) -> dict[str, Any]:
    """A Llama-architecture ``config.json`` with the preset's shapes: the same matrices, cache and work per token."""
    return {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": model.hidden,
        "intermediate_size": model.intermediate,
        "num_hidden_layers": model.layers,
        "num_attention_heads": model.heads,
        "num_key_value_heads": model.kv_heads,
        "head_dim": model.head_size,
        "vocab_size": model.vocab,
        "tie_word_embeddings": model.tied_embeddings,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5,
    }


def _config_keys(config: Any) -> dict[str, Any]:
    """The loaded config's own keys (those it sets apart from transformers' defaults), its local path left out."""
    keys = config.to_diff_dict() if hasattr(config, "to_diff_dict") else dict(config)
    return {
        key: value
        for key, value in keys.items()
        if not key.startswith("_") and key not in ("transformers_version", "torch_dtype", "dtype")
    }


def _build(plan: GenerationPlan, torch, transformers, device: str):
    dtype = getattr(torch, plan.dtype)
    if plan.model_path is not None:
        folder = plan.model_path
        has_weights = any(folder.glob("*.safetensors")) or any(folder.glob("*.bin"))
        if has_weights:
            return transformers.AutoModelForCausalLM.from_pretrained(
                folder, dtype=dtype, local_files_only=True, attn_implementation=plan.attention
            ).to(device)
        config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    else:
        assert plan.model is not None
        config = transformers.LlamaConfig(**hf_config_of(plan.model))
    config._attn_implementation = plan.attention
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model.eval()


def _timed(torch, device: str, fn: Callable[[], Any]) -> float:
    _synchronize(torch, device)
    start = time.perf_counter()
    fn()
    _synchronize(torch, device)
    return time.perf_counter() - start


def measure_generation(plan: GenerationPlan, progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Time ``plan``'s generation on this device; the record of an inference measurement (see the module's doc)."""
    try:
        import torch
        import transformers
    except ImportError:
        raise AdvisorError("timing a generation needs torch and transformers: pip install torch transformers") from None
    device = _device_of(plan, torch)
    counters = torch_counters(torch, device)  # the allocator's peak: CUDA (and ROCm's HIP) and Intel's xpu
    torch.manual_seed(plan.seed)
    progress(f"building the model on {device} ({plan.dtype})")
    model = _build(plan, torch, transformers, device)
    parameters = sum(p.numel() for p in model.parameters())
    vocab = model.config.vocab_size
    results = []
    for batch in plan.batches:
        progress(f"batch {batch}: prompt {plan.prompt_tokens}, output {plan.output_tokens}")
        prompt = torch.randint(0, vocab, (batch, plan.prompt_tokens), device=device)
        mask = torch.ones_like(prompt)
        result = GenerationResult(batch)

        def generate(new_tokens: int, prompt=prompt, mask=mask) -> None:
            with torch.inference_mode():
                model.generate(
                    input_ids=prompt,
                    attention_mask=mask,
                    max_new_tokens=new_tokens,
                    min_new_tokens=new_tokens,
                    do_sample=False,
                    pad_token_id=0,
                )

        if counters is not None:
            counters.reset_peak_memory_stats()
        try:
            generate(plan.output_tokens)  # warm-up: kernels chosen, memory pools filled; never counted
            for _ in range(plan.repeats):
                result.prefill_seconds.append(_timed(torch, device, lambda: generate(1)))
                result.generate_seconds.append(_timed(torch, device, lambda: generate(plan.output_tokens)))
        except torch.OutOfMemoryError:
            progress(f"batch {batch}: out of memory; larger batches skipped")
            break
        if counters is not None:
            result.peak_memory_bytes = int(counters.max_memory_allocated())
        results.append(result.record(plan.prompt_tokens, plan.output_tokens))
        gc.collect()
    return _record(plan, model, parameters, results, *_facts(torch, transformers, device, plan.attention))


def _record(plan: GenerationPlan, model: Any, parameters: int, results: list, device_facts: dict, software: dict):
    """What was timed and how it went: measure_generation's record (advisor.measure.inference_profile makes the
    profile of it)."""
    return {
        "measured_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "model_name": plan.model.name if plan.model is not None else plan.model_path.name,
        "config": _config_keys(model.config),
        "parameters": parameters,
        "weights": "random (the config's shapes)" if plan.model is not None else "as loaded",
        "dtype": plan.dtype,
        "prompt_tokens": plan.prompt_tokens,
        "output_tokens": plan.output_tokens,
        "repeats": plan.repeats,
        "device": device_facts,
        "software": software,
        "results": results,
    }


def _facts(torch, transformers, device: str, attention: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The device's and the software's facts, best effort (a GPU named as :mod:`advisor.measure.hardware` names it
    for training: CUDA's name, ROCm's or Apple's identity)."""
    from advisor.measure import hardware

    facts = hardware.torch_gpu_facts(torch, torch.device(device)) if device != "cpu" else None
    cpu = {"kind": DeviceKind.CPU.value, "name": hardware.host_facts().get("cpu", "CPU")}
    device_facts: dict[str, Any] = facts or cpu
    software = {
        "engine": "transformers",
        "engine_version": str(transformers.__version__),
        "torch": str(torch.__version__),
        "attention": attention,
    }
    with contextlib.suppress(Exception):
        if device.startswith("cuda") and torch.version.cuda:
            software["cuda"] = str(torch.version.cuda)
    return device_facts, software


def _device_of(plan: GenerationPlan, torch) -> str:
    """The device the run goes to (a CUDA or ROCm GPU, an Intel GPU through PyTorch's xpu, Apple's GPU, else the
    CPU); a clear error for a dtype or a device that cannot be had."""
    if plan.dtype not in DTYPES:
        raise AdvisorError(f"dtype: {plan.dtype!r} is not one of {', '.join(DTYPES)}")
    if plan.device != "cpu":
        if torch.cuda.is_available():
            return "cuda:0"
        xpu = getattr(torch, "xpu", None)
        if xpu is not None and xpu.is_available():
            return "xpu:0"
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return "mps"
    if plan.device == "gpu":
        raise AdvisorError("device: gpu asked, but no GPU is visible to PyTorch")
    return "cpu"


def _synchronize(torch, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    elif device.startswith("xpu"):
        torch.xpu.synchronize()
    elif device == "mps":
        torch.mps.synchronize()
