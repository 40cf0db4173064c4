"""Count the operations a language-model training step launches, on a real step (writes
``advisor/data/llm_operations.yaml``).

A step's kernels do not depend on the model's width, only on its structure: per block, the same norms, projections,
rotary embedding, attention, MLP and, with LoRA, the adapters' dropout, down and up projections and sums, in the
forward pass, the backward pass and, with activation checkpointing, the recomputed forward. So they are counted on
a Llama-structured model (transformers' ``LlamaForCausalLM``) of tiny width at two depths, its bf16 weights trained
with AdamW, LoRA by PEFT on every linear layer; the difference of the two counts is one block's, the rest is the
embedding, the last norm, the output layer and the loss. Counted as ``advisor.track.torch`` counts a tracked job's
step (:class:`advisor.track.torch_run.StepCounter`: every dispatched operation that launches a kernel, views left
out), on this machine's CPU: a fused kernel a GPU runs instead (FlashAttention) is one operation either way.

    python scripts/count_llm_operations.py            # print the counts
    python scripts/count_llm_operations.py --write    # and write advisor/data/llm_operations.yaml

Needs torch, transformers and peft (the test extra).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.llm import operations  # noqa: E402

DEPTHS = (2, 4)  # the two depths counted: their difference is two blocks' operations


def count_step(layers: int, method: str, checkpointing: bool) -> int:
    """The operations of one micro-batch's forward and backward pass (a real step of a tiny Llama)."""
    import torch  # only the counting needs the frameworks
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    from advisor.track.torch_run import StepCounter

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_attention_heads=4,
        num_key_value_heads=4,
        num_hidden_layers=layers,
        vocab_size=256,
        max_position_embeddings=512,
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if method == "lora":
        model.enable_input_require_grads()
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules="all-linear"))
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    ids = torch.randint(0, config.vocab_size, (1, 64))
    for _ in range(2):  # warm: the first steps create the optimizer's states and the autograd caches
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    counter = StepCounter(model)
    with counter:
        model(input_ids=ids, labels=ids).loss.backward()
    return counter.operations


def counts() -> dict:
    """The file's content: per method and checkpointing, operations per block and the rest, and the versions."""
    import peft
    import torch
    import transformers

    found = {}
    for method in operations.COUNTED_METHODS:
        for checkpointing in (True, False):
            shallow, deep = (count_step(depth, method, checkpointing) for depth in DEPTHS)
            per_block = (deep - shallow) / (DEPTHS[1] - DEPTHS[0])
            found.setdefault(method, {})[operations.checkpointing_key(checkpointing)] = {
                "per_block": int(per_block),
                "rest": int(shallow - DEPTHS[0] * per_block),
            }
    return {
        "operations_version": operations.OPERATIONS_VERSION,
        "counted_with": f"torch {torch.__version__}, transformers {transformers.__version__}, peft "
        f"{peft.__version__}: LlamaForCausalLM (bf16, AdamW), LoRA rank 8 on every linear "
        f"layer, blocks {DEPTHS[0]} and {DEPTHS[1]} deep, one micro-batch's forward and "
        "backward, on a CPU",
        "per_micro_batch": found,
    }


def main(argv: list[str]) -> int:
    data = counts()
    text = yaml.safe_dump(data, sort_keys=False, width=120)
    print(text)
    if "--write" in argv:
        head = "# Written by scripts/count_llm_operations.py --write (do not edit: re-run it).\n"
        (ROOT / "advisor" / "data" / operations.OPERATIONS_FILE).write_text(head + text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
