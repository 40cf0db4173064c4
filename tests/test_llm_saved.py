"""The memory model's count of what a block keeps for its backward pass is what autograd really saves: a tiny
Transformers Llama (bf16 weights, PEFT's fp32 adapters under bf16 autocast, as the Trainer runs them) is run forward
with a hook on every saved tensor, at two depths; their difference per block and token is compared with
:func:`advisor.llm.job_memory.block_saved_values`. QLoRA's 4-bit path is checked on the libraries' real layers, which
run on the CPU: bitsandbytes' ``Linear4bit`` under PEFT's adapters (what Transformers' ``load_in_4bit`` puts in a
model) and torchtune's ``LoRALinear`` and ``FrozenNF4Linear`` over torchao's NF4 tensors (its QLoRA recipes)."""

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


def statistics_bytes(widths: dict[str, int]) -> int:
    """Per token and block, beside the 16-bit values: each RMSNorm's fp32 inverse root (4 bytes) and the attention's
    fp32 log-sum-exp per head (4 bytes each): the count leaves these few bytes out."""
    return 2 * 4 + widths["heads"] * 4


STATISTICS_BYTES = statistics_bytes(WIDTHS)
PLAIN_PARAMETER_TYPES = ("Parameter", "Tensor", "Params4bit")


# torchao's NF4 tensors quantize in blocks of 64 weights and their scalers in blocks of 256: every weight a multiple
# of 16,384 values (no grouped-query attention here: the key and value projections as wide as the queries)
NF4_WIDTHS = {"hidden": 128, "heads": 4, "kv_heads": 4, "head_dim": 32, "intermediate": 384, "vocab": 256}


def _tiny_llama(layers: int, widths: dict[str, int]):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=widths["hidden"],
        num_attention_heads=widths["heads"],
        num_key_value_heads=widths["kv_heads"],
        head_dim=widths["head_dim"],
        intermediate_size=widths["intermediate"],
        vocab_size=widths["vocab"],
        num_hidden_layers=layers,
        max_position_embeddings=128,
        attn_implementation="sdpa",
    )
    return transformers.LlamaForCausalLM(config).to(torch.bfloat16)


def _block_linears(torch, model):
    """(parent module, name, layer) of each linear layer inside the blocks."""
    return [
        (parent, name, child)
        for parent in model.model.layers.modules()
        for name, child in parent.named_children()
        if isinstance(child, torch.nn.Linear)
    ]


def _bitsandbytes_4bit(torch, model) -> None:
    """Each block's linear layer as bitsandbytes' NF4 ``Linear4bit`` (double quantization), quantized on the CPU, as
    Transformers' ``load_in_4bit`` replaces them."""
    bnb = pytest.importorskip("bitsandbytes")
    for parent, name, layer in _block_linears(torch, model):
        quantized = bnb.nn.Linear4bit(
            layer.in_features,
            layer.out_features,
            bias=False,
            compute_dtype=torch.bfloat16,
            quant_type="nf4",
            compress_statistics=True,
        )
        quantized.weight = bnb.nn.Params4bit(
            layer.weight.data, requires_grad=False, quant_type="nf4", compress_statistics=True
        )
        setattr(parent, name, quantized.to("cpu"))


def _torchtune_qlora(torch, model, targets: tuple[str, ...]) -> None:
    """torchtune's QLoRA layers in place of each block's linear layers, as its ``lora_llama3(quantize_base=True)``
    builds them in bf16: ``LoRALinear`` over an NF4 base where an adapter goes, ``FrozenNF4Linear`` elsewhere; only
    the adapters train."""
    peft_modules = pytest.importorskip("torchtune.modules.peft")
    low_precision = pytest.importorskip("torchtune.modules.low_precision")
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # torchtune builds its models under its training dtype
    try:
        for parent, name, layer in _block_linears(torch, model):
            if name in targets:
                new = peft_modules.LoRALinear(
                    layer.in_features, layer.out_features, rank=RANK, alpha=16, dropout=0.0, quantize_base=True
                )
            else:
                new = low_precision.FrozenNF4Linear(layer.in_features, layer.out_features, bias=False)
            setattr(parent, name, new)
    finally:
        torch.set_default_dtype(default)
    for parameter_name, parameter in model.named_parameters():
        parameter.requires_grad = "lora_" in parameter_name


