"""Where a job stops fitting, on a real GPU: transformers' generate (random weights of the presets' shapes, bf16) at
the edge the memory model predicts, and the predicted verdict beside each outcome. Run on the device machine:

    python benchmarks/gpu_fit_edges.py OUT_DIR [--quick]

1. the largest batch of Llama 3.1 8B at 512 + 16 tokens that runs (bisected between doublings), against the
   predicted most sequences;
2. Llama 3.1 70B in bf16 (141 GB of weights) at batch 1 and 16, against the predicted verdicts.
--quick: a tiny config on the CPU, to check the script.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.infer.architecture import resolve_inference_model
from advisor.infer.job import make_job
from advisor.infer.serving_memory import memory_verdict
from advisor.llm.config import ModelConfig, load_presets
from advisor.measure.generation import hf_config_of


def _predicted(preset: str, prompt: int, output: int, batch: int, memory_gb: float) -> dict:
    job = make_job(
        resolve_inference_model(preset), "transformers", "bf16", None, prompt=prompt, output=output, users=batch
    )
    verdict = memory_verdict(job, memory_gb)
    return {
        "verdict": verdict.verdict,
        "needed_gb": round(verdict.needed_bytes / 1e9, 2),
        "most_sequences": verdict.most_sequences,
    }


def main() -> int:
    import torch
    import transformers

    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    quick = "--quick" in sys.argv
    device = "cpu" if quick else "cuda:0"
    memory_gb = 141.0  # the catalog's H200
    records: list[dict] = []

    def build(config: ModelConfig):
        with torch.device(device):
            model = transformers.AutoModelForCausalLM.from_config(
                transformers.LlamaConfig(**hf_config_of(config)), dtype=torch.bfloat16
            )
        return model.eval()

    def runs(model, batch: int, prompt: int, output: int) -> tuple[bool, float | None, float]:
        start = time.perf_counter()
        if device != "cpu":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        ids = torch.randint(0, model.config.vocab_size, (batch, prompt), device=device)
        try:
            with torch.inference_mode():
                model.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=output,
                    min_new_tokens=output,
                    do_sample=False,
                    pad_token_id=0,
                )
            ok = True
        except torch.OutOfMemoryError:
            ok = False
        del ids
        peak = torch.cuda.max_memory_allocated() / 1e9 if device != "cpu" else None
        if device != "cpu":
            torch.cuda.empty_cache()
        return ok, peak, time.perf_counter() - start

    def save() -> None:
        (out / "fit_edges.yaml").write_text(yaml.safe_dump(records, sort_keys=False), encoding="utf-8")

    presets = load_presets()
    small = ModelConfig("tiny", 2, 64, 4, 2, 128, 256, False) if quick else presets["llama-3.1-8b"]
    model = build(small)
    prompt, output = (16, 4) if quick else (512, 16)
    low, high = 0, (4 if quick else 1024)
    while True:  # doubling until a batch fails
        ok, peak, seconds = runs(model, high, prompt, output)
        records.append(
            {
                "model": small.name,
                "batch": high,
                "prompt": prompt,
                "output": output,
                "ran": ok,
                "peak_gb": peak,
                "seconds": round(seconds, 1),
            }
        )
        save()
        print(records[-1], flush=True)
        if not ok:
            break
        if high >= (16 if quick else 4096):
            low = high
            break
        low, high = high, high * 2
    if not records[-1]["ran"]:
        while high - low > max(8, low // 20):  # bisect to within 5 %
            mid = (low + high) // 2
            ok, peak, seconds = runs(model, mid, prompt, output)
            records.append(
                {
                    "model": small.name,
                    "batch": mid,
                    "prompt": prompt,
                    "output": output,
                    "ran": ok,
                    "peak_gb": peak,
                    "seconds": round(seconds, 1),
                }
            )
            save()
            print(records[-1], flush=True)
            low, high = (mid, high) if ok else (low, mid)
    if not quick:
        for record in records:
            record["predicted"] = _predicted("llama-3.1-8b", prompt, output, record["batch"], memory_gb)
        del model
        torch.cuda.empty_cache()
        big = build(presets["llama-3.1-70b"])
        for batch in (1, 16):
            ok, peak, seconds = runs(big, batch, 512, 16)
            records.append(
                {
                    "model": "Llama 3.1 70B",
                    "batch": batch,
                    "prompt": 512,
                    "output": 16,
                    "ran": ok,
                    "peak_gb": peak,
                    "seconds": round(seconds, 1),
                    "predicted": _predicted("llama-3.1-70b", 512, 16, batch, memory_gb),
                }
            )
            save()
            print(records[-1], flush=True)
    print(f"largest batch that ran: {low}; first that failed: {high}", flush=True)
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
