"""Several cards, one stream (advisor.infer.mixed): llama.cpp's layer split predicted against published multi-GPU runs
the speed model never saw (its fit holds single-GPU rows only).

The rows: XiongjieDai/GPU-Benchmarks-on-LLM-Inference README @ 00dd2bd, "LLaMA 3" NVIDIA table (May 2024, llama.cpp
llama-bench on RunPod, CUDA 12.1.1): tg 512 (512 tokens written from an empty context, one stream) of Llama 3 8B and
70B in Q4_K_M on 2, 4, 6 and 8 RTX 3090s or RTX 4090s (the layers split by llama.cpp's default).

    python benchmarks/bench_mixed.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.infer.architecture import resolve_inference_model
from advisor.infer.estimate import decode_range
from advisor.infer.job import make_job
from advisor.infer.mixed import mixed_cards
from advisor.store.catalog import load_catalog

MODELS = ("llama-3.1-8b", "llama-3.1-70b")  # Llama 3 8B and 70B's shapes
# (GPU, count): published tg 512 tokens/s of the 8B and the 70B model
PUBLISHED = {
    ("rtx-3090", 2): (111.67, 16.57),
    ("rtx-4090", 2): (124.65, 19.22),
    ("rtx-3090", 4): (108.66, 17.07),
    ("rtx-4090", 4): (120.32, 19.80),
    ("rtx-3090", 6): (104.17, 17.09),
    ("rtx-4090", 8): (118.09, 18.94),
}


def main() -> int:
    catalog = load_catalog()
    ratios = []
    for (gpu_id, count), speeds in PUBLISHED.items():
        for preset, published in zip(MODELS, speeds, strict=True):
            ratios.append(_error(catalog, gpu_id, count, preset, published))
    found = decode_range(catalog)["llama.cpp"]
    print(
        f"{len(ratios)} rows: median error {statistics.median(ratios):.3f}x, worst {max(ratios):.3f}x; "
        f"the engine's cross-validated range x{found:.2f}"
    )
    return 0


def _error(catalog, gpu_id: str, count: int, preset: str, published: float) -> float:
    """One published run against its prediction, printed; its error factor (at least 1)."""
    job = make_job(resolve_inference_model(preset), "llama.cpp", "q4_k_m", None, prompt=1, output=512)
    found = mixed_cards(job, [catalog.by_id()[gpu_id]] * count, catalog)
    ratio = found.single_stream_tokens_per_s / published
    print(
        f"{count} x {gpu_id} {preset}: published {published:.1f}, predicted {found.single_stream_tokens_per_s:.1f} "
        f"(x{ratio:.2f}); {found.verdict}"
    )
    return max(ratio, 1 / ratio)


if __name__ == "__main__":
    raise SystemExit(main())
