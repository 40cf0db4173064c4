"""The GPU catalog: specifications, purchase and rental prices of the GPUs people buy or rent, each value
with its source.

The catalog is YAML (``advisor/data/catalog.yaml``, package data), read through the same safe loader as
profiles and validated against the field tables below with the same kind of messages (file, field,
what is wrong). A value nobody could source is null: the performance model then says it cannot
estimate what needs it, never guesses. Pure functions and dataclasses; no TensorFlow.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from advisor import store
from advisor.errors import AdvisorError, Problem, ProfileError
from advisor.format import fields as F
from advisor.format import names
from advisor.format.fields import Field
from advisor.format.units import SECONDS_PER_HOUR
from advisor.format.vocabulary import PLATFORM_VENDORS, Platform, words
from advisor.store import crossval_widths as widths
from advisor.store.crossval_widths import Widths

CATALOG_VERSION = 1
# Package data (importlib.resources): the catalog travels with the package, in a wheel as in a checkout.
DEFAULT_CATALOG = Path(str(resources.files("advisor").joinpath("data", "catalog.yaml")))
SEGMENTS = ("consumer", "workstation", "datacenter")
PLATFORMS = words(Platform)
# The software platforms whose published results the estimates (training time, inference speed) are fitted and
# cross-validated on: a GPU of another platform (ROCm, Metal) gets no time or speed until its own results are fitted,
# never the range of this fit (its memory is still answered).
FITTED_PLATFORMS = (Platform.CUDA.value,)
ON_DEMAND_KINDS = ("on-demand", "serverless", "hosted")  # what "rent" means by default; spot is interruptible
RENTAL_KINDS = (*ON_DEMAND_KINDS, "spot", "reserved")
SLUG = r"^[a-z0-9][a-z0-9-]{0,79}$"
# The kinds of memory a GPU reads its weights from: stacked high-bandwidth memory beside the die, graphics memory on
# the board, or a machine's low-power memory shared with its CPU. One user's decode in llama.cpp reaches another share
# of the bandwidth on each (advisor.infer.speed.BandwidthTrend).
MEMORY_KINDS = ("hbm", "gddr", "lpddr")

SPEC = (
    Field(
        "value",
        "number",
        "the value (null when no source gives it)",
        required=True,
        null_allowed=True,
        missing_hint="write null when no source gives it",
        minimum=0,
    ),
    Field("source", "string", "a key of `sources` (or a URL)", required=True),
    Field("note", "string", "where sources disagree, how it was read"),
    Field("derived", "boolean", "true when computed from a sourced rule (say which in note), not copied"),
)
DATE_SPEC = (
    Field("value", "date", "the date", required=True),
    *SPEC[1:],
)
MEMORY_KIND_SPEC = (
    Field("value", "choice", "hbm, gddr or lpddr", required=True, choices=MEMORY_KINDS),
    *SPEC[1:],
)
PURCHASE = (
    Field(
        "usd",
        "number",
        "the price of one GPU (or what the note says it includes)",
        required=True,
        minimum=0,
        unit="USD",
    ),
    Field("kind", "string", "launch MSRP, street price, system price per GPU...", required=True),
    Field("date", "date", "when the price was true", required=True),
    Field("source", "string", "a key of `sources` (or a URL)", required=True),
    Field("note", "string", "what the price includes"),
)
RENTAL = (
    Field("provider", "string", "the cloud", required=True),
    Field("usd_per_hour", "number", "price of one GPU for an hour", required=True, positive=True, unit="USD/h"),
    Field(
        "kind",
        "choice",
        "on-demand, serverless, hosted, spot (interruptible) or reserved",
        required=True,
        choices=RENTAL_KINDS,
    ),
    Field("date", "date", "when the price was true", required=True),
    Field("source", "string", "a key of `sources` (or a URL)", required=True),
    Field("note", "string", "region, instance, how the per-GPU price was derived"),
)


MEMORY_OPTION = (
    Field(
        "id", "string", "this configuration's slug", required=True, pattern=SLUG, pattern_hint="a slug (a-z, 0-9, '-')"
    ),
    Field("name", "string", "this configuration's name", required=True),
    Field("memory_gb", "number", "its memory", required=True, positive=True, unit="GB"),
    Field(
        "allocatable_gb",
        "number",
        "what its GPU may allocate of that memory (required where the entry gives allocatable_gb); its source and "
        "note are the entry's",
        positive=True,
        unit="GB",
    ),
    Field("source", "string", "a key of `sources` (or a URL) that gives this memory size", required=True),
    Field("purchase", "sections", "its purchase prices (none: unknown)", fields=PURCHASE),
)


def _spec(name: str, doc: str, unit: str, required: bool = True) -> Field:
    return Field(name, "section", doc, required=required, fields=SPEC, unit=unit)


# The specification fields, in order: (name, what it is, unit).
SPEC_FIELDS = (
    ("memory_gb", "memory of one GPU", "GB"),
    ("memory_bandwidth_gbs", "peak memory bandwidth", "GB/s"),
    ("l2_cache_mb", "L2 cache", "MB"),
    ("fp32_tflops", "float32 peak (CUDA cores), dense, at boost clock", "TFLOPS"),
    (
        "tf32_tflops",
        "TF32 tensor peak, dense (TensorFlow uses TF32 for float32 matmuls by default on Ampere+)",
        "TFLOPS",
    ),
    ("fp16_tensor_tflops", "float16 tensor peak with float32 accumulation, dense (what mixed_float16 uses)", "TFLOPS"),
    ("bf16_tflops", "bfloat16 tensor peak, dense (what mixed_bfloat16 uses)", "TFLOPS"),
    ("board_power_w", "board power (TDP/TGP as published)", "W"),
    (
        "pcie_gbs",
        "host link: PCIe x16 bandwidth, one direction (what data-parallel training's all-reduce uses without NVLink)",
        "GB/s",
    ),
    (
        "nvlink_gbs",
        "NVLink bandwidth per GPU, one direction (SXM boards; a bridge joins two cards); null where the GPU has none",
        "GB/s",
    ),
)
# Specification fields an entry may leave out (left out: the GPU has none, or it is not known), in the same form.
OPTIONAL_SPEC_FIELDS = (
    (
        "infinity_fabric_gbs",
        "AMD Infinity Fabric (xGMI) bandwidth per GPU to the other GPUs of its node, one direction, all its links "
        "together (OAM modules); left out where the GPU has none or it is not published",
        "GB/s",
    ),
    (
        "bf16_max_achievable_tflops",
        "bfloat16 tensor rate the vendor measured sustained on a dense GEMM (AMD's max-achievable FLOPs: realistic "
        "data, a warm device, the clock it holds under that load), below the peak where the board's power limits the "
        "clock; left out where no vendor publishes one",
        "TFLOPS",
    ),
)
GPU = (
    Field("id", "string", "the GPU's slug", required=True, pattern=SLUG, pattern_hint="a slug (a-z, 0-9, '-')"),
    Field("name", "string", "the GPU's name", required=True),
    Field("aliases", "strings", "other names drivers report (nvidia-smi, TensorFlow), for matching profiles"),
    Field(
        "architecture", "string", "the architecture (Pascal, Turing, Ampere, Ada, Hopper, Blackwell...)", required=True
    ),
    Field("segment", "choice", "who it is sold to", required=True, choices=SEGMENTS),
    Field(
        "platform",
        "choice",
        "the software platform it trains and serves on (cuda where left out): an estimate uses its own platform's "
        "fitted results only",
        choices=PLATFORMS,
    ),
    Field("launch_date", "section", "when it launched (or was announced)", required=True, fields=DATE_SPEC),
    *(_spec(name, doc, unit) for name, doc, unit in SPEC_FIELDS),
    *(_spec(name, doc, unit, required=False) for name, doc, unit in OPTIONAL_SPEC_FIELDS),
    Field(
        "memory_kind",
        "section",
        "the memory's kind: hbm (stacked beside the die: HBM2 to HBM3e), gddr (GDDR5 to GDDR7 on the board) or lpddr "
        "(LPDDR shared with the CPU); left out where no stored source names it",
        fields=MEMORY_KIND_SPEC,
    ),
    Field(
        "allocatable_gb",
        "section",
        "unified memory (shared with the CPU): what the GPU may really allocate of memory_gb by default (Apple's "
        "working-set limit, a mini-PC's firmware split), in memory_gb's unit; every fit decision uses it. Left out "
        "where the GPU has memory of its own",
        fields=SPEC,
        unit="GB",
    ),
    Field(
        "whole_machine",
        "boolean",
        "true when the GPU is sold only in a machine (a Mac, a mini-PC, a DGX Spark): its prices are the whole "
        "machine's, never a card's, and every table says so",
    ),
    Field("purchase", "sections", "purchase prices, the one the advisor uses first", fields=PURCHASE),
    Field("rentals", "sections", "cloud rental prices per GPU-hour", fields=RENTAL),
    Field(
        "memory_options",
        "sections",
        "the same machine or card sold with another memory size: each an entry of its own, every other value the "
        "entry's (a Mac of each memory it is sold with)",
        fields=MEMORY_OPTION,
    ),
    Field("note", "string", "anything a reader should know"),
)
SOURCE = (
    Field("what", "string", "what the source is", required=True),
    Field("url", "string", "where it is"),
    Field("repo", "string", "a repository (with path and commit)"),
    Field("path", "string", "a file in that repository"),
    Field("commit", "string", "the commit read"),
    Field("date", "date", "when it was published or read"),
    Field("reliability", "string", "how far to trust it"),
)
PROVIDER = (
    Field(
        "billing_seconds",
        "integer",
        "the billing increment: a session is billed in whole increments",
        required=True,
        minimum=1,
        maximum=86400,
        unit="s",
    ),
    Field(
        "minimum_seconds", "integer", "the least a session is billed", required=True, minimum=0, maximum=86400, unit="s"
    ),
    Field("source", "string", "a key of `sources` (or a URL)", required=True),
    Field("note", "string", "what the source says"),
)
CATALOG = (
    Field(
        "catalog_version",
        "integer",
        f"the catalog format's version ({CATALOG_VERSION})",
        required=True,
        minimum=1,
        maximum=CATALOG_VERSION,
    ),
    Field("as_of", "date", "when the catalog's prices were collected", required=True),
    Field("description", "string", "what the catalog is"),
    Field(
        "providers",
        "mapping",
        "how each cloud bills a rented GPU, by provider: {billing_seconds, "
        "minimum_seconds, source}; a provider not listed is taken as billed by the hour",
    ),
    Field("sources", "mapping", "every source, by key: {what, url or repo/path/commit, reliability}", required=True),
    Field("gpus", "sections", "the GPUs", required=True, fields=GPU),
    Field("notes", "text", "anything a reader should know"),
)


@dataclass(frozen=True)
class Spec:
    """One sourced value."""

    value: float | None
    source: str
    note: str = ""
    derived: bool = False


STALE_YEARS = 2  # a launch price older than this is not a price one can buy at today


@dataclass(frozen=True)
class Price:
    usd: float
    kind: str
    date: str
    source: str
    note: str = ""

    def stale(self, as_of: str) -> bool:
        """A launch price more than STALE_YEARS before ``as_of``: the GPU is likely not sold new at it. (Other kinds
        keep their date beside them, and the user judges.)"""
        years = int(as_of[:4]) - int(self.date[:4]) - (as_of[5:7] < self.date[5:7])
        return "launch" in self.kind.lower() and years >= STALE_YEARS


@dataclass(frozen=True)
class Billing:
    """How a provider bills a session: in whole increments, at least a minimum."""

    billing_seconds: int = int(SECONDS_PER_HOUR)
    minimum_seconds: int = 0
    source: str = "not in the catalog: billed by the hour assumed"


@dataclass(frozen=True)
class Rental:
    provider: str
    usd_per_hour: float
    kind: str
    date: str
    source: str
    note: str = ""

    @property
    def on_demand(self) -> bool:
        return self.kind in ON_DEMAND_KINDS


@dataclass(frozen=True)
class Gpu:
    """A catalog GPU, validated."""

    id: str
    name: str
    architecture: str
    segment: str
    launch_date: str
    specs: dict[str, Spec]
    aliases: tuple[str, ...] = ()
    purchase: tuple[Price, ...] = ()
    rentals: tuple[Rental, ...] = ()
    note: str = ""
    platform: str = Platform.CUDA.value  # the software platform (cuda, rocm, mps)
    allocatable: Spec | None = None  # unified memory: what the GPU may allocate of memory_gb
    whole_machine: bool = False  # sold only in a machine: its prices are the machine's
    memory_kind: str | None = None  # MEMORY_KINDS; None where no source names it

    def value(self, name: str) -> float | None:
        spec = self.specs.get(name)
        return None if spec is None else spec.value

    @property
    def usable_memory_gb(self) -> float | None:
        """The memory every fit decision counts (memory_gb's unit): a unified-memory GPU's allocatable share where the
        catalog gives it (None where that share's value is null: never the whole), else memory_gb."""
        if self.allocatable is not None:
            return self.allocatable.value
        return self.value("memory_gb")

    @property
    def price(self) -> Price | None:
        """The purchase price the catalog lists first."""
        return self.purchase[0] if self.purchase else None

    def current_price(self, as_of: str) -> Price | None:
        """The price the advisor uses on ``as_of``: the first that is not a stale launch price, else the first (then
        stale: shown, never recommended to buy at)."""
        fresh = [p for p in self.purchase if not p.stale(as_of)]
        return fresh[0] if fresh else self.price

    @property
    def best_rental(self) -> Rental | None:
        """The cheapest on-demand (or serverless, hosted) rental; spot and reserved prices are left out."""
        candidates = [r for r in self.rentals if r.on_demand]
        return min(candidates, key=lambda r: (r.usd_per_hour, r.provider)) if candidates else None

    @property
    def launch_year(self) -> int:
        return int(self.launch_date[:4])

    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True, eq=False)
class Catalog:
    as_of: str
    gpus: tuple[Gpu, ...]
    sources: dict[str, Any]
    origin: str
    notes: tuple[str, ...] = field(default=())
    billing: dict[str, Billing] = field(default_factory=dict)  # per provider
    widths: Widths = field(default_factory=Widths)  # the cross-validated ranges kept beside the catalog

    def by_id(self) -> dict[str, Gpu]:
        return {gpu.id: gpu for gpu in self.gpus}

    def billing_of(self, provider: str | None) -> Billing:
        """How a provider bills (by the hour when the catalog does not say)."""
        return self.billing.get(str(provider), Billing())

    def find(self, name: str) -> Gpu:
        """The GPU with this id or name (any spelling that normalises the same); else a one-line error naming
        the closest ids, each with its name."""
        gpu = self.match(name)
        if gpu is not None:
            return gpu
        by_spelling = {n: f"{gpu.id} ({gpu.name})" for gpu in self.gpus for n in (gpu.id, gpu.name)}
        near = list(dict.fromkeys(by_spelling[n] for n in names.closest(name, by_spelling)))
        hint = f"; closest: {', '.join(near)}" if near else ""
        raise AdvisorError(f"no GPU named {name!r} in the catalog{hint} (python -m advisor catalog lists them)")

    def match(self, name: str) -> Gpu | None:
        """The GPU whose id, name or alias normalises to the same text as ``name`` (None if none)."""
        return self._names.get(normalise_name(name))

    @functools.cached_property
    def _names(self) -> dict[str, Gpu]:
        """Every GPU by its id and each of its names, normalised (validation made them unique)."""
        names: dict[str, Gpu] = {}
        for gpu in self.gpus:
            for name in (gpu.id, *gpu.names()):
                names.setdefault(normalise_name(name), gpu)
        return names


_NOISE = re.compile(r"\b(nvidia|geforce|tesla|quadro)\b")


@functools.lru_cache(maxsize=65536)  # pure; a frame of 200,000 rows names a few hundred devices
def catalog_changed(path: str | Path) -> float:
    """When the catalog or the cross-validated widths beside it last changed (a sum of modification times): what a
    cache of the loaded catalog is keyed on."""
    files = (Path(path), Path(path).parent / "crossval.yaml")
    return sum(f.stat().st_mtime for f in files if f.exists())


def normalise_name(name: str) -> str:
    """'NVIDIA GeForce RTX 4090' and 'rtx-4090' both become 'rtx 4090'."""
    text = _NOISE.sub(" ", str(name).lower().replace("-", " ").replace("_", " "))
    return " ".join(text.split())


# --------------------------------------------------------------------------- loading


def validate(data: Any, file: str) -> tuple[list[Problem], list[Problem]]:
    """Problems and warnings of a parsed catalog (the fields, then sources, ids and names that must be unique)."""
    if not isinstance(data, dict):
        return [Problem(file, "", f"a catalog must be a YAML mapping, got {F.describe(data).split(' (')[0]}")], []
    c = F.Checker(file)
    F.check_section(c, data, CATALOG)
    sources = data.get("sources") if isinstance(data.get("sources"), dict) else {}
    F.check_mapping_of(c, sources, SOURCE, "sources")
    F.check_mapping_of(c, data.get("providers"), PROVIDER, "providers")
    gpus = data.get("gpus") if isinstance(data.get("gpus"), list) else []
    seen: dict[str, str] = {}
    for index, gpu in enumerate(gpus):
        if not isinstance(gpu, dict):
            continue
        path = f"gpus[{index}]"
        for key, value in _sourced_values(gpu, path):
            if not isinstance(value, str):
                continue
            if value not in sources and not value.startswith(("http://", "https://")):
                c.problem(key, f"unknown source {value!r} (add it to sources, or give a URL)")
        _check_unified(c, gpu, path)
        options = [o for o in gpu.get("memory_options") or [] if isinstance(o, dict)]
        for name, where in (
            *((name, path) for name in (gpu.get("id"), gpu.get("name"), *(gpu.get("aliases") or []))),
            *((o.get(k), f"{path}.memory_options[{i}]") for i, o in enumerate(options) for k in ("id", "name")),
        ):
            if not isinstance(name, str):
                continue
            key = normalise_name(name)
            if key in seen and seen[key] != where:
                c.problem(where, f"the name {name!r} is also used by {seen[key]}")
            seen.setdefault(key, where)
    return c.problems, c.warnings


WHOLE_MACHINE_WORDS = "whole machine"  # what a whole machine's price kind says, so that every table shows it


def _check_unified(c: F.Checker, gpu: dict, path: str) -> None:
    """A unified-memory GPU's allocatable share is at most its memory; a whole machine's prices say so."""
    allocatable, memory = (_number_in(gpu.get(name)) for name in ("allocatable_gb", "memory_gb"))
    if allocatable is not None and memory is not None and allocatable > memory:
        c.problem(f"{path}.allocatable_gb.value", f"{allocatable:g} GB is more than memory_gb ({memory:g})")
    options = [(i, o) for i, o in enumerate(gpu.get("memory_options") or []) if isinstance(o, dict)]
    for index, option in options:
        where = f"{path}.memory_options[{index}]"
        size, share = (_number(option.get(k)) for k in ("memory_gb", "allocatable_gb"))
        if allocatable is not None and share is None:
            c.problem(f"{where}.allocatable_gb", "required: the entry gives allocatable_gb (unified memory)")
        if share is not None and size is not None and share > size:
            c.problem(f"{where}.allocatable_gb", f"{share:g} GB is more than memory_gb ({size:g})")
    if gpu.get("whole_machine") is True:
        prices = [(f"{path}.purchase[{i}]", p) for i, p in enumerate(gpu.get("purchase") or [])]
        prices += [
            (f"{path}.memory_options[{i}].purchase[{j}]", p)
            for i, o in options
            for j, p in enumerate(o.get("purchase") or [])
        ]
        for where, price in prices:
            if isinstance(price, dict) and WHOLE_MACHINE_WORDS not in str(price.get("kind", "")):
                c.problem(
                    f"{where}.kind",
                    f"a whole machine's price must say '{WHOLE_MACHINE_WORDS}' (never mistaken for a card's price)",
                )


def _number(value: Any) -> float | None:
    """A number (None where it is missing or not one: the field table reports that)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _number_in(spec: Any) -> float | None:
    """A sourced value's number (None where it is missing or not a number: the field table reports that)."""
    return _number(spec.get("value")) if isinstance(spec, dict) else None


def _sourced_values(gpu: dict, path: str) -> list[tuple[str, Any]]:
    """(field path of a `source`, its value) for every sourced value of a GPU."""
    found = []
    for name, value in gpu.items():
        if isinstance(value, dict) and "source" in value:
            found.append((f"{path}.{name}.source", value["source"]))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict) and "source" in item:
                    found.append((f"{path}.{name}[{index}].source", item["source"]))
                if isinstance(item, dict) and name == "memory_options":
                    found += _sourced_values(item, f"{path}.{name}[{index}]")
    return found


