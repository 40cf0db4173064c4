"""A decoder-only transformer as its config describes it: the presets shipped in ``advisor/data/models.yaml`` and a
user's own Hugging Face ``config.json`` read from disk (never downloaded).

The numbers that decide a training job's work and memory are the layers, the hidden size, the attention heads and
key-value heads (grouped-query attention), the head size, the MLP's inner size (gated: SwiGLU/GeGLU, three matrices;
plain: two), the vocabulary and whether the output layer shares the embedding's weights. Pure; the only I/O is
:func:`read_config_json` and :func:`load_presets`, which read one file each.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.format import names
from advisor.store.parse import safe_load

MODELS_FILE = "models.yaml"
MODELS_VERSION = 1


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a decoder-only transformer (Llama, Mistral, Qwen, Gemma, Phi, MPT...)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int  # the MLP's inner size (one branch of a gated MLP)
    vocab: int
    tied_embeddings: bool
    head_dim: int | None = None  # hidden / heads unless the config says otherwise (Gemma, Qwen3)
    gated_mlp: bool = True  # SwiGLU / GeGLU (gate, up and down); False: up and down only (GPT-2, Phi-2, MPT)
    layer_norm: bool = False  # LayerNorm (keeps its 16-bit input); False: RMSNorm, computed on an fp32 upcast it keeps
    shared_norm: bool = False  # attention and MLP side by side from one norm (Phi-1.5/2, GPT-J, Falcon 7B, Cohere)
    parameters_b: float | None = None  # the size the model card states (a preset's self-check)
    source: str = ""

    @property
    def head_size(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def attention_width(self) -> int:
        """The queries' (and the attention output's) width: heads x head size."""
        return self.heads * self.head_size

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_size

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """Each linear layer of a block, (inputs, outputs), by the names PEFT's ``target_modules`` use."""
        shapes = {
            "q_proj": (self.hidden, self.attention_width),
            "k_proj": (self.hidden, self.kv_width),
            "v_proj": (self.hidden, self.kv_width),
            "o_proj": (self.attention_width, self.hidden),
            "up_proj": (self.hidden, self.intermediate),
            "down_proj": (self.intermediate, self.hidden),
        }
        if self.gated_mlp:
            shapes["gate_proj"] = (self.hidden, self.intermediate)
        return shapes

    @property
    def block_linear_parameters(self) -> int:
        return sum(i * o for i, o in self.linear_shapes().values())

    @property
    def embedding_parameters(self) -> int:
        """The input embedding, and the output layer when it has its own weights."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def parameters(self) -> int:
        """Every weight: the blocks' linear layers and norms, the embeddings, the final norm (biases left out: a
        fraction of a percent)."""
        return self.layers * (self.block_linear_parameters + 2 * self.hidden) + self.embedding_parameters + self.hidden

    @property
    def matmul_parameters(self) -> int:
        """The weights every token multiplies through: the blocks' linear layers and the output layer (the input
        embedding is a lookup)."""
        return self.layers * self.block_linear_parameters + self.vocab * self.hidden


# config.json's keys for each field, in the order tried: Llama/Mistral/Qwen/Gemma/Phi-3 first, then GPT-2, MPT.
CONFIG_KEYS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    # (field, keys, required)
    ("layers", ("num_hidden_layers", "n_layer", "n_layers"), True),
    ("hidden", ("hidden_size", "n_embd", "d_model"), True),
    ("heads", ("num_attention_heads", "n_head", "n_heads"), True),
    ("kv_heads", ("num_key_value_heads", "multi_query_group_num"), False),
    ("intermediate", ("intermediate_size", "n_inner", "ffn_hidden_size"), False),
    ("vocab", ("vocab_size", "padded_vocab_size"), True),
    ("head_dim", ("head_dim",), False),
)
GATED_TYPES = frozenset(
    {
        "llama",
        "mistral",
        "qwen2",
        "qwen3",
        "gemma",
        "gemma2",
        "gemma3_text",
        "phi3",
        "olmo",
        "olmo2",
        "granite",
        "cohere",
        "starcoder2_gated",
        "internlm2",
        "deepseek",
        "yi",
    }
)
PLAIN_TYPES = frozenset(
    {"gpt2", "gpt_neox", "phi", "mpt", "falcon", "gptj", "opt", "bloom", "starcoder2", "gpt_bigcode", "stablelm"}
)
# LayerNorm's model types (the rest normalize with RMSNorm), and those whose attention and MLP read one norm's output
LAYER_NORM_TYPES = PLAIN_TYPES | {"olmo", "cohere"}
SHARED_NORM_TYPES = frozenset({"phi", "gptj", "cohere"})
MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
# Fields of a config.json that change the blocks into something the model does not describe (its work and memory
# are a dense decoder-only transformer's): the field, and what it makes the model.
NOT_MODELLED_FIELDS = {
    "ssm_cfg": "state-space (Mamba) blocks",
    "state_size": "state-space (Mamba) blocks",
    "mamba_d_state": "state-space (Mamba) layers beside attention",
    "attn_layer_period": "a hybrid of attention and state-space layers (Jamba)",
    "layers_block_type": "a hybrid of block types",
    "linear_attn_config": "linear-attention layers",
    "attention_layer_indices": "attention in some layers only",
}


def _number(data: dict[str, Any], keys: tuple[str, ...], file: str, field: str) -> int | None:
    for key in keys:
        if key in data and data[key] is not None:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise AdvisorError(
                    f"{file}: {key}: must be a whole number of 1 or more (the model's {field}), got {value!r}"
                )
            return value
    return None


def _refuse_unmodelled(data: dict, file: str) -> None:
    """A clear error for a model the training model does not describe: encoder-decoder, mixture of experts..."""
    if data.get("is_encoder_decoder"):
        raise AdvisorError(f"{file}: an encoder-decoder model (T5, BART): only decoder-only transformers are modelled")
    for key, what in NOT_MODELLED_FIELDS.items():
        if data.get(key) not in (None, False, 0, [], {}):
            raise AdvisorError(
                f"{file}: {key}: {what}, which the memory and work model does not describe (only "
                "dense decoder-only transformers)"
            )
    for key in MOE_KEYS:
        if (data.get(key) or 0) > 1:
            raise AdvisorError(
                f"{file}: {key} = {data[key]}: a mixture-of-experts model; its per-token work and "
                "memory are not modelled yet (only dense decoder-only transformers)"
            )


def config_from_mapping(data: Any, file: str, name: str | None = None) -> ModelConfig:
    """A model from a Hugging Face ``config.json``'s contents (``file`` names it in errors); a clear error for a
    missing or wrong field, and for models this model cannot describe (mixture of experts, encoder-decoder)."""
    if not isinstance(data, dict):
        raise AdvisorError(f"{file}: not a model configuration (a JSON object with num_hidden_layers, hidden_size...)")
    if data.get("text_config") and isinstance(data["text_config"], dict):  # a multimodal model: its language model
        data = {**data["text_config"], "_name_or_path": data.get("_name_or_path")}
    _refuse_unmodelled(data, file)
    values: dict[str, Any] = {}
    for field, keys, required in CONFIG_KEYS:
        value = _number(data, keys, file, field)
        if value is None and required:
            raise AdvisorError(f"{file}: none of {', '.join(keys)}: the model's {field} is missing")
        values[field] = value
    model_type = str(data.get("model_type", "")).lower()
    expansion = data.get("expansion_ratio")  # MPT
    if values["intermediate"] is None:
        if isinstance(expansion, int | float) and expansion > 0:
            values["intermediate"] = int(expansion * values["hidden"])
        else:
            values["intermediate"] = 4 * values["hidden"]  # GPT-2's n_inner: null means 4 x n_embd
    if model_type in GATED_TYPES:
        gated = True
    elif model_type in PLAIN_TYPES:
        gated = False
    else:
        act = str(data.get("hidden_act") or data.get("activation_function") or "").lower()
        gated = act in {"silu", "swiglu", "gelu_pytorch_tanh"} and "n_embd" not in data
    if values["hidden"] % values["heads"] and values["head_dim"] is None:
        raise AdvisorError(
            f"{file}: hidden size {values['hidden']} is not a multiple of {values['heads']} heads, and "
            "no head_dim is given"
        )
    kv = values["kv_heads"] or values["heads"]
    if values["heads"] % kv:
        raise AdvisorError(f"{file}: {values['heads']} attention heads are not a multiple of {kv} key-value heads")
    tied = data.get("tie_word_embeddings")
    # Falcon's 7B: attention and MLP in parallel from one norm; its newer architecture (40B, 180B) has two
    shared = model_type in SHARED_NORM_TYPES or (
        model_type == "falcon" and bool(data.get("parallel_attn", True)) and not data.get("new_decoder_architecture")
    )
    return ModelConfig(
        name=name or str(data.get("_name_or_path") or Path(file).parent.name or "model"),
        layers=values["layers"],
        hidden=values["hidden"],
        heads=values["heads"],
        kv_heads=kv,
        intermediate=values["intermediate"],
        vocab=values["vocab"],
        tied_embeddings=bool(tied) if tied is not None else model_type in {"gpt2", "mpt", "gemma", "gemma2"},
        head_dim=values["head_dim"],
        gated_mlp=gated,
        layer_norm=model_type in LAYER_NORM_TYPES,
        shared_norm=shared,
        source=f"{file} (read from disk)",
    )


def chosen_training_model(upload: bytes | None, upload_name: str, preset: str | None) -> tuple[ModelConfig | None, str]:
    """The model an uploaded config.json describes (never saved), else the preset picked: (model, the problem that
    refused the upload, '' where none did)."""
    if upload is None:
        return (load_presets()[preset], "") if preset else (None, "")
    try:
        return config_from_mapping(json.loads(upload.decode("utf-8")), f"upload {upload_name}"), ""
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return None, f"upload {upload_name}: not valid JSON ({error})"
    except AdvisorError as error:
        return None, str(error)


def read_config_json(path: str | Path) -> ModelConfig:
    """A user's own Hugging Face ``config.json`` (or the folder that holds it), read from disk."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise AdvisorError(f"{path}: cannot read the model's config ({error.strerror or error})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise AdvisorError(f"{path}: line {error.lineno}: not valid JSON ({error.msg})") from None
    return config_from_mapping(data, str(path))


