"""The GPU catalog: it loads, every value keeps its source, bad entries give clear messages."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
import yaml

from advisor.cli import main
from advisor.errors import AdvisorError, ProfileError
from advisor.store import catalog
from helpers import load_yaml

RAW = load_yaml(catalog.DEFAULT_CATALOG.read_text(encoding="utf-8"))
RENTED = next(i for i, gpu in enumerate(RAW["gpus"]) if gpu.get("rentals"))  # the first GPU with a rental price
OPTIONED = next(i for i, gpu in enumerate(RAW["gpus"]) if gpu.get("memory_options"))  # a Mac sold with more sizes


def test_the_catalog_covers_todays_market(shipped_catalog):
    ids = {gpu.id for gpu in shipped_catalog.gpus}
    assert len(ids) >= 30
    assert {"gtx-1070-ti", "titan-rtx"} <= ids  # the post's GPUs
    assert {"rtx-4090", "rtx-5090", "l4", "a100-80gb-sxm4", "h100-sxm", "h200-sxm"} <= ids
    assert shipped_catalog.as_of == "2026-11-30"
    assert {gpu.segment for gpu in shipped_catalog.gpus} == {"consumer", "workstation", "datacenter"}


def test_every_value_keeps_its_source(shipped_catalog):
    for gpu in shipped_catalog.gpus:
        for name, spec in gpu.specs.items():
            assert spec.source in shipped_catalog.sources or spec.source.startswith("http"), (gpu.id, name)
            if spec.value is None:
                assert spec.note, f"{gpu.id}.{name} is null without saying why"
        for price in gpu.purchase:
            assert price.date and (price.source in shipped_catalog.sources or price.source.startswith("http"))
        for rental in gpu.rentals:
            assert rental.date and rental.usd_per_hour > 0 and rental.source in shipped_catalog.sources


def test_prices_and_rentals(shipped_catalog):
    gpus = shipped_catalog.by_id()
    assert gpus["rtx-4090"].price.usd == 1599 and gpus["rtx-4090"].price.kind == "launch MSRP"
    assert gpus["rtx-4090"].best_rental.provider == "RunPod" and gpus["rtx-4090"].best_rental.usd_per_hour == 0.6
    assert all(r.kind != "spot" for gpu in shipped_catalog.gpus if (r := gpu.best_rental))  # spot is never the default
    assert gpus["h100-sxm"].price.kind.startswith("system price per GPU")
    assert gpus["titan-rtx"].value("fp16_tensor_tflops") == 130.5  # full rate, not the GeForce half rate
    assert gpus["gtx-1070-ti"].value("fp16_tensor_tflops") is None  # no tensor cores: null, not a guess


def test_names_match_what_drivers_report(shipped_catalog):
    assert shipped_catalog.find("NVIDIA GeForce RTX 4090").id == "rtx-4090"
    assert shipped_catalog.find("NVIDIA TITAN RTX").id == "titan-rtx"
    assert shipped_catalog.find("rtx-3090").id == "rtx-3090"
    assert shipped_catalog.match("Tesla T4").id == "t4"
    assert shipped_catalog.match("Some Other GPU") is None
    closest = r"closest: rtx-4090 \(GeForce RTX 4090\)"
    with pytest.raises(AdvisorError, match=r"no GPU named 'RTX 4095' in the catalog; " + closest):
        shipped_catalog.find("RTX 4095")


def test_the_shipped_json_schema_is_derived_and_the_catalog_passes_it():
    jsonschema = pytest.importorskip("jsonschema")
    path = catalog.DEFAULT_CATALOG.parent / "catalog.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema == json.loads(json.dumps(catalog.json_schema()))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(RAW)) == []


def write(tmp_path: Path, data) -> Path:
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            lambda d: d["gpus"][0]["fp32_tflops"].update(value="fast"),
            "gpus[0].fp32_tflops.value",
            "must be a number, got a string ('fast')",
        ),
        (
            lambda d: d["gpus"][0]["fp32_tflops"].update(source="my-friend"),
            "gpus[0].fp32_tflops.source",
            "unknown source 'my-friend'",
        ),
        (
            lambda d: d["gpus"][0]["fp32_tflops"].pop("value"),
            "gpus[0].fp32_tflops.value",
            "is missing (write null when no source gives it)",
        ),
        (lambda d: d["gpus"][1].update(id=d["gpus"][0]["id"]), "gpus[1]", "is also used by gpus[0]"),
        (lambda d: d["gpus"][0]["purchase"][0].update(usd=-5), "gpus[0].purchase[0].usd", "must be at least 0"),
        (
            lambda d: d["gpus"][RENTED]["rentals"][0].update(kind="free"),
            f"gpus[{RENTED}].rentals[0].kind",
            "must be one of on-demand, serverless, hosted, spot, reserved",
        ),
        (lambda d: d["gpus"][0].update(segment="gaming"), "gpus[0].segment", "must be one of consumer"),
        (lambda d: d.pop("as_of"), "as_of", "is missing"),
        (
            lambda d: d["gpus"][0].update(allocatable_gb={"value": 10, "source": "wiki"}),
            "gpus[0].allocatable_gb.value",
            "10 GB is more than memory_gb (8)",
        ),
        (
            lambda d: d["gpus"][0].update(whole_machine=True),
            "gpus[0].purchase[0].kind",
            "a whole machine's price must say 'whole machine'",
        ),
        (
            lambda d: d["gpus"][OPTIONED]["memory_options"][0].pop("allocatable_gb"),
            f"gpus[{OPTIONED}].memory_options[0].allocatable_gb",
            "required: the entry gives allocatable_gb",
        ),
        (
            lambda d: d["gpus"][OPTIONED]["memory_options"][0].update(allocatable_gb=999),
            f"gpus[{OPTIONED}].memory_options[0].allocatable_gb",
            "999 GB is more than memory_gb",
        ),
        (
            lambda d: d["gpus"][OPTIONED]["memory_options"][0].update(id=d["gpus"][0]["id"]),
            f"gpus[{OPTIONED}].memory_options[0]",
            "is also used by gpus[0]",
        ),
        (
            lambda d: d["gpus"][OPTIONED]["memory_options"][0].update(source="my-friend"),
            f"gpus[{OPTIONED}].memory_options[0].source",
            "unknown source 'my-friend'",
        ),
        (
            lambda d: d["gpus"][OPTIONED]["memory_options"][0].update(
                purchase=[{"usd": 1, "kind": "launch price", "date": "2025-01-01", "source": "wiki"}]
            ),
            f"gpus[{OPTIONED}].memory_options[0].purchase[0].kind",
            "a whole machine's price must say 'whole machine'",
        ),
    ],
)
def test_bad_catalog_entries_give_clear_messages(tmp_path: Path, change, field, message):
    data = copy.deepcopy(RAW)
    change(data)
    path = write(tmp_path, data)
    with pytest.raises(ProfileError) as caught:
        catalog.load_catalog(path)
    problems = caught.value.problems
    assert any(p.file == str(path) and p.field == field and message in p.message for p in problems), problems


def test_a_catalog_read_again_is_its_file_as_it_is_now(tmp_path: Path):
    """The same bytes give the same catalog without parsing; an edit is read again even with the file's time put
    back, and an edit that breaks it is refused, never answered from memory."""
    path = write(tmp_path, RAW)
    first = catalog.load_catalog(path)
    assert catalog.load_catalog(path) is first
    times = path.stat()
    data = copy.deepcopy(RAW)
    data["as_of"] = "2026-12-24"
    write(tmp_path, data)
    os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert catalog.load_catalog(path).as_of == "2026-12-24"
    data["gpus"][0]["memory_gb"]["value"] = -1
    write(tmp_path, data)
    with pytest.raises(ProfileError):
        catalog.load_catalog(path)


def test_a_bad_catalog_is_one_line_in_the_cli(tmp_path: Path, capsys):
    data = copy.deepcopy(RAW)
    data["gpus"][0]["memory_gb"]["value"] = -1
    path = write(tmp_path, data)
    assert main(["catalog", "--catalog", str(path)]) == 1
    err = capsys.readouterr().err
    assert "gpus[0].memory_gb.value: must be at least 0, got -1" in err and "Traceback" not in err


def test_catalog_command(capsys):
    assert main(["catalog"]) == 0
    out = capsys.readouterr().out
    assert "prices as of 2026-11-30" in out and "rtx-4090" in out and "$1,599 (2022-10)" in out
    assert main(["catalog", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["as_of"] == "2026-11-30" and len(data["gpus"]) >= 30
    h100 = next(g for g in data["gpus"] if g["id"] == "h100-sxm")
    assert h100["tf32_tflops"] == 494.7 and h100["rental_usd_per_hour"] == 3.78 and h100["sources"]["fp32_tflops"]


def test_a_machine_sold_with_other_memory_sizes_is_an_entry_for_each(shipped_catalog):
    """A memory option is an entry of its own: the machine's values (its bandwidth, platform, peaks), its own id,
    name, memory, working set and price, no aliases (a driver's name finds the entry it was written for)."""
    gpus = shipped_catalog.by_id()
    small, large = gpus["mac-mini-m4-pro-24gb"], gpus["mac-mini-m4-pro-64gb"]
    assert (small.value("memory_gb"), small.usable_memory_gb, large.usable_memory_gb) == (24, 16, 48)
    assert small.value("memory_bandwidth_gbs") == large.value("memory_bandwidth_gbs") == 273
    assert (small.platform, small.whole_machine, small.architecture) == ("mps", True, "Apple M4")
    assert small.price.usd == 1399 and "whole machine" in small.price.kind and large.price is None
    assert small.aliases == () and small.specs["memory_gb"].source == "gadgetdb_mac_mini_m4_pro"
    assert gpus["mac-studio-m3-ultra-256gb"].usable_memory_gb == 192
    assert shipped_catalog.find("Mac mini (M4 Pro, 24 GB)") is small
