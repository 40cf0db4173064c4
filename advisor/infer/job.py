"""An inference job: the model, the engine and formats, the lengths and the load, on how many GPUs. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.errors import AdvisorError
from advisor.infer.architecture import InferenceModel, LayerCache
from advisor.infer.engines import Engine, Format, KvFormat, engine_data, refusal

GB = 1e9


@dataclass(frozen=True)
class InferenceJob:
    """Serving ``model`` with ``engine``: sequences of ``prompt`` + ``output`` tokens, ``users`` at once, each GPU of
    ``devices`` holding 1/devices of the weights (tensor parallelism), in ``replicas`` copies of the model (data
    parallelism: each copy on its own ``devices`` GPUs, the users shared among the copies)."""

    model: InferenceModel
    engine: Engine
    weights: Format
    kv: KvFormat
    prompt: int = 1024
    output: int = 256
    users: int = 1
    devices: int = 1
    context: int | None = None  # the longest sequence to hold (default: prompt + output)
    replicas: int = 1  # copies of the model, each on `devices` GPUs, serving the users between them
    rate: float | None = None  # requests a second arriving steadily (the users at once then follow, per GPU)

    def per_copy(self) -> InferenceJob:
        """What one copy serves: its share of the users (the first copies take one more where they do not divide)
        and of the arrivals."""
        rate = None if self.rate is None else self.rate / self.replicas
        return replace(self, users=-(-self.users // self.replicas), replicas=1, rate=rate)

    @property
    def gpus(self) -> int:
        """Every GPU the job takes: the tensor-parallel group of each copy, times the copies."""
        return self.devices * self.replicas

    @property
    def keeps_whole_windows(self) -> bool:
        """The model has sliding-window layers but the engine keeps every token of them in its cache (it applies no
        window: ``window_extra`` null in engines.yaml), so they cost what full attention does."""
        windowed = any(layer.window is not None for layer in self.model.layers)
        return windowed and self.engine.window_extra is None

    @property
    def sequence_tokens(self) -> int:
        return self.context or (self.prompt + self.output)

    def weight_bytes(self) -> float:
        """Every weight in its format (a blocks-only format keeps the embeddings and output layer in 16 bits)."""
        m, f = self.model, self.weights
        if f.scope == "file":
            return m.parameters * f.bits / 8
        return (m.parameters - m.embedding_parameters) * f.bits / 8 + m.embedding_parameters * 2

    def weight_bytes_read(self, batch: int) -> float:
        """The weights one decode step of ``batch`` sequences reads: every dense weight once, and the experts the
        batch's tokens are routed to (each token picks experts_per_token of experts; uniform routing assumed)."""
        m = self.model
        scale = self.weight_bytes() / max(m.parameters, 1)
        # the input embedding is a lookup (one row a token); the output layer is read whole
        dense = (m.parameters - m.expert_parameters - m.embedding_parameters + m.vocab * m.hidden) * scale
        if not m.experts:
            return dense
        touched = 1 - (1 - m.experts_per_token / m.experts) ** batch
        return dense + m.expert_parameters * scale * touched

    def kv_bytes(self, context: int, layers: Sequence[LayerCache] | None = None) -> float:
        """One sequence's cache at ``context`` tokens, as the engine keeps it (its window slack and blocks), in every
        layer (or in ``layers``: a card's part of a split)."""
        block = self.engine.block_tokens
        rounded = -(-context // block) * block
        return self.model.kv_elements(rounded, self.engine.window_extra, layers) * self.kv.bytes

    def activation_bytes(self) -> float:
        """The engine's largest forward pass: its tokens x the widest tensors (the engine's activation_width x the
        model's width, 16-bit) and one step's float32 logits for the users."""
        return self.activation_fixed_bytes() + self.users * self.activation_per_user_bytes()

    def activation_fixed_bytes(self) -> float:
        """The part of the largest forward pass that does not grow with the users (an engine's fixed step size)."""
        width = self.engine.activation_width * self.model.hidden * 2
        return self.engine.largest_step_tokens * width / self.devices

    def activation_per_user_bytes(self) -> float:
        """What each user adds to it: its logits, and its whole prompt where the engine has no fixed step size (the
        prompts are one forward pass)."""
        width = self.engine.activation_width * self.model.hidden * 2
        prompt = 0 if self.engine.largest_step_tokens else self.prompt * width / self.devices
        return prompt + self.model.vocab * 4


def make_job(
    model: InferenceModel, engine: str, weights: str | Format | None, kv: str | None, **sizes: float | None
) -> InferenceJob:
    """A job from names (``weights`` may be a GGUF file's own format); one clear error for an unknown name or a
    format the engine cannot run."""
    data = engine_data()
    if engine not in data.engines:
        raise AdvisorError(f"engine: {engine!r} is not one of {', '.join(data.engines)}")
    chosen = data.engines[engine]
    weights = weights or chosen.weights[0]
    kv = kv or chosen.kv_cache[0]
    if isinstance(weights, str) and weights not in data.weight_formats:
        raise AdvisorError(f"weights: {weights!r} is not one of {', '.join(data.weight_formats)}")
    if kv not in data.kv_formats:
        raise AdvisorError(f"kv_cache: {kv!r} is not one of {', '.join(data.kv_formats)}")
    chosen_format = data.weight_formats[weights] if isinstance(weights, str) else weights
    job = InferenceJob(model, chosen, chosen_format, data.kv_formats[kv], **sizes)
    if chosen_format.id.startswith("gguf:") and "gguf" not in chosen.weights:
        raise AdvisorError(f"{chosen.name} does not run a GGUF file's weights (llama.cpp does)")
    why = None if chosen_format.id.startswith("gguf:") else refusal(chosen, job.weights, job.kv)
    if why:
        raise AdvisorError(why)
    for name in ("prompt", "output", "users", "devices", "replicas"):
        if getattr(job, name) < (0 if name == "prompt" else 1):
            raise AdvisorError(f"{name}: must be 1 or more, got {getattr(job, name)}")
    if job.rate is not None and not (job.rate > 0 and math.isfinite(job.rate)):
        raise AdvisorError(f"requests per second: must be more than 0, got {job.rate:g}")
    if job.rate is not None and job.users != 1:
        raise AdvisorError("the load is a number of users at once or a rate of requests a second, not both")
    if model.max_context and job.sequence_tokens > model.max_context:
        raise AdvisorError(
            f"context: {job.sequence_tokens:,} tokens is over {model.name}'s own maximum of {model.max_context:,} "
            "(max_position_embeddings); ask for that or less"
        )
    return job