def load_catalog(path: str | Path = DEFAULT_CATALOG) -> Catalog:
    """Read and validate the catalog; raise ProfileError (file, field, what is wrong) when it is not valid.

    The same bytes of the catalog and its widths file give the same (frozen) catalog again without parsing: a
    process that asks more than once (the app, a notebook, the tests' commands) saves 0.1-0.2 s each time, and an
    edited file is read again, whatever its time says."""
    raw = store.read_file_bytes(path)
    key = (str(path), raw, _bytes_or_none(Path(path).parent / widths.FILE_NAME))
    if key not in _LOADED:
        if len(_LOADED) >= 4:  # a few catalogs at most: a user's, the shipped one, a test's
            _LOADED.clear()
        _LOADED[key] = _parsed_catalog(path, raw)
    return _LOADED[key]


_LOADED: dict[tuple[str, bytes, bytes | None], Catalog] = {}


def _bytes_or_none(path: Path) -> bytes | None:
    try:
        return store.read_file_bytes(path)
    except ProfileError:
        return None


def _parsed_catalog(path: str | Path, raw: bytes) -> Catalog:
    origin = str(path)
    data = store.parse_yaml(raw, origin)
    problems, _ = validate(data, origin)
    if problems:
        raise ProfileError(problems)
    return Catalog(
        as_of=_text(data["as_of"]),
        gpus=tuple(_gpu(item) for item in with_memory_options(data["gpus"])),
        sources=data["sources"],
        origin=origin,
        notes=tuple([data["notes"]] if isinstance(data.get("notes"), str) else data.get("notes") or ()),
        widths=widths.load(Path(path).parent / widths.FILE_NAME),
        billing={
            name: Billing(int(p["billing_seconds"]), int(p["minimum_seconds"]), str(p["source"]))
            for name, p in (data.get("providers") or {}).items()
        },
    )


