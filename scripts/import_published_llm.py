"""Turn the published language-model measurements (shared/data/published_2026.yaml) into what the advisor reads:

- ``advisor/data/llm_memory_peaks.yaml``: every published single-GPU peak memory whose job the model can describe
  (a preset model; the method, sequence length, micro-batch, checkpointing and precision the source states), the
  evidence :mod:`advisor.llm.validation` fits and checks the memory model on;
- ``profiles/published-llm-2026.yaml``: a published collection of the bf16 training throughputs (tokens/s per GPU)
  of those jobs, which the calibration and ``crossval`` take like any published result.

    python scripts/import_published_llm.py [../shared/data/published_2026.yaml]

What each source's rows mean is written once below (``RULES``), with where the settings come from. Rows left out,
and why: FP8/MXFP8/NVFP4 (the catalog's peaks are 16-bit: a plain PyTorch job runs bf16), mixture-of-experts models,
several GPUs sharing one model's memory (FSDP/ZeRO/tensor parallel: a peak per GPU of a sharded job), GPUs the
catalog lacks, models without a preset, LLaMA-Factory's estimates, diffusion, and memory of runs with eager attention
(its sequence x sequence scores are not modelled: the rows with FlashAttention-2 are kept). Each peak names its
training stack (advisor/data/stacks.yaml) and the choices its source states where they differ from that stack's.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.llm import job_memory as memory  # noqa: E402
from advisor.llm.config import load_presets  # noqa: E402
from advisor.llm.job import ALL_LINEAR, TrainingJob, job_from_options  # noqa: E402
from advisor.store import collection  # noqa: E402
from advisor.store.catalog import DEFAULT_CATALOG, load_catalog  # noqa: E402

DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "published_2026.yaml"
PEAKS_OUT = ROOT / "advisor" / "data" / "llm_memory_peaks.yaml"
COLLECTION_OUT = ROOT / "profiles" / "published-llm-2026.yaml"
GPU_MEMORY_GB = {
    "a100-80gb-sxm4": 80,
    "a100-40gb-sxm4": 40,
    "h100-sxm": 80,
    "a10g": 24,
    "h200-sxm": 141,
    "l40s": 48,
    "rtx-4090": 24,
    "t4": 16,
}  # the cards' memory (NVIDIA datasheets; AWS G5: A10G 24 GB)
GPUS = {
    "A100 SXM 80GB": "a100-80gb-sxm4",
    "A100 SXM 40GB": "a100-40gb-sxm4",
    "H100 SXM 80GB": "h100-sxm",
    "A10G": "a10g",
    "H200 SXM 141GB": "h200-sxm",
    "L40S": "l40s",
    "RTX 4090": "rtx-4090",
    "T4": "t4",
}
MODELS = {  # the words of a workload's name -> the preset
    "phi-1.5": "phi-1.5",
    "Llama 2 7B": "llama-2-7b",
    "Llama 2 13B": "llama-2-13b",
    "llama-2-7b": "llama-2-7b",
    "llama-3-8b": "llama-3-8b",
    "llama-3.1-8b": "llama-3.1-8b",
    "mistral-7b": "mistral-7b",
    "gemma-7b": "gemma-7b",
    "gemma2-9b": "gemma-2-9b",
    "llama-3.2-1b": "llama-3.2-1b",
    "llama-3.2-3b": "llama-3.2-3b",
    "phi-2": "phi-2",
    "tiny-llama": "tinyllama-1.1b",
    "Qwen-1.8B": "qwen-1.8b",
    "Qwen-7B": "qwen-7b",
    "Qwen-14B": "qwen-14b",
    "Qwen-72B": "qwen-72b",
    "MPT-125m": "mpt-125m",
    "MPT-350m": "mpt-350m",
    "MPT-760m": "mpt-760m",
    "MPT-1b": "mpt-1b",
    "MPT-3b": "mpt-3b",
    "MPT-7b": "mpt-7b",
    "MPT-13b": "mpt-13b",
    "MPT-30b": "mpt-30b",
    "Llama3 8B": "llama-3.1-8b",
    "Qwen2.5 7B": "qwen2.5-7b",
    "LLaMA2-7B": "llama-2-7b",
    "Llama 3.1 8B": "llama-3.1-8b",
    "Llama 3.3 70B": "llama-3.3-70b",
}
LITGPT_TABLE = (
    "LitGPT 2023 resource table: finetune_lora defaults of LitGPT 8641822 (LoRA rank 8 on the query "
    "and value weights, dropout 0.05), bf16-true (weights, gradients and AdamW states in bf16), no "
    "activation checkpointing; sequence length taken as the Alpaca set's longest example (1,304 tokens, "
    "as the source notes: the peak comes from the longest batch); QLoRA's 16-bit weights never all on "
    "the GPU at once (the 13B's QLoRA peaks, 22.55 and 23.14 GB, are below its 26.0 GB of 16-bit "
    "weights) and bitsandbytes' 4-bit layers kept their inputs (fixed in 2024): the stack's past "
    "version litgpt-2023, fitted apart"
)
LITGPT_HUB = (
    "LitGPT config hub: config_hub/finetune/<model>/{lora,qlora,full}.yaml (lora_r 32 on query and "
    "value, precision bf16-true, max_seq_length 512; read at Lightning-AI/litgpt 08bf15dd76); QLoRA on "
    "bitsandbytes 0.42.0, the one LitGPT's finetune/lora.py then supported (c16c72c04c: 'LitGPT only "
    "supports bitsandbytes v0.42.0'), whose 4-bit layers kept their inputs (fixed in 0.43.2)"
)
FACTORY = (
    "LLaMA-Factory's benchmark in Unsloth's README: LoRA rank 8 on q_proj and v_proj (LLaMA-Factory's "
    "lora_target default then), batch 4, gradient accumulation 2, max length 1,024, gradient checkpointing "
    "on (LLaMA-Factory's default); the A100's variant is not stated (40 GB taken); the rows without "
    "FlashAttention-2 left out"
)
MAX_CONTEXT = (
    "Unsloth's README table of the longest context that fits a VRAM budget: QLoRA rank 32 on every "
    "linear layer, batch 1, sequences padded to the length; the peak is the budget (an upper bound of "
    "the run's own peak) at that length, in decimal GB (a card's stated GB are binary: 8 GB = 8.59e9 "
    "bytes); Hugging Face + FA2 with gradient checkpointing on"
)
QWEN = (
    "Qwen v1 finetune.py as its README's profiling states: LoRA rank 64 on c_attn, c_proj, w1 and w2 (every "
    "linear layer), batch size 1 and gradient accumulation 8, gradient checkpointing on, bf16 mixed precision "
    "(fp32 master weights and AdamW), FlashAttention-2; Q-LoRA on the Int4 (GPTQ) model; the Transformers "
    "Trainer over Qwen's own modelling code, whose cross-entropy runs on the bf16 logits (no fp32 copy): "
    "the past version qwen-v1-finetune of the hf-trainer stack, fitted apart"
)


def _litgpt_table(row: dict) -> dict | None:
    method = row["method"]
    if row["gpus"] != 1 or method.startswith("Adapter"):
        return None
    kind = "qlora" if method.startswith("QLoRA") else "lora"
    return {
        "method": kind,
        "seq_len": 1304,
        "lora_rank": 8,
        "lora_targets": "q_proj,v_proj",
        "pure_16bit": True,
        "checkpointing": False,
        "stack": "litgpt-2023",
        "settings": LITGPT_TABLE,
    }


def _litgpt_hub(row: dict) -> dict | None:
    if row["gpus"] != 1:
        return None
    kind = {"LoRA": "lora", "QLoRA": "qlora", "full fine-tuning": "full"}.get(row["method"])
    if kind is None:
        return None
    # its QLoRA ran the bitsandbytes LitGPT then required (0.42.0), whose 4-bit layers kept their inputs
    old_4bit = {"keeps_4bit_inputs": True} if kind == "qlora" else {}
    return {
        "method": kind,
        "seq_len": 512,
        "lora_rank": 32,
        "lora_targets": "q_proj,v_proj",
        "pure_16bit": True,
        "checkpointing": False,
        "stack": "litgpt",
        **old_4bit,
        "settings": LITGPT_HUB,
    }


def _qwen(row: dict) -> dict | None:
    kind = {"LoRA": "lora", "Q-LoRA": "qlora", "Full-parameter": "full"}.get(row["method"])
    if kind is None or row["gpus"] != 1:  # LoRA (emb) also trains the embeddings: not a method modelled here
        return None
    return {
        "method": kind,
        "seq_len": row["seq_len"],
        "lora_rank": 64,
        "lora_targets": ",".join(ALL_LINEAR),
        "pure_16bit": False,
        "checkpointing": True,
        "stack": "qwen-v1-finetune",
        "grad_accum": 8,
        "settings": QWEN,
    }


def _llama_factory(row: dict) -> dict | None:
    if "FA2" not in row["method"]:  # eager attention's scores are not modelled
        return None
    kind = "qlora" if row["method"].startswith("QLoRA") else "lora"
    unsloth = "Unsloth" in row["method"]
    return {
        "method": kind,
        "seq_len": int(row["seq_len"]),
        "lora_rank": 8,
        "lora_targets": "q_proj,v_proj",
        "pure_16bit": False,
        "checkpointing": True,
        "stack": "unsloth" if unsloth else "hf-trainer",
        "activation_offloading": False,
        "gpu": "a100-40gb-sxm4",
        "grad_accum": 2,
        "settings": FACTORY,
    }


def _max_context(row: dict) -> dict | None:
    if row["value"] is None:  # out of memory at any length
        return None
    budget = float(row["peak_vram_gb"])  # a card's stated memory: binary GB
    unsloth = row["method"].endswith("Unsloth")
    return {
        "method": "qlora",
        "seq_len": int(row["value"]),
        "lora_rank": 32,
        "lora_targets": ",".join(ALL_LINEAR),
        "pure_16bit": False,
        "checkpointing": True,
        "stack": "unsloth" if unsloth else "hf-trainer",
        "gpu": f"a {budget:g} GB card",
        "gpu_memory_gb": budget,
        "peak_gb": round(memory.card_gb(budget), 2),
        "settings": MAX_CONTEXT,
    }


RULES = (  # (source contains, workload contains, how its rows read)
    ("resource-tables.md", "(LitGPT)", _litgpt_table),
    ("Lightning-AI/litgpt", "config hub", _litgpt_hub),
    ("QwenLM/Qwen", "Qwen v1 repo", _qwen),
    ("unslothai/unsloth", "(LLaMA-Factory benchmark)", _llama_factory),
    ("unslothai/unsloth", "QLoRA max context (Unsloth table)", _max_context),
)


def preset_of(workload: str) -> str | None:
    for words, preset in sorted(MODELS.items(), key=lambda item: -len(item[0])):
        if workload.startswith(words + " ") or (workload.startswith(words + "-") and words.startswith("Qwen")):
            return preset
    return None


def memory_cases(rows: list[dict]) -> list[dict]:
    """Every published single-GPU peak the memory model can describe, with the settings it is read with."""
    cases = []
    for row in rows:
        if not row.get("peak_vram_gb"):
            continue
        rule = next((r for s, w, r in RULES if s in row["source"] and w in row["workload"]), None)
        preset = preset_of(row["workload"])
        settings = rule(row) if rule is not None and preset is not None else None
        gpu = settings and settings.get("gpu", GPUS.get(row["gpu"]))
        if settings is None or gpu is None:
            continue
        cases.append(
            {
                "model": preset,
                **{k: v for k, v in settings.items() if k not in ("settings", "gpu", "peak_gb")},
                "batch": int(row["batch"] or 1),
                "gpu": gpu,
                "gpu_memory_gb": settings.get("gpu_memory_gb", GPU_MEMORY_GB.get(gpu)),
                "peak_gb": settings.get("peak_gb", float(row["peak_vram_gb"])),
                "workload": row["workload"],
                "published_method": row["method"],
                "source": row["source"],
                "settings": settings["settings"],
            }
        )
    return cases


def job_of(case: dict) -> TrainingJob:
    return job_from_options(
        load_presets()[case["model"]],
        case["method"],
        case["seq_len"],
        case["batch"],
        checkpointing=case["checkpointing"],
        lora_rank=case["lora_rank"],
        lora_targets=case["lora_targets"],
    )


# --------------------------------------------------------------------------- throughput (the collection)

FOUNDRY = re.compile(r"micro batch (\d+).*activation checkpointing (True|False)", re.S)


def throughput_rows(rows: list[dict]) -> list[tuple[dict, dict, float, str]]:
    """(the job's settings, the row, tokens/s per GPU, how it was read) of every bf16 throughput on one GPU's work."""
    found = []
    for row in rows:
        preset = preset_of(row["workload"])
        precision = str(row["precision"]).lower()
        if preset is None or row["gpu"] not in GPUS or "fp8" in precision:
            continue
        if "llm-foundry" in row["source"] and "bf16" in precision:
            match = FOUNDRY.search(row["note"])
            if match:
                settings = {
                    "method": "full",
                    "seq_len": 2048,
                    "batch": int(match.group(1)),
                    "lora_rank": 16,
                    "lora_targets": "all-linear",
                    "checkpointing": match.group(2) == "True",
                }
                found.append(
                    (
                        settings,
                        row,
                        float(row["value"]),
                        f"tokens/s per GPU of an {row['gpus']}-GPU FSDP (FULL_SHARD) run: each GPU's work is "
                        "one GPU's share of the tokens",
                    )
                )
        elif "Automodel" in row["source"] and row["gpus"] == 1 and row["method"] == "LoRA":
            settings = {
                "method": "lora",
                "seq_len": int(row["seq_len"]),
                "batch": 2,
                "lora_rank": 16,
                "lora_targets": "all-linear",
                "checkpointing": False,
            }
            found.append((settings, row, float(row["value"]), "tokens/s on one H100 (MBS 2, the source's table)"))
        elif "QwenLM/Qwen" in row["source"] and row["metric"] == "step_time" and row["gpus"] == 1:
            settings = _qwen(row)
            # full-parameter rows: 2 s an iteration at 256 tokens for a 1.8B model, an optimizer step far beyond its
            # bytes (the README does not say its DeepSpeed settings: CPU offload, likely): left out of the times
            if settings is None or settings["method"] == "full":
                continue
            settings = {**settings, "batch": 1}
            tokens = 8 * int(row["seq_len"])  # batch 1, gradient accumulation 8 per iteration
            found.append(
                (
                    settings,
                    row,
                    tokens / float(row["value"]),
                    f"{row['value']} s per iteration of 8 x {row['seq_len']} tokens (batch 1, gradient "
                    "accumulation 8), as tokens/s",
                )
            )
    return found


CATALOG = load_catalog(DEFAULT_CATALOG)
RUN_TOKENS = 100_000_000  # a result's time is the time for this many tokens at its throughput


def build_collection(rows: list[dict]) -> dict:
    workloads, systems, results = {}, {}, []
    for settings, row, tokens_per_s, how in throughput_rows(rows):
        preset = preset_of(row["workload"])
        job = job_from_options(
            load_presets()[preset],
            settings["method"],
            settings["seq_len"],
            settings["batch"],
            tokens=RUN_TOKENS,
            checkpointing=settings["checkpointing"],
            lora_rank=settings["lora_rank"],
            lora_targets=settings["lora_targets"],
        )
        spec = job.workload_spec()
        key = collection._slug(
            f"{preset}-{settings['method']}-s{settings['seq_len']}-b{settings['batch']}"
            + ("-ckpt" if settings["checkpointing"] else "")
        )
        workloads[key] = {
            "name": f"{job.describe()} (published)",
            "unit": "tokens",
            "samples": RUN_TOKENS,
            "work": f"{RUN_TOKENS:,} tokens of training",
            "optimizer": "adamw",
            "parameters": spec["parameters"],
            "phases": spec["phases"],
            "source": f"{load_presets()[preset].source} (config.json); work per token by advisor.llm.job",
            "family": spec["family"],
            "model": preset,
            "operations_per_step": spec["operations_per_step"],
        }
        gpu = GPUS[row["gpu"]]
        source_key = row["source"].split("@")[0].replace("github:", "").strip().split("/")[-1].lower()
        system = collection._slug(f"{gpu}-{source_key}")
        systems[system] = {
            "name": f"{row['gpu']}, {row['source'].split('@')[0].replace('github:', '').strip()}",
            "gpu": CATALOG.by_id()[gpu].name,
            "gpus": 1,
            "date": str(row["date"]).split("/")[-1],
            "source": f"{row['source']}: {how}",
        }
        results.append(
            {
                "system": system,
                "workload": key,
                "precision": "mixed_bfloat16",
                "throughput": round(tokens_per_s, 3),
                "batch_per_gpu": job.tokens_per_micro_batch,
            }
        )
    return {
        "collection_version": collection.COLLECTION_VERSION,
        "id": "llm-2026",
        "source": {
            "what": "published language-model training throughput (tokens/s per GPU), bf16",
            "publisher": "MosaicML llm-foundry, NVIDIA NeMo AutoModel, Qwen",
            "framework": "pytorch",
            "notes": [
                "Imported from shared/data/published_2026.yaml by scripts/import_published_llm.py; its "
                "docstring says which rows are left out and why.",
                "Each workload is a training job described by its model's config (advisor/data/models.yaml) "
                "and the settings its source states; a result's time is 100,000,000 tokens at its "
                "throughput per GPU.",
            ],
        },
        "workloads": workloads,
        "systems": systems,
        "results": results,
    }


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else DEFAULT_SOURCE
    rows = yaml.safe_load(source.read_text(encoding="utf-8"))
    cases = memory_cases(rows)
    head = (
        "# Published single-GPU peak memory of language-model training jobs, read from shared/data/"
        "published_2026.yaml by\n# scripts/import_published_llm.py (do not edit: re-run it). `settings` says how "
        "each source's rows are read.\n"
    )
    PEAKS_OUT.write_text(
        head + yaml.safe_dump({"peaks_version": 1, "cases": cases}, sort_keys=False, width=120), encoding="utf-8"
    )
    data = build_collection(rows)
    COLLECTION_OUT.write_text(collection.dump(data), encoding="utf-8")
    print(
        f"{len(cases)} memory peaks -> {PEAKS_OUT.relative_to(ROOT)}; {len(data['results'])} throughputs of "
        f"{len(data['workloads'])} workloads -> {COLLECTION_OUT.relative_to(ROOT)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
