"""A model as inference sees it: what each layer keeps per token (or per sequence), and the weights a token reads.

Read from a Hugging Face ``config.json``'s keys (a user's file, or an inference preset in
``advisor/data/inference_models.yaml``, or a training preset of ``models.yaml`` with full attention). Every attention
kind is named by the fields that define it, and a config whose layers are of a kind not described here is refused with
the fields it lacks, never estimated as another kind:

- **full** attention, multi-head / grouped-query / multi-query: ``num_key_value_heads`` x ``head_dim`` keys and as
  many values per token and layer;
- **sliding** window (Mistral's ``sliding_window``; Gemma 2's every other layer; Gemma 3's ``sliding_window_pattern``;
  any ``layer_types``): the same per token, for the last ``sliding_window`` tokens only;
- **latent** (multi-head latent attention, DeepSeek V2/V3's ``kv_lora_rank``): one compressed vector of
  ``kv_lora_rank + qk_rope_head_dim`` per token and layer (the serving engines and transformers 5 alike keep it
  compressed, not expanded per head);
- **linear** attention (Qwen3-Next's gated DeltaNet layers, ``layer_types: linear_attention``): a state of fixed size
  per sequence (a convolution window and a recurrent matrix per value head), whatever the context;
- **mixture of experts** changes the weights a token reads (``num_experts_per_tok`` of the experts, plus shared
  experts), not the cache.
Pure: no I/O but :func:`read_inference_config`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from advisor.format import names
from advisor.llm.config import ModelConfig, load_presets
from advisor.store.parse import safe_load

INFERENCE_MODELS_FILE = "inference_models.yaml"
INFERENCE_MODELS_VERSION = 1
LAYER_KINDS = ("full", "sliding", "latent", "linear")  # the attention kinds described (see the module's doc)
# layer_types' words (transformers 5) for each kind described
LAYER_TYPE_WORDS = {"full_attention": "full", "sliding_attention": "sliding", "linear_attention": "linear"}
# Fields that make a layer something not described here: the field, and what it makes the model.
NOT_DESCRIBED = {
    "ssm_cfg": "state-space (Mamba) blocks",
    "mamba_d_state": "state-space (Mamba) layers",
    "attn_layer_period": "a hybrid of attention and Mamba layers (Jamba)",
    "layers_block_type": "a hybrid of block types",
    "attention_chunk_size": "chunked local attention (Llama 4)",
    "is_encoder_decoder": "an encoder-decoder model",
}


@dataclass(frozen=True)
class LayerCache:
    """What one layer keeps: elements per token (keys and values together) or per sequence (a linear layer's state)."""

    kind: str  # one of LAYER_KINDS
    per_token: int = 0  # elements per token (keys and values; latent: the compressed vector)
    window: int | None = None  # sliding: the tokens kept
    per_sequence: int = 0  # linear: the state's elements per sequence (convolution window and recurrent matrix)
    heads: int = 0  # full and sliding: its key-value heads (a tensor-parallel split keeps at least one on each GPU)


@dataclass(frozen=True)
class InferenceModel:
    """A decoder-only model's layers as inference keeps them, and its weights (all, and those one token reads)."""

    name: str
    layers: tuple[LayerCache, ...]
    hidden: int
    vocab: int
    parameters: int  # every weight
    active_parameters: int  # the weights one token multiplies through (MoE: the routed experts it uses)
    max_context: int | None
    embedding_parameters: int = 0  # the input embedding and (untied) the output layer: 16-bit in most formats
    expert_parameters: int = 0  # the routed experts' weights in all (a token reads experts_per_token of each layer's)
    experts: int = 0  # routed experts per MoE layer (0: dense)
    experts_per_token: int = 0
    moe_layers: int = 0  # the layers whose MLP is routed experts
    attention_heads: int = 0  # the query heads of an attention layer (num_attention_heads; 0: not known)
    source: str = ""

    @property
    def kinds(self) -> dict[str, int]:
        """How many layers of each kind."""
        return dict(Counter(layer.kind for layer in self.layers))

    def kv_elements(
        self, context: int, window_extra: int | None = 0, layers: Sequence[LayerCache] | None = None
    ) -> int:
        """Elements one sequence of ``context`` tokens keeps in every layer's cache (or in ``layers``: a card's part
        of a split), a linear layer's state included; a sliding layer keeps ``window + window_extra`` tokens at most
        (an engine's own slack: transformers keeps ``window - 1``, the newest token's own keys computed afresh), or
        the whole sequence where ``window_extra`` is None (an engine that applies no window to its cache)."""
        total = 0
        for layer in self.layers if layers is None else layers:
            windowed = layer.window is not None and window_extra is not None
            tokens = min(context, layer.window + window_extra) if windowed else context
            total += tokens * layer.per_token + layer.per_sequence
        return total

    def per_token_elements(self) -> int:
        """Elements each further token adds, once past every window (full and latent layers only)."""
        return sum(layer.per_token for layer in self.layers if layer.window is None)


def _int(data: dict[str, Any], key: str, file: str, default: int | None = None) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        if value is None:
            raise AdvisorError(f"{file}: {key}: missing, and the model's layers need it")
        raise AdvisorError(f"{file}: {key}: must be a whole number, got {value!r}")
    return value


def _layer_kinds(data: dict[str, Any], layers: int, file: str) -> list[str]:
    """Each layer's attention kind, from ``layer_types`` or the model type's own rule."""
    model_type = str(data.get("model_type", "")).lower()
    types = data.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise AdvisorError(f"{file}: layer_types: must list one type per layer ({layers})")
        unknown = sorted({t for t in types if t not in LAYER_TYPE_WORDS})
        if unknown:
            raise AdvisorError(
                f"{file}: layer_types: {', '.join(map(str, unknown))} not described (known: "
                f"{', '.join(LAYER_TYPE_WORDS)}); refused rather than estimated as another kind"
            )
        return [LAYER_TYPE_WORDS[t] for t in types]
    if model_type == "qwen3_next":
        interval = _int(data, "full_attention_interval", file, 4)
        return ["full" if (i + 1) % interval == 0 else "linear" for i in range(layers)]
    window = data.get("sliding_window")
    if not window:
        return ["full"] * layers
    if model_type == "gemma2":
        return ["sliding" if i % 2 == 0 else "full" for i in range(layers)]
    if model_type in ("gemma3", "gemma3_text"):
        pattern = _int(data, "sliding_window_pattern", file, 6)
        return ["full" if (i + 1) % pattern == 0 else "sliding" for i in range(layers)]
    if model_type in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe") and not data.get("use_sliding_window", False):
        return ["full"] * layers  # Qwen's configs carry a window they do not use unless use_sliding_window
    return ["sliding"] * layers  # Mistral, Mixtral, Phi-3: every layer


def _attention(data: dict[str, Any], file: str, hidden: int, heads: int) -> tuple[LayerCache, int]:
    """A full-attention layer's cache per token and its attention weights."""
    if data.get("kv_lora_rank"):
        rank = _int(data, "kv_lora_rank", file)
        rope = _int(data, "qk_rope_head_dim", file)
        nope = _int(data, "qk_nope_head_dim", file)
        v_dim = _int(data, "v_head_dim", file)
        q_rank = data.get("q_lora_rank") or 0
        q_weights = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
        weights = q_weights + hidden * (rank + rope) + rank * heads * (nope + v_dim) + heads * v_dim * hidden
        return LayerCache("latent", rank + rope), weights
    kv_heads = _int(data, "num_key_value_heads", file, heads) or heads
    head_dim = data.get("head_dim") or (hidden // heads)
    if heads % kv_heads:
        raise AdvisorError(f"{file}: {heads} attention heads are not a multiple of {kv_heads} key-value heads")
    per_token = 2 * kv_heads * head_dim
    weights = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    return LayerCache("full", per_token, heads=kv_heads), weights


def _linear_attention(data: dict[str, Any], file: str, hidden: int) -> tuple[LayerCache, int]:
    """A gated DeltaNet layer (Qwen3-Next): its state per sequence and its weights."""
    key_heads = _int(data, "linear_num_key_heads", file)
    value_heads = _int(data, "linear_num_value_heads", file)
    key_dim = key_heads * _int(data, "linear_key_head_dim", file)
    value_head_dim = _int(data, "linear_value_head_dim", file)
    value_dim = value_heads * value_head_dim
    kernel = _int(data, "linear_conv_kernel_dim", file)
    conv = (2 * key_dim + value_dim) * kernel
    recurrent = value_heads * _int(data, "linear_key_head_dim", file) * value_head_dim
    weights = hidden * (2 * key_dim + 2 * value_dim + 2 * value_heads) + value_dim * hidden
    return LayerCache("linear", per_sequence=conv + recurrent), weights


def _mlp(data: dict[str, Any], file: str, hidden: int, index: int) -> tuple[int, int, int, int]:
    """One layer's MLP weights: (all, those a token reads, experts, experts a token uses)."""
    experts = 0
    for key in ("num_local_experts", "num_experts", "n_routed_experts"):
        experts = max(experts, data.get(key) or 0)
    gated = 3 if str(data.get("hidden_act", "silu")) != "gelu_new" else 2
    dense_size = data.get("intermediate_size") or 4 * hidden
    first_dense = data.get("first_k_dense_replace") or 0
    sparse_step = data.get("decoder_sparse_step") or 1
    dense_layers = set(data.get("mlp_only_layers") or [])
    if experts <= 1 or index < first_dense or (index + 1) % sparse_step or index in dense_layers:
        weights = gated * hidden * dense_size
        return weights, weights, 0, 0
    per_token = _int(data, "num_experts_per_tok", file) if "num_experts_per_tok" in data else 0
    if not per_token:
        per_token = _int(data, "experts_per_token", file)
    expert_size = data.get("moe_intermediate_size") or dense_size
    shared = (data.get("n_shared_experts") or 0) * expert_size + (data.get("shared_expert_intermediate_size") or 0)
    one = gated * hidden * expert_size
    router = hidden * experts
    all_weights = experts * one + gated * hidden * shared + router
    return all_weights, per_token * one + gated * hidden * shared + router, experts, per_token


def model_from_mapping(data: Any, file: str, name: str | None = None) -> InferenceModel:
    """The inference view of a ``config.json``'s contents (``file`` names it in errors)."""
    if not isinstance(data, dict):
        raise AdvisorError(f"{file}: not a model configuration (a JSON object with num_hidden_layers, hidden_size...)")
    if isinstance(data.get("text_config"), dict):
        data = {**data["text_config"], "_name_or_path": data.get("_name_or_path")}
    for key, what in NOT_DESCRIBED.items():
        if data.get(key) not in (None, False, 0, [], {}):
            raise AdvisorError(
                f"{file}: {key}: {what}, whose cache is not described (known kinds: {', '.join(LAYER_KINDS)}); "
                "refused rather than estimated as another kind"
            )
    for key in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size"):
        if key not in data:
            raise AdvisorError(f"{file}: {key}: missing (a decoder-only model's config needs it)")
    layers = _int(data, "num_hidden_layers", file)
    hidden = _int(data, "hidden_size", file)
    heads = _int(data, "num_attention_heads", file)
    vocab = _int(data, "vocab_size", file)
    if heads == 0 or layers == 0:
        raise AdvisorError(f"{file}: num_hidden_layers and num_attention_heads must be 1 or more")
    window = data.get("sliding_window")
    caches: list[LayerCache] = []
    total = active = routed = 0
    experts = experts_per_token = moe_layers = 0
    for index, kind in enumerate(_layer_kinds(data, layers, file)):
        if kind == "linear":
            cache, attention = _linear_attention(data, file, hidden)
        else:
            cache, attention = _attention(data, file, hidden, heads)
            if kind == "sliding":
                if not isinstance(window, int) or window < 1:
                    raise AdvisorError(f"{file}: sliding_window: sliding layers need a window of 1 token or more")
                cache = LayerCache("sliding", cache.per_token, window=window, heads=cache.heads)
        mlp_all, mlp_active, layer_experts, layer_per_token = _mlp(data, file, hidden, index)
        experts, experts_per_token = max(experts, layer_experts), max(experts_per_token, layer_per_token)
        if layer_experts:
            routed += (mlp_all - mlp_active) * layer_experts // (layer_experts - layer_per_token)
            moe_layers += 1
        caches.append(cache)
        total += attention + mlp_all + 2 * hidden
        active += attention + mlp_active + 2 * hidden
    tied = bool(data.get("tie_word_embeddings", False))
    embeddings = vocab * hidden * (1 if tied else 2)
    return InferenceModel(
        name=name or str(data.get("_name_or_path") or Path(file).parent.name or Path(file).stem),
        layers=tuple(caches),
        hidden=hidden,
        vocab=vocab,
        parameters=total + embeddings + hidden,
        active_parameters=active + vocab * hidden,  # the output layer; the input embedding is a lookup
        max_context=data.get("max_position_embeddings"),
        embedding_parameters=embeddings,
        expert_parameters=routed,
        experts=experts,
        experts_per_token=experts_per_token,
        moe_layers=moe_layers,
        attention_heads=heads,
        source=str(data.get("_source") or f"{file} (read from disk)"),
    )


def mapping_of(model: ModelConfig) -> dict[str, Any]:
    """A training preset as config.json keys (full attention in every layer)."""
    return {
        "model_type": "llama",
        "num_hidden_layers": model.layers,
        "hidden_size": model.hidden,
        "num_attention_heads": model.heads,
        "num_key_value_heads": model.kv_heads,
        "head_dim": model.head_size,
        "intermediate_size": model.intermediate,
        "vocab_size": model.vocab,
        "tie_word_embeddings": model.tied_embeddings,
        "hidden_act": "silu" if model.gated_mlp else "gelu_new",
        "_source": model.source,
    }


@lru_cache(maxsize=1)
def _models_file() -> dict[str, Any]:
    """``advisor/data/inference_models.yaml``, read and checked once."""
    text = resources.files("advisor").joinpath("data", INFERENCE_MODELS_FILE).read_text(encoding="utf-8")
    data = safe_load(text)
    if data.get("inference_models_version") != INFERENCE_MODELS_VERSION:
        raise AdvisorError(
            f"advisor/data/{INFERENCE_MODELS_FILE}: inference_models_version must be {INFERENCE_MODELS_VERSION}"
        )
    return data


@lru_cache(maxsize=1)
def inference_presets() -> dict[str, dict[str, Any]]:
    """The inference presets' config.json keys, by id (``advisor/data/inference_models.yaml``)."""
    return {
        key: {**entry["config"], "_source": entry["source"], "_name": entry["name"]}
        for key, entry in _models_file()["models"].items()
    }


def _max_context(preset: str) -> int | None:
    """A training preset's own longest context (None: not known)."""
    return (_models_file().get("max_context") or {}).get(preset)


def unknown_maximum_cap() -> int:
    """How far the longest context is searched for a model whose maximum is not known."""
    return int(_models_file()["unknown_maximum_cap"])


def read_inference_config(path: str | Path) -> InferenceModel:
    """A user's own ``config.json`` (or the folder that holds it), read from disk."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise AdvisorError(f"{path}: cannot read the model's config ({error.strerror or error})") from None
    except json.JSONDecodeError as error:
        raise AdvisorError(f"{path}: line {error.lineno}: not valid JSON ({error.msg})") from None
    return model_from_mapping(data, str(path))


def resolve_inference_model(name_or_path: str) -> InferenceModel:
    """An inference preset, else a training preset (full attention), else a ``config.json`` path."""
    wanted = name_or_path.strip().lower().replace(" ", "-")
    presets = inference_presets()
    for key, entry in presets.items():
        if wanted in (key, entry["_name"].lower().replace(" ", "-")):
            return model_from_mapping(entry, f"advisor/data/{INFERENCE_MODELS_FILE}: models.{key}", entry["_name"])
    training = load_presets()
    for key, model in training.items():
        if wanted in (key, model.name.lower().replace(" ", "-")):
            mapping = {**mapping_of(model), "max_position_embeddings": _max_context(key)}
            return model_from_mapping(mapping, f"advisor/data/models.yaml: models.{key}", model.name)
    path = Path(name_or_path)
    if path.suffix == ".json" or path.is_dir() or path.exists():
        return read_inference_config(path)
    said = names.unknown_text("preset", name_or_path, sorted({*presets, *training}), "`advisor models` lists them")
    raise AdvisorError(f"model: {said}, and no config.json file of that name")


def model_choices() -> dict[str, str]:
    """Every model a menu offers, id -> name: the inference presets first, then the training presets not among them."""
    choices = {key: entry["_name"] for key, entry in inference_presets().items()}
    for key, model in load_presets().items():
        choices.setdefault(key, model.name)
    return choices


def chosen_inference_model(upload: bytes | None, upload_name: str, preset: str | None) -> InferenceModel | None:
    """The model an uploaded config.json describes (never saved), else the preset picked, else None."""
    if upload is not None:
        return model_from_json_text(upload.decode("utf-8", "replace"), f"upload {upload_name}")
    return resolve_inference_model(preset) if preset else None


def model_from_json_text(text: str, file: str) -> InferenceModel:
    """A ``config.json``'s text (an upload, never saved); a clear error for text that is not a model's config."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise AdvisorError(f"{file}: line {error.lineno}: not valid JSON ({error.msg})") from None
    return model_from_mapping(data, file)
