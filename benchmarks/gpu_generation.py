"""Time transformers' generation of the presets on this machine's GPU (``advisor.measure.generation``): all records
in one YAML (``generation.yaml``, rewritten after each model) in the folder given (default: the current one).

    python benchmarks/gpu_generation.py OUT_DIR [--quick]

--quick: a tiny config on the CPU, to check the script before it spends GPU time.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.llm.config import ModelConfig, load_presets
from advisor.measure.generation import GenerationPlan, measure_generation

# (preset, prompt tokens, output tokens, batch sizes): a small model (the per-step floor), an 8B (bandwidth-bound
# decode, compute-bound prefill) at two prompt lengths and growing batches, and a 32B.
RUNS = [
    ("qwen2.5-0.5b", 512, 128, (1, 16)),
    ("llama-3.1-8b", 512, 128, (1, 8, 32)),
    ("llama-3.1-8b", 2048, 64, (1, 16)),
    ("qwen2.5-32b", 512, 64, (1, 8)),
]


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    quick = "--quick" in sys.argv
    presets = load_presets()
    runs = RUNS
    if quick:
        tiny = ModelConfig(
            name="tiny", layers=2, hidden=64, heads=4, kv_heads=2, intermediate=128, vocab=256, tied_embeddings=False
        )
        runs = [(tiny, 16, 8, (1, 2))]
    records = []
    for model, prompt, output, batches in runs:
        config = presets[model] if isinstance(model, str) else model
        plan = GenerationPlan(
            model=config,
            prompt_tokens=prompt,
            output_tokens=output,
            batches=batches,
            repeats=3,
            dtype="float32" if quick else "bfloat16",
        )
        if quick:
            plan = replace(plan, device="cpu")
        start = time.perf_counter()
        record = measure_generation(plan, lambda line: print(line, file=sys.stderr, flush=True))
        record["preset"] = model if isinstance(model, str) else "tiny"
        records.append(record)
        (out / "generation.yaml").write_text(yaml.safe_dump(records, sort_keys=False), encoding="utf-8")
        print(f"{record['preset']} prompt {prompt}: {time.perf_counter() - start:.0f} s", flush=True)
        for row in record["results"]:
            print(
                f"  batch {row['batch']}: ttft {row['time_to_first_token_s'] * 1e3:.1f} ms, "
                f"tpot {row['time_per_output_token_s'] * 1e3:.2f} ms, decode {row['decode_tokens_per_s']:.0f} tok/s, "
                f"prefill {row['prefill_tokens_per_s']:.0f} tok/s, peak {row.get('peak_memory_gb')} GB",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
