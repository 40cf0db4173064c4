"""Turn Lambda's published PyTorch training throughput (shared/data/lambda_pytorch_training.yaml) into advisor's
published collection, profiles/published-lambda-pytorch.yaml: one quoted profile per system, date and workload.

    python scripts/import_published.py [../shared/data/lambda_pytorch_training.yaml]

The workloads are described for the performance model by scripts/published_workloads.yaml: keras.applications
models are counted by advisor's FLOP counter (TensorFlow needed), the others are written there with their sources.
Each system name is reduced to its GPU (hosting vendor, GPU count and link removed) and matched to the catalog by
its normaliser; names that match nothing are printed, and kept (they are still results, only not calibration).
"""

from __future__ import annotations

import os
import re
import sys
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.store import collection  # noqa: E402
from advisor.store.catalog import load_catalog  # noqa: E402

DEFAULT_SOURCE = ROOT.parent / "shared" / "data" / "lambda_pytorch_training.yaml"
OUT = ROOT / "profiles" / "published-lambda-pytorch.yaml"
PRECISIONS = {"fp32": "float32", "fp16": "mixed_float16"}
# Cloud instances whose GPUs their names do not say (AWS EC2 instance types page).
INSTANCES = {"p3.16xlarge": "V100 SXM2", "p3.8xlarge": "V100 SXM2", "p4d.24xlarge": "A100 SXM4 40GB"}
HOSTS = re.compile(r"^(Lambda ?Cloud( —)?|Linode Cloud —|DellTexas|Dell|SMC|1CC|RAIDZ1)\s+")
LINK = re.compile(r"\s+NVLink$")


def gpu_of(system: str) -> tuple[str, str, str]:
    """(GPU name, host, link) of a system name: 'Dell 2x H100 80GB SXM5' -> ('H100 80GB SXM5', 'Dell', '')."""
    if system in INSTANCES:
        return INSTANCES[system], "AWS " + system, ""
    host = ""
    match = HOSTS.match(system)
    if match:
        host, system = match.group(1).replace(" —", ""), system[match.end() :]
    link = "NVLink" if LINK.search(system) else ""
    system = LINK.sub("", system)
    system = re.sub(r"^\d+x\s*", "", system)
    system = re.sub(r"\s+V1$", "", system)
    return system.replace("RTX Quadro", "Quadro RTX"), host, link


def describe_workloads(spec: dict) -> dict:
    """Each workload's description for the model; keras.applications models counted by the FLOP counter."""
    described = {}
    for key, item in spec.items():
        workload = {k: v for k, v in item.items() if k != "keras"}
        # YAML 1.1 reads 7.5e11 (no dot, no sign) as text: the phases' figures are numbers
        workload["phases"] = [
            {k: float(v) if k in ("flops_per_sample", "activations_per_sample") else v for k, v in phase.items()}
            for phase in item.get("phases", [])
        ]
        if "keras" in item:
            workload.update(_counted(item["keras"]))
        described[key] = workload
    return described


def _counted(spec: dict) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras  # the FLOP counter reads built Keras layers

    from advisor.measure import flops

    model = getattr(keras.applications, spec["application"])(
        weights=None, include_top="until" not in spec, input_shape=tuple(spec["input_shape"])
    )
    if "until" in spec:
        model = keras.Model(model.input, model.get_layer(spec["until"]).output)
    work = flops.count(model)
    matmul = sum(layer.training_flops for layer in work.layers if layer.parameters)
    other = work.training_flops - matmul
    activations = sum(layer.activations for layer in work.layers)
    where = f"keras.applications.{spec['application']}{tuple(spec['input_shape'])}"
    where += f" up to {spec['until']}" if "until" in spec else ""
    return {
        "parameters": int(model.count_params()),
        "phases": [
            {
                "kind": "matmul",
                "flops_per_sample": float(f"{matmul:.4g}"),
                "note": f"convolutions and dense layers counted on {where}: {work.forward_flops / 1e9:.2f} GFLOPs "
                "forward per sample",
            },
            {
                "kind": "elementwise",
                "activations_per_sample": float(f"{activations:.4g}"),
                "note": f"every layer's outputs counted on {where} (normalisation, activations, additions: "
                f"{other / 1e9:.2f} GFLOPs of training)",
            },
        ],
    }


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else DEFAULT_SOURCE
    data = yaml.safe_load(source.read_text())
    workloads = describe_workloads(yaml.safe_load((ROOT / "scripts" / "published_workloads.yaml").read_text()))
    catalog = load_catalog()
    systems: dict[str, dict] = {}
    results: list[dict] = []
    by_name: dict[tuple[str, str], str] = {}
    dates = defaultdict(set)
    for row in data["rows"]:
        dates[row["system"]].add(row["date"])
    unmatched: dict[str, set[str]] = defaultdict(set)
    skipped = [row for row in data["rows"] if row.get("batch_per_gpu") is None]
    for row in data["rows"]:
        if row.get("batch_per_gpu") is None:
            continue  # a profile states its batch; the source does not give this one
        name = row["system"]
        key = (name, row["date"])
        if key not in by_name:
            gpu, host, link = gpu_of(name)
            slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
            if len(dates[name]) > 1:
                slug += "-" + row["date"][:7]
            by_name[key] = slug
            system = {"name": name, "gpu": gpu, "gpus": int(row["gpus"])}
            if host:
                system["host"] = host
            if link:
                system["link"] = link
            system.update(
                {
                    "price_usd": row.get("price_usd"),
                    "watts": row.get("watt"),
                    "date": row["date"],
                    "source": row["source"],
                }
            )
            systems[slug] = system
            if catalog.match(gpu) is None:
                unmatched[gpu].add(name)
        results.append(
            {
                "system": by_name[key],
                "workload": row["model"],
                "precision": PRECISIONS[row["precision"]],
                "throughput": float(row["throughput"]),
                "batch_per_gpu": int(row["batch_per_gpu"]),
            }
        )
    document = {
        "collection_version": collection.COLLECTION_VERSION,
        "id": "lambda-pytorch",
        "source": {
            "what": data["description"].split(",")[0],
            "publisher": "Lambda",
            "repo": "lambdal/deeplearning-benchmark",
            "path": "pytorch/pytorch-train-throughput-{fp32,fp16}.csv, pytorch-train-bs-*.csv",
            "framework": "pytorch",
            "units": data["units"],
            "notes": data["notes"],
        },
        "workloads": workloads,
        "systems": systems,
        "results": results,
    }
    text = collection.dump(document)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(systems)} systems, {len(results)} results, {len(workloads)} workloads")
    print(f"skipped {len(skipped)} rows without a batch size ({len({r['system'] for r in skipped})} systems)")
    for gpu, names in sorted(unmatched.items()):
        print(f"not in the catalog: {gpu!r} ({', '.join(sorted(names))})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
