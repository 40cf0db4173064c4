"""The memory model's count of what a block keeps for its backward pass is what autograd really saves: a tiny
Transformers Llama (bf16 weights, PEFT's fp32 adapters under bf16 autocast, as the Trainer runs them) is run forward
with a hook on every saved tensor, at two depths; their difference per block and token is compared with
:func:`advisor.llm.job_memory.block_saved_values`."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.llm import job_memory as memory
from advisor.llm.config import ModelConfig, config_from_mapping
from advisor.llm.job import ALL_LINEAR, Method, TrainingJob

# every width distinct, so a saved tensor's width says what it is; the sequence (40) and the tokens (80) appear in no
# weight's shape, so the adapters' weight casts (autocast's cache) are told apart from the activations
WIDTHS = {"hidden": 96, "heads": 4, "kv_heads": 2, "head_dim": 16, "intermediate": 160, "vocab": 256}
BATCH, SEQ, RANK = 2, 40, 8
DEPTHS = (2, 4)
# per token and block, beside the 16-bit values: each RMSNorm's fp32 inverse root (4 bytes) and the attention's fp32
# log-sum-exp per head (4 bytes each): the count leaves these few bytes out
STATISTICS_BYTES = 2 * 4 + WIDTHS["heads"] * 4


def saved_bytes_per_token(layers: int, targets: tuple[str, ...] | None, frozen_keep_inputs: bool = False) -> float:
    """Bytes of the tensors saved for the backward pass (parameters and weight casts left out), per token;
    ``frozen_keep_inputs``: every frozen linear layer keeps its input as bitsandbytes' 4-bit layer did before its
    pull request #1270 (``MatMul4Bit`` held its input A for a weight gradient it never computed)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=WIDTHS["hidden"],
        num_attention_heads=WIDTHS["heads"],
        num_key_value_heads=WIDTHS["kv_heads"],
        head_dim=WIDTHS["head_dim"],
        intermediate_size=WIDTHS["intermediate"],
        vocab_size=WIDTHS["vocab"],
        num_hidden_layers=layers,
        max_position_embeddings=128,
        attn_implementation="sdpa",
    )
    model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    if targets is not None:
        model.enable_input_require_grads()
        model = peft.get_peft_model(
            model, peft.LoraConfig(r=RANK, lora_alpha=16, lora_dropout=0.0, target_modules=list(targets))
        )
    model.train()
    if frozen_keep_inputs:
        _keep_frozen_inputs(torch, model)
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        per_token = SEQ in tensor.shape or BATCH * SEQ in tensor.shape
        if per_token and storage.data_ptr() not in parameters:
            saved.setdefault(storage.data_ptr(), storage.nbytes())
        return tensor

    ids = torch.randint(0, WIDTHS["vocab"], (BATCH, SEQ))
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=ids, labels=ids)
    return sum(saved.values()) / (BATCH * SEQ)


def _keep_frozen_inputs(torch, model) -> None:
    """Each frozen linear layer's forward through a function that keeps its input, as the old 4-bit layer did."""

    class KeepsInput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, inputs, weight):
            ctx.save_for_backward(inputs, weight)
            return torch.nn.functional.linear(inputs, weight)

        @staticmethod
        def backward(ctx, grad):
            _, weight = ctx.saved_tensors
            return grad @ weight, None

    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and not module.weight.requires_grad:
            module.forward = lambda inputs, layer=module: KeepsInput.apply(inputs, layer.weight)


@pytest.mark.slow  # builds real transformers models (PyTorch, transformers and PEFT imported: 3-10 s)
def test_old_4bit_layers_keep_the_inputs_counted():
    """QLoRA measured with bitsandbytes before July 2024 (``keeps_4bit_inputs``): each frozen layer's input kept
    adds, per block, both norms' outputs and the down projection's input (the output projection's is the attention's
    output, kept already)."""
    extra = []
    for keep in (False, True):
        shallow, deep = (saved_bytes_per_token(layers, ("q_proj", "v_proj"), keep) for layers in DEPTHS)
        extra.append((deep - shallow) / (DEPTHS[1] - DEPTHS[0]))
    model = ModelConfig(
        "tiny llama",
        layers=DEPTHS[0],
        vocab=WIDTHS["vocab"],
        tied_embeddings=False,
        **{k: v for k, v in WIDTHS.items() if k != "vocab"},
    )
    job = TrainingJob(model, Method.QLORA, lora_rank=RANK, lora_targets=("q_proj", "v_proj"))
    counted = 2.0 * (memory.block_saved_values(replace(job, keeps_4bit_inputs=True)) - memory.block_saved_values(job))
    assert counted > 0 and extra[1] - extra[0] == pytest.approx(counted, rel=0.02), (extra, counted)


