"""A GGUF file's header as an inference model: its metadata mapped to config.json's keys, and its weights' exact bytes
from its tensors' types (the ``gguf`` package reads the header and tensor table; the weights are never loaded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from advisor.infer.architecture import InferenceModel, model_from_mapping
from advisor.infer.engines import Format

# GGUF's architecture names where config.json's model_type differs
MODEL_TYPES = {"gemma3": "gemma3_text", "qwen3moe": "qwen3_moe", "qwen2moe": "qwen2_moe", "deepseek2": "deepseek_v3"}
# config.json key <- the GGUF key after "<architecture>."
KEYS = {
    "num_hidden_layers": "block_count",
    "hidden_size": "embedding_length",
    "num_attention_heads": "attention.head_count",
    "num_key_value_heads": "attention.head_count_kv",
    "intermediate_size": "feed_forward_length",
    "max_position_embeddings": "context_length",
    "sliding_window": "attention.sliding_window",
    "num_local_experts": "expert_count",
    "num_experts_per_tok": "expert_used_count",
    "moe_intermediate_size": "expert_feed_forward_length",
    "n_shared_experts": "expert_shared_count",
    "first_k_dense_replace": "leading_dense_block_count",
    "kv_lora_rank": "attention.kv_lora_rank",
    "q_lora_rank": "attention.q_lora_rank",
    "vocab_size": "vocab_size",
}
NOT_DESCRIBED_PREFIXES = ("ssm.", "wkv.", "shortconv.")  # state-space, RWKV and convolution layers


def _value(field: Any) -> Any:
    value = field.contents()
    return value


def read_gguf(path: str | Path) -> tuple[InferenceModel, Format]:
    """The model a GGUF file holds and its weights' format (bits a weight, from the tensors' own sizes)."""
    try:
        import gguf
    except ImportError:
        raise AdvisorError("reading a GGUF file needs the gguf package: pip install 'advisor[all]'") from None
    path = Path(path)
    try:
        reader = gguf.GGUFReader(path)
    except (OSError, ValueError) as error:
        raise AdvisorError(f"{path}: not a readable GGUF file ({error})") from None
    fields = {name: _value(field) for name, field in reader.fields.items() if not name.startswith("GGUF.")}
    arch = fields.get("general.architecture")
    if not isinstance(arch, str):
        raise AdvisorError(f"{path}: general.architecture: missing; not a model's GGUF file")
    for name in fields:
        if name.startswith(f"{arch}.") and name[len(arch) + 1 :].startswith(NOT_DESCRIBED_PREFIXES):
            raise AdvisorError(
                f"{path}: {name}: state-space or recurrent layers, whose cache is not described; "
                "refused rather than estimated as another kind"
            )
    config: dict[str, Any] = {"model_type": MODEL_TYPES.get(arch, arch)}
    for key, suffix in KEYS.items():
        value = fields.get(f"{arch}.{suffix}")
        if isinstance(value, list):
            raise AdvisorError(f"{path}: {arch}.{suffix}: differs per layer ({value[:4]}...), not described")
        if value is not None:
            config[key] = int(value)
    tokens = fields.get("tokenizer.ggml.tokens")
    if "vocab_size" not in config and isinstance(tokens, list):
        config["vocab_size"] = len(tokens)
    _head_sizes(config, fields, arch)
    names = {t.name for t in reader.tensors}
    config["tie_word_embeddings"] = "output.weight" not in names
    config["_source"] = f"{path} (the GGUF header, read from disk)"
    model = model_from_mapping(config, str(path), str(fields.get("general.name") or path.stem))
    size = sum(int(t.n_bytes) for t in reader.tensors)
    types = sorted({t.tensor_type.name for t in reader.tensors})
    bits = size * 8 / max(model.parameters, 1)
    source = f"{path.name}: {size / 1e9:.2f} GB of tensors ({', '.join(types)}), {bits:.2f} bits a counted weight"
    return model, Format(f"gguf: {path.name} ({', '.join(types)})", bits, "file", (), source)


def _head_sizes(config: dict[str, Any], fields: dict[str, Any], arch: str) -> None:
    """The head size (key_length), and a latent layer's rope and value sizes."""
    key = fields.get(f"{arch}.attention.key_length")
    value = fields.get(f"{arch}.attention.value_length")
    if "kv_lora_rank" in config:
        rope = int(fields.get(f"{arch}.rope.dimension_count") or 0)
        config.update(qk_rope_head_dim=rope, qk_nope_head_dim=int(key or 0) - rope, v_head_dim=int(value or 0))
    elif key is not None:
        config["head_dim"] = int(key)
