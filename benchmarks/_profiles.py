"""Shared by the benchmarks: N generated measured-style profiles (100 epoch times each) in a folder."""

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from advisor import store  # noqa: E402
from advisor.format import schema  # noqa: E402

DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def generate(folder: Path, count: int, start: int = 0) -> None:
    rng = random.Random(count + start)
    template = store.load_profile(ROOT / "profiles" / "post-gtx-1070-ti.yaml")[0].data
    for index in range(start, start + count):
        seconds = rng.uniform(10, 3000)
        epochs = [seconds / 100 * rng.uniform(0.97, 1.03) for _ in range(100)]
        data = {
            **template,
            "id": f"gen-{index:06d}",
            "name": f"Generated GPU {index}",
            "device": {"kind": "gpu", "name": f"Generated GPU {index % 50}", "count": 1},
            "price": {"usd": round(rng.uniform(100, 5000)), "date": "2026-11-30", "source": "generated"},
            "results": [
                {"precision": "float32", "total_seconds": sum(epochs), "epoch_seconds": epochs},
                {"precision": "mixed_float16", "total_seconds": sum(epochs) / 2},
            ],
            "provenance": {"method": "measured", "advisor_version": "0.1.0", "date": "2026-11-30"},
        }
        data.pop("notes", None)
        # The same text as store.dump_profile, through libyaml's emitter (100,000 files in minutes, not a quarter hour)
        text = yaml.dump(
            schema.canonical(data),
            Dumper=DUMPER,
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=100,
        )
        (folder / f"gen-{index:06d}.yaml").write_text(text)