def saved_bytes_per_token(
    layers: int,
    targets: tuple[str, ...] | None,
    frozen_keep_inputs: bool = False,
    base: str = "16-bit",
    widths: dict[str, int] = WIDTHS,
) -> float:
    """Bytes of the tensors saved for the backward pass (parameters and weight casts left out), per token;
    ``frozen_keep_inputs``: every frozen linear layer keeps its input as bitsandbytes' 4-bit layer did before its
    pull request #1270 (``MatMul4Bit`` held its input A for a weight gradient it never computed). ``base``: the
    frozen weights in 16 bits, as bitsandbytes' 4-bit layers under PEFT's adapters, or as torchtune's QLoRA layers
    (its own bf16 adapters, no autocast)."""
    torch = pytest.importorskip("torch")
    peft = pytest.importorskip("peft")
    model = _tiny_llama(layers, widths)
    if base == "torchtune":
        _torchtune_qlora(torch, model, targets or ())
    else:
        if base == "bitsandbytes":
            _bitsandbytes_4bit(torch, model)
        if targets is not None:
            model.enable_input_require_grads()
            model = peft.get_peft_model(
                model, peft.LoraConfig(r=RANK, lora_alpha=16, lora_dropout=0.0, target_modules=list(targets))
            )
    model.train()
    if frozen_keep_inputs:
        _keep_frozen_inputs(torch, model)
    # torchao's NF4 weights are tensors of another kind (no storage of their own); the hook never meets them (not
    # per token), so they are left out here
    parameters = {
        p.untyped_storage().data_ptr() for p in model.parameters() if type(p).__name__ in PLAIN_PARAMETER_TYPES
    }
    saved: dict[int, int] = {}

    def pack(tensor):
        per_token = SEQ in tensor.shape or BATCH * SEQ in tensor.shape
        if per_token and (storage := tensor.untyped_storage()).data_ptr() not in parameters:
            saved.setdefault(storage.data_ptr(), storage.nbytes())
        return tensor

    ids = torch.randint(0, widths["vocab"], (BATCH, SEQ))
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=base != "torchtune")
    with autocast, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
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


def _tiny_model_config(widths: dict[str, int]) -> ModelConfig:
    return ModelConfig(
        "tiny llama",
        layers=DEPTHS[0],
        vocab=widths["vocab"],
        tied_embeddings=False,
        **{k: v for k, v in widths.items() if k != "vocab"},
    )


@pytest.mark.slow  # builds real transformers models with bitsandbytes' and torchtune's 4-bit layers (3-15 s)
@pytest.mark.parametrize("targets", [("q_proj", "v_proj"), ALL_LINEAR])
@pytest.mark.parametrize("library, shares_inputs", [("bitsandbytes", False), ("torchtune", True)])
def test_qlora_layers_keep_what_is_counted(library, shares_inputs, targets):
    """QLoRA's 4-bit layers keep nothing of their input (the frozen weight needs no gradient; each saves only its
    4-bit weight, already counted); the adapters keep theirs: PEFT's a copy each, torchtune's the layer's input itself,
    once per tensor read and not the attention's output again (``shares_adapter_inputs``, torchtune's stack)."""
    shallow, deep = (saved_bytes_per_token(n, targets, base=library, widths=NF4_WIDTHS) for n in DEPTHS)
    measured = (deep - shallow) / (DEPTHS[1] - DEPTHS[0]) - statistics_bytes(NF4_WIDTHS)
    job = TrainingJob(
        _tiny_model_config(NF4_WIDTHS),
        Method.QLORA,
        lora_rank=RANK,
        lora_targets=targets,
        shares_adapter_inputs=shares_inputs,
    )
    counted = 2.0 * memory.block_saved_values(job)
    assert measured == pytest.approx(counted, rel=0.02), (library, targets, measured, counted)
    if shares_inputs:  # the other way of counting would be wrong here
        copied = 2.0 * memory.block_saved_values(replace(job, shares_adapter_inputs=False))
        assert measured < copied


@pytest.mark.slow  # quantizes a real weight with bitsandbytes and torchao on the CPU (2-5 s)
def test_4bit_weights_take_the_counted_bytes():
    """A 4-bit weight's bytes, its blocks' scales with them, as each library stores them: bitsandbytes' NF4 with and
    without double quantization, torchao's NF4 tensor (torchtune's QLoRA: its scalers quantized in blocks of 256)."""
    torch = pytest.importorskip("torch")
    functional = pytest.importorskip("bitsandbytes.functional")
    nf4 = pytest.importorskip("torchao.dtypes.nf4tensor")
    weight = torch.randn(1024, 4096, dtype=torch.bfloat16)

    def nbytes(*tensors) -> int:
        return sum(t.numel() * t.element_size() for t in tensors)

    for double in (False, True):
        packed, state = functional.quantize_4bit(weight, blocksize=64, compress_statistics=double, quant_type="nf4")
        stored = nbytes(packed, state.absmax, state.code)
        if state.nested:
            stored += nbytes(state.state2.absmax, state.state2.code, state.offset)
        assert stored / weight.numel() == pytest.approx(memory.QUANTIZED_BYTES[double], rel=0.002), double
    quantized = nf4.to_nf4(weight)
    parts = ("quantized_data", "quantized_scalers", "quantization_factor", "scaler_mean", "nf4")
    stored = nbytes(*(getattr(quantized, part) for part in parts))
    assert stored / weight.numel() == pytest.approx(memory.QUANTIZED_BYTES[True], rel=0.002)


def test_a_4bit_layer_is_dequantized_one_at_a_time():
    """QLoRA holds one layer's 16-bit copy beside its 4-bit weights (the largest: the MLP's), nothing in LoRA."""
    model = ModelConfig(
        "m", layers=4, hidden=4096, heads=32, kv_heads=8, intermediate=14336, vocab=1000, tied_embeddings=False
    )
    qlora, lora = (TrainingJob(model, method) for method in (Method.QLORA, Method.LORA))
    assert memory.dequantized_bytes(qlora) == 2.0 * 4096 * 14336
    assert memory.dequantized_bytes(lora) == 0.0
    held = memory.predict(qlora, True, factor=1.0, overhead_gb=0.0).weights_gb * memory.GB
    assert held == pytest.approx(sum(memory.static_bytes(qlora, True)[:1]) + 2.0 * 4096 * 14336)