def with_memory_options(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The catalog's entries with each memory option an entry of its own after its own: the entry's values, its id,
    name, memory (and what the GPU may allocate of it, with the entry's source and note) and prices the option's,
    no aliases (a driver reports the chip, and the entry is the one it matches)."""
    found = []
    for item in items:
        found.append(item)
        for option in item.get("memory_options") or ():
            copy = {k: v for k, v in item.items() if k not in ("memory_options", "aliases", "purchase", "rentals")}
            copy.update(id=option["id"], name=option["name"], purchase=option.get("purchase") or [])
            copy["memory_gb"] = dict(item["memory_gb"], value=option["memory_gb"], source=option["source"])
            if item.get("allocatable_gb"):
                copy["allocatable_gb"] = dict(item["allocatable_gb"], value=option["allocatable_gb"])
            found.append(copy)
    return found


def _text(value: Any) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _gpu(item: dict[str, Any]) -> Gpu:
    specs = {name: _spec_of(item[name]) for name, _, _ in SPEC_FIELDS}
    specs.update({name: _spec_of(item[name]) for name, _, _ in OPTIONAL_SPEC_FIELDS if name in item})
    return Gpu(
        id=item["id"],
        name=item["name"],
        architecture=item["architecture"],
        segment=item["segment"],
        launch_date=_text(item["launch_date"]["value"]),
        specs=specs,
        aliases=tuple(item.get("aliases") or ()),
        purchase=tuple(
            Price(float(p["usd"]), p["kind"], _text(p["date"]), p["source"], p.get("note") or "")
            for p in item.get("purchase") or ()
        ),
        rentals=tuple(
            Rental(
                r["provider"], float(r["usd_per_hour"]), r["kind"], _text(r["date"]), r["source"], r.get("note") or ""
            )
            for r in item.get("rentals") or ()
        ),
        note=item.get("note") or "",
        platform=item.get("platform") or Platform.CUDA.value,
        allocatable=_spec_of(item["allocatable_gb"]) if item.get("allocatable_gb") else None,
        whole_machine=bool(item.get("whole_machine")),
        memory_kind=item["memory_kind"]["value"] if item.get("memory_kind") else None,
    )


def _spec_of(entry: dict[str, Any]) -> Spec:
    return Spec(
        value=None if entry.get("value") is None else float(entry["value"]),
        source=str(entry["source"]),
        note=str(entry.get("note") or ""),
        derived=bool(entry.get("derived")),
    )


EVERY_GPU = "every GPU and machine"
WHOLE_MACHINES = "whole machines only"  # a Mac, a mini-PC, a DGX Spark: the GPU with the computer around it


def hardware_choices() -> tuple[str, ...]:
    """What a buyer may narrow the catalog to: everything, one vendor's GPUs (by the platform they run), or the
    whole machines."""
    return (EVERY_GPU, *dict.fromkeys(PLATFORM_VENDORS.values()), WHOLE_MACHINES)


def gpu_ids_of(catalog: Catalog, choice: str) -> tuple[str, ...] | None:
    """The catalog GPUs of one of :func:`hardware_choices` (None: every one); an unknown choice is an error."""
    if choice == EVERY_GPU:
        return None
    if choice == WHOLE_MACHINES:
        return tuple(gpu.id for gpu in catalog.gpus if gpu.whole_machine)
    if choice not in PLATFORM_VENDORS.values():
        raise AdvisorError(f"hardware: {choice!r} is not one of {', '.join(hardware_choices())}")
    return tuple(gpu.id for gpu in catalog.gpus if PLATFORM_VENDORS[Platform(gpu.platform)] == choice)


def catalog_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """One JSON-ready row per GPU (``catalog --json``): its specs, its first price and its cheapest rental."""
    rows = []
    for gpu in catalog.gpus:
        price, rental = gpu.price, gpu.best_rental
        rows.append(
            {
                "id": gpu.id,
                "name": gpu.name,
                "architecture": gpu.architecture,
                "segment": gpu.segment,
                "platform": gpu.platform,
                "launch_date": gpu.launch_date,
                **{name: gpu.value(name) for name, _, _ in (*SPEC_FIELDS, *OPTIONAL_SPEC_FIELDS)},
                "allocatable_gb": gpu.allocatable.value if gpu.allocatable else None,
                "whole_machine": gpu.whole_machine,
                "price_usd": price.usd if price else None,
                "price_kind": price.kind if price else None,
                "price_date": price.date if price else None,
                "rental_usd_per_hour": rental.usd_per_hour if rental else None,
                "rental_provider": rental.provider if rental else None,
                "rental_date": rental.date if rental else None,
                "sources": {name: spec.source for name, spec in gpu.specs.items()},
            }
        )
    return rows


def json_schema() -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "advisor GPU catalog",
        **F.section_schema(CATALOG),
    }