_FIELDS = {f.name for f in fields(ModelConfig)}


@lru_cache(maxsize=1)
def load_presets() -> dict[str, ModelConfig]:
    """The shipped presets, by id (``advisor/data/models.yaml``)."""
    text = resources.files("advisor").joinpath("data", MODELS_FILE).read_text(encoding="utf-8")
    data = safe_load(text)
    if data.get("models_version") != MODELS_VERSION:
        raise AdvisorError(f"advisor/data/{MODELS_FILE}: models_version must be {MODELS_VERSION}")
    presets = {}
    for key, entry in data["models"].items():
        unknown = set(entry) - _FIELDS
        if unknown:
            raise AdvisorError(f"advisor/data/{MODELS_FILE}: models.{key}: unknown field(s) {sorted(unknown)}")
        presets[key] = ModelConfig(**entry)
    return presets


def resolve(name_or_path: str) -> ModelConfig:
    """A preset by id or name (case and spaces ignored), else a ``config.json`` path (or its folder)."""
    presets = load_presets()
    wanted = name_or_path.strip().lower().replace(" ", "-")
    for key, model in presets.items():
        if wanted in (key, model.name.lower().replace(" ", "-")):
            return model
    path = Path(name_or_path)
    if path.suffix == ".json" or path.is_dir() or path.exists():
        return read_config_json(path)
    said = names.unknown_text("preset", name_or_path, presets, "`advisor models` lists them")
    raise InputError("model_config", f"{said}, and no config.json file of that name")


def model_rows(presets: dict[str, ModelConfig]) -> list[dict[str, Any]]:
    """``advisor models --json``: one object per preset, its config's numbers and the size they add up to."""
    return [
        {"id": key, **{f.name: getattr(m, f.name) for f in fields(ModelConfig)}, "counted_parameters": m.parameters}
        for key, m in presets.items()
    ]


def size_text(model: ModelConfig) -> str:
    """'8.03 B parameters', from the config's numbers."""
    billions = model.parameters / 1e9
    return f"{billions:.3g} B parameters" if billions >= 0.1 else f"{model.parameters / 1e6:.3g} M parameters"


def relative_size_error(model: ModelConfig) -> float | None:
    """How far the config's counted parameters are from the stated size (log), None when none is stated."""
    return math.log(model.parameters / (model.parameters_b * 1e9)) if model.parameters_b else None