@pytest.mark.slow  # builds real transformers models (PyTorch, transformers and PEFT imported: 3-10 s)
@pytest.mark.parametrize(
    "method, targets", [(Method.FULL, None), (Method.LORA, ALL_LINEAR), (Method.LORA, ("q_proj", "v_proj"))]
)
def test_a_blocks_saved_tensors_are_the_counted_ones(method, targets):
    shallow, deep = (saved_bytes_per_token(layers, targets) for layers in DEPTHS)
    measured = (deep - shallow) / (DEPTHS[1] - DEPTHS[0]) - STATISTICS_BYTES
    model = ModelConfig(
        "tiny llama",
        layers=DEPTHS[0],
        vocab=WIDTHS["vocab"],
        tied_embeddings=False,
        **{k: v for k, v in WIDTHS.items() if k != "vocab"},
    )
    job = TrainingJob(model, method, lora_rank=RANK, lora_targets=targets or ALL_LINEAR)
    counted = 2.0 * memory.block_saved_values(job)
    assert measured == pytest.approx(counted, rel=0.02), (method, targets, measured, counted)


def test_frozen_layers_keep_less_and_compiling_keeps_less_still():
    """LoRA on two projections keeps less than full fine-tuning (the frozen MLP keeps no inputs), LoRA on every
    linear layer more (each adapter its own copy of its input); a compiled job less than the eager one; a LayerNorm
    model sharing one norm between attention and MLP (Phi) less than the same shape with two RMSNorms."""
    model = ModelConfig(
        "m", layers=4, hidden=2048, heads=16, kv_heads=16, intermediate=8192, vocab=1000, tied_embeddings=False
    )
    full, every, two = (
        TrainingJob(model, method, lora_targets=targets)
        for method, targets in (
            (Method.FULL, ALL_LINEAR),
            (Method.LORA, ALL_LINEAR),
            (Method.LORA, ("q_proj", "v_proj")),
        )
    )
    values = [memory.block_saved_values(job) for job in (full, every, two)]
    assert values[2] < values[0] < values[1]
    for job in (full, every, two):
        assert memory.block_saved_values(replace(job, compiled=True)) < memory.block_saved_values(job)
    phi = replace(model, gated_mlp=False, layer_norm=True, shared_norm=True)
    plain = replace(model, gated_mlp=False)
    assert memory.block_saved_values(TrainingJob(phi, Method.FULL)) < memory.block_saved_values(
        TrainingJob(plain, Method.FULL)
    )


@pytest.mark.parametrize(
    "config, layer_norm, shared_norm",
    [
        ({"model_type": "phi", "hidden_act": "gelu_new"}, True, True),
        ({"model_type": "gpt_neox", "use_parallel_residual": True}, True, False),
        ({"model_type": "falcon", "parallel_attn": True}, True, True),
        ({"model_type": "falcon", "parallel_attn": True, "new_decoder_architecture": True}, True, False),
        ({"model_type": "llama"}, False, False),
    ],
)
def test_a_config_json_says_its_norms(config, layer_norm, shared_norm):
    shape = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100}
    model = config_from_mapping({**shape, **config}, "config.json")
    assert (model.layer_norm, model.shared_norm) == (layer_norm, shared_norm)


def test_transformer_engine_blocks_keep_less_and_fp8_less_still():
    """NeMo's Transformer Engine modules keep the norms' outputs and the linear layers' inputs once each, in FP8 under
    fp8: less than eager PyTorch's full fine-tuning, and fp8 less than bf16."""
    model = ModelConfig(
        "m", layers=4, hidden=8192, heads=64, kv_heads=8, intermediate=28672, vocab=32000, tied_embeddings=False
    )
    eager = TrainingJob(model, Method.FULL)
    engine = replace(eager, transformer_engine=True)
    assert (
        memory.block_saved_values(replace(engine, fp8=True))
        < memory.block_saved_values(engine)
        < memory.block_saved_values(eager)
    )
