"""An inference job: the model, the engine and formats, the lengths and the load, on how many GPUs. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from advisor.errors import AdvisorError
from advisor.infer.architecture import InferenceModel, LayerCache
from advisor.infer.engines import Engine, Format, KvFormat, engine_data, refusal

GB = 1e9
ATTENTION_DATA_PARALLEL = (  # what the option means, said once for the command line and the app
    "a mixture of experts on several GPUs: each GPU runs its own users' attention (every weight but the experts "
    "whole, its own caches) and the experts are split over the GPUs (vLLM --data-parallel-size N "
    "--enable-expert-parallel, SGLang --enable-dp-attention, TensorRT-LLM enable_attention_dp)"
)


@dataclass(frozen=True)
class InferenceJob:
    """Serving ``model`` with ``engine``: sequences of ``prompt`` + ``output`` tokens, ``users`` at once, each GPU of
    ``devices`` holding 1/devices of the weights (tensor parallelism), in ``replicas`` copies of the model (data
    parallelism: each copy on its own ``devices`` GPUs, the users shared among the copies). With
    ``attention_data_parallel`` (a mixture of experts), each of the ``devices`` GPUs runs its own share of the users:
    a whole copy of every weight but the routed experts, its sequences' whole caches, and 1/devices of the experts."""

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
    attention_data_parallel: bool = False  # each GPU its own users' attention, the experts split over the GPUs

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
    def splits_layers(self) -> bool:
        """Several GPUs each hold whole layers (the engine's default split, llama.cpp's), a token passing them in
        turn: each card keeps its layers' caches whole and its own compute buffer."""
        return self.devices > 1 and self.engine.split_layers is not None and not self.attention_data_parallel

    @property
    def attention_groups(self) -> int:
        """How many batches of attention run side by side in a copy: one per GPU with attention data parallelism,
        else one split over the GPUs."""
        return self.devices if self.attention_data_parallel else 1

    def sequences_per_gpu(self, sequences: int) -> int:
        """The sequences the busiest GPU attends to when ``sequences`` are shared among the attention groups."""
        return -(-sequences // self.attention_groups)

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

    def expert_bytes(self) -> float:
        """The routed experts' weights in their format."""
        return self.model.expert_parameters * self.weight_bytes() / max(self.model.parameters, 1)

    def weight_bytes_per_gpu(self) -> float:
        """The weights each GPU holds: 1/devices of them (tensor parallel), or every weight but the routed experts and
        1/devices of those (attention data parallel)."""
        if self.attention_data_parallel:
            return self.weight_bytes() - self.expert_bytes() * (1 - 1 / self.devices)
        return self.weight_bytes() / self.devices

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

    def weight_bytes_read_per_gpu(self, batch: int) -> float:
        """What each GPU reads of :meth:`weight_bytes_read`: its 1/devices (tensor parallel), or its own whole dense
        weights and its 1/devices of the experts the whole group's tokens are routed to (attention data parallel)."""
        if not self.attention_data_parallel:
            return self.weight_bytes_read(batch) / self.devices
        experts = self.weight_bytes_read(batch) - self.weight_bytes_read(0)
        return self.weight_bytes_read(0) + experts / self.devices

    def kv_bytes(self, context: int, layers: Sequence[LayerCache] | None = None) -> float:
        """One sequence's cache at ``context`` tokens, as the engine keeps it (its window slack and blocks), in every
        layer (or in ``layers``: a card's part of a split)."""
        block = self.engine.block_tokens
        rounded = -(-context // block) * block
        return self.model.kv_elements(rounded, self.engine.window_extra, layers) * self.kv.bytes

    def kv_bytes_per_gpu(self, context: int, paged: bool = True) -> float:
        """One sequence's cache on one GPU (``paged`` False: the tokens exactly, no whole blocks). Tensor parallel:
        each layer's key-value heads split over the GPUs, at least one whole head on each (vLLM's get_num_kv_heads:
        max(1, heads // tensor_parallel_size), the rest replicated); a latent cache whole on each; a linear layer's
        state split. Attention data parallel: the whole cache on the GPU that serves the sequence."""
        layers_by_share: dict[float, list[LayerCache]] = {}
        for layer in self.model.layers:
            layers_by_share.setdefault(self._cache_share(layer), []).append(layer)

        def kept(layers: list[LayerCache]) -> float:
            if paged:
                return self.kv_bytes(context, layers)
            return self.model.kv_elements(context, self.engine.window_extra, layers) * self.kv.bytes

        return sum(share * kept(layers) for share, layers in layers_by_share.items())

    def _cache_share(self, layer: LayerCache) -> float:
        """The part of ``layer``'s cache that one GPU keeps."""
        if self.splits_layers:
            return 1 / self.devices  # the cards' layers: about 1/devices of every layer's cache, whole
        if self.attention_data_parallel or self.devices == 1 or layer.kind == "latent":
            return 1.0
        if layer.heads:
            return max(1, layer.heads // self.devices) / layer.heads
        return 1 / self.devices

    def activation_bytes(self) -> float:
        """The engine's largest forward pass: its tokens x the widest tensors (the engine's activation_width x the
        model's width, 16-bit) and one step's float32 logits for the users."""
        return self.activation_fixed_bytes() + self.sequences_per_gpu(self.users) * self.activation_per_user_bytes()

    def activation_fixed_bytes(self) -> float:
        """The part of the largest forward pass that does not grow with the users (an engine's fixed step size)."""
        return self.engine.largest_step_tokens * self._activation_width_per_gpu()

    def _activation_width_per_gpu(self) -> float:
        """A token's activations on one GPU: split over the GPUs (tensor parallel), whole on each (a layer split: each
        card its own compute buffer; attention data parallel: each GPU its own batch)."""
        width = self.engine.activation_width * self.model.hidden * 2
        return width if self.splits_layers else width / self.devices * self.attention_groups

    def activation_per_user_bytes(self) -> float:
        """What each user adds to it: its logits, and its whole prompt where the engine has no fixed step size (the
        prompts are one forward pass)."""
        prompt = 0 if self.engine.largest_step_tokens else self.prompt * self._activation_width_per_gpu()
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
    if job.attention_data_parallel:
        _check_attention_data_parallel(job)
    else:
        why = tensor_parallel_refusal(model, chosen, job.devices)
        if why:
            raise AdvisorError(why)
    if model.max_context and job.sequence_tokens > model.max_context:
        raise AdvisorError(
            f"context: {job.sequence_tokens:,} tokens is over {model.name}'s own maximum of {model.max_context:,} "
            "(max_position_embeddings); ask for that or less"
        )
    return job


def _splits_heads(model: InferenceModel, devices: int, key_value_heads: bool = True) -> bool:
    """Whether ``devices`` GPUs split the model's heads evenly: they divide the query heads, and (``key_value_heads``)
    each attention layer's key-value heads divide them or they the heads (the heads then replicated)."""
    if model.attention_heads and model.attention_heads % devices:
        return False
    if not key_value_heads:
        return True
    kv = {layer.heads for layer in model.layers if layer.heads and layer.kind in ("full", "sliding")}
    return all(heads % devices == 0 if heads >= devices else devices % heads == 0 for heads in kv)


def tensor_parallel_refusal(model: InferenceModel, engine: Engine, devices: int) -> str | None:
    """Why ``engine`` cannot split ``model`` over ``devices`` GPUs (tensor parallel), with the counts that work; None
    where it can (one GPU, an engine that splits the layers instead, heads that divide)."""
    with_kv = engine.tensor_parallel_key_value_heads
    if devices == 1 or engine.tensor_parallel_heads is None or _splits_heads(model, devices, with_kv):
        return None
    working = ", ".join(str(n) for n in (1, 2, 4, 8) if _splits_heads(model, n, with_kv))
    return (
        f"{engine.name} cannot split {model.name}'s heads ({model.attention_heads} query, "
        f"{'/'.join(sorted({str(layer.heads) for layer in model.layers if layer.heads}))} key-value) over {devices} "
        f"GPUs ({engine.tensor_parallel_heads}); it splits them over {working} (--devices)"
    )


def _check_attention_data_parallel(job: InferenceJob) -> None:
    """Attention data parallelism needs a mixture of experts, several GPUs and an engine that runs it."""
    if not job.model.experts:
        raise AdvisorError(
            f"attention data parallel: {job.model.name} has no routed experts to split; copies of a dense model "
            "serving the users between them are --replicas N"
        )
    if job.devices < 2:
        raise AdvisorError("attention data parallel: needs --devices 2 or more (each GPU runs its own users)")
    if not job.engine.attention_data_parallel:
        runs = ", ".join(e.name for e in engine_data().engines.values() if e.attention_data_parallel)
        raise AdvisorError(f"attention data parallel: {job.engine.name} does not run it ({runs} do)")
