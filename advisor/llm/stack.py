"""The training stack as part of the job: the choices a fine-tuning library makes by default that decide its memory
and time (the loss, activation checkpointing and offloading, where the optimizer's states live, the optimizer step in
the backward pass, bf16 master weights), read from ``advisor/data/stacks.yaml`` with where each default is
written, and overridden one choice at a time.

``CHOICES`` is the one table of the choices: the stacks file is checked against it, the command line's flags and the
app's inputs are made from it, and :func:`apply` puts the chosen ones on a :class:`~advisor.llm.job.TrainingJob`.
Pure, but for :func:`load_stacks` (one packaged file).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import StrEnum
from functools import lru_cache
from importlib import resources
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.format import names
from advisor.llm.config import ModelConfig
from advisor.llm.job import (
    DEFAULT_RANK,
    OPTIMIZER_STATE_BYTES,
    Checkpointing,
    JobRequest,
    Loss,
    Method,
    StatePlace,
    TrainingJob,
    job_from_options,
)
from advisor.store.parse import safe_load

STACKS_FILE = "stacks.yaml"
STACKS_VERSION = 1


class Switch(StrEnum):
    ON = "on"
    OFF = "off"


@dataclass(frozen=True)
class Choice:
    """One choice a stack makes: its field, its allowed words, the command line's flag and what it means."""

    name: str
    words: tuple[str, ...]  # empty: any optimizer name OPTIMIZER_STATE_BYTES knows
    flag: str
    help: str

    def parse(self, value: Any, where: str) -> Any:
        """The typed value of a word from the stacks file or a flag; a clear error naming ``where`` for a wrong one."""
        words = self.words or tuple(OPTIMIZER_STATE_BYTES)
        text = ("on" if value else "off") if isinstance(value, bool) and self.words == SWITCH else str(value).lower()
        if text not in words:
            raise AdvisorError(f"{where}: {self.name} must be one of {', '.join(words)}, got {value!r}")
        if self.words == SWITCH:
            return text == Switch.ON
        return {"loss": Loss, "optimizer_states": StatePlace}.get(self.name, str)(text)


SWITCH = tuple(s.value for s in Switch)
CHOICES = (
    Choice(
        "loss",
        tuple(v.value for v in Loss),
        "--loss",
        "fp32-logits: the whole logits and their fp32 copy (Transformers' default loss); 16bit-logits: the "
        "cross-entropy on the 16-bit logits; chunked: a chunk of tokens at a time; fused: a fused linear "
        "cross-entropy that never holds them",
    ),
    Choice(
        "checkpointing",
        SWITCH,
        "--checkpointing",
        "activation checkpointing: keep each block's input, recompute the block in the backward pass",
    ),
    Choice(
        "activation_offloading",
        SWITCH,
        "--activation-offloading",
        "what the backward pass keeps goes to the host's memory (two blocks in flight on the GPU)",
    ),
    Choice(
        "optimizer_states",
        tuple(v.value for v in StatePlace),
        "--optimizer-states",
        "resident on the GPU; paged (bitsandbytes' paged optimizers, paged out to the host under pressure); "
        "offloaded (states and step on the CPU)",
    ),
    Choice(
        "optimizer_in_backward",
        SWITCH,
        "--optimizer-in-backward",
        "each parameter's step as soon as its gradient is ready, the gradient freed (gradient accumulation 1)",
    ),
    Choice(
        "compile",
        SWITCH,
        "--compile",
        "torch.compile over the model: its fused kernels keep fewer activations for the backward pass (the "
        "norms' and the MLP's element-wise work recomputed there)",
    ),
    Choice("pure_bf16", SWITCH, "--pure-bf16", "weights, gradients and optimizer states in bf16, no fp32 master copy"),
    Choice("optimizer", (), "--optimizer", "the optimizer (the stack's recipe's where not given)"),
    Choice(
        "fp8",
        SWITCH,
        "--fp8",
        "the linear layers' matmuls in FP8 (Transformer Engine): the speed NVIDIA's tuned stack reaches, fitted "
        "on its published runs (Hopper and Blackwell only); the block weights stored in one byte (NeMo's "
        "fp8_params)",
    ),
    Choice(
        "tensor_parallel",
        SWITCH,
        "--tensor-parallel",
        "with several GPUs, the model split over them as Megatron does: tensor and sequence parallelism within "
        "a node, pipeline stages past it, the fewest GPUs (a power of two) the job fits on; the rest data "
        "parallel with the optimizer's fp32 states sharded (the distributed optimizer)",
    ),
)
BY_NAME = {c.name: c for c in CHOICES}


@dataclass(frozen=True)
class Choices:
    """What a job's stack does, once every default and override is applied."""

    loss: Loss = Loss.FP32_LOGITS
    checkpointing: bool = False
    activation_offloading: bool = False
    optimizer_states: StatePlace = StatePlace.RESIDENT
    optimizer_in_backward: bool = False
    compile: bool = False
    pure_bf16: bool = False
    optimizer: str = "adamw"
    fp8: bool = False
    tensor_parallel: bool = False

    def words(self) -> dict[str, str]:
        """Each choice as the stacks file and the flags write it."""
        return {
            f.name: (("on" if v else "off") if isinstance(v := getattr(self, f.name), bool) else str(v))
            for f in fields(self)
        }


@dataclass(frozen=True)
class Stack:
    """A training stack: its name, its choices (and those it makes differently for full fine-tuning), and where each
    default is written."""

    name: str
    title: str
    choices: Choices
    full: Choices
    sources: dict[str, str]
    loads_16bit: bool = False  # QLoRA's 16-bit weights on the GPU while loading, before they are quantized
    double_quant: bool = False  # QLoRA's 4-bit blocks' scales quantized too
    persistent_gradients: bool = False  # every gradient kept in one buffer allocated for the whole run
    transformer_engine: bool = False  # the blocks are Transformer Engine's fused modules (what they keep: memory)
    keeps_4bit_inputs: bool = False  # QLoRA: each 4-bit layer keeps its input (bitsandbytes before July 2024)
    unties_embeddings: bool = False  # its model keeps an output layer of its own where the model ties it
    shares_adapter_inputs: bool = False  # LoRA: its adapters keep their layer's input itself, once per input
    of: str = ""  # a past version's: the stack it is an earlier version of (checked on its peaks, never offered)

    def choices_for(self, method: Method) -> Choices:
        return self.full if method == Method.FULL else self.choices

    def full_differences(self) -> dict[str, str]:
        """The choices it makes differently for full fine-tuning, in the flags' words."""
        words = self.choices.words()
        return {k: v for k, v in self.full.words().items() if words[k] != v}

    def sources_text(self) -> str:
        """'loss: ...; checkpointing: ...': where each default is written."""
        return "; ".join(f"{k}: {v}" for k, v in self.sources.items())


def _choices(entry: dict[str, Any], base: Choices, where: str) -> Choices:
    return replace(base, **{name: BY_NAME[name].parse(value, f"{where}.{name}") for name, value in entry.items()})


# What a stack does that is not a choice of the job (no flag overrides it), each a field of the stack's entry
FLAGS = (
    "loads_16bit",
    "double_quant",
    "persistent_gradients",
    "transformer_engine",
    "keeps_4bit_inputs",
    "unties_embeddings",
    "shares_adapter_inputs",
)


@lru_cache(maxsize=1)
def _stacks_file() -> dict:
    where = f"advisor/data/{STACKS_FILE}"
    data = safe_load(resources.files("advisor").joinpath("data", STACKS_FILE).read_text(encoding="utf-8"))
    if data.get("stacks_version") != STACKS_VERSION:
        raise AdvisorError(f"{where}: stacks_version must be {STACKS_VERSION}")
    return data


def _stack(name: str, entry: dict[str, Any], where: str, extra: tuple[str, ...] = ()) -> Stack:
    """One stack's entry, every choice written out and nothing the table does not know."""
    known = set(BY_NAME) | {"title", "full", "sources", *FLAGS, *extra}
    unknown = set(entry) - known
    if unknown:
        raise AdvisorError(f"{where}: unknown field(s) {sorted(unknown)}")
    missing = set(BY_NAME) - set(entry)
    if missing:
        raise AdvisorError(f"{where}: every choice is written out; missing {sorted(missing)}")
    own = _choices({k: v for k, v in entry.items() if k in BY_NAME}, Choices(), where)
    full = _choices(entry.get("full") or {}, own, f"{where}.full")
    return Stack(
        name,
        entry["title"],
        own,
        full,
        dict(entry.get("sources") or {}),
        **{flag: bool(entry.get(flag, False)) for flag in FLAGS},
        of=str(entry.get("of", "")),
    )


@lru_cache(maxsize=1)
def load_stacks() -> tuple[str, str, dict[str, Stack]]:
    """(the default stack's name, why it is the default, the stacks by name) from the packaged file."""
    where = f"advisor/data/{STACKS_FILE}"
    data = _stacks_file()
    stacks = {name: _stack(name, entry, f"{where}: stacks.{name}") for name, entry in data["stacks"].items()}
    if data["default"] not in stacks:
        raise AdvisorError(f"{where}: default {data['default']!r} is not one of the stacks")
    return data["default"], " ".join(str(data["default_why"]).split()), stacks


@lru_cache(maxsize=1)
def load_past_versions() -> dict[str, Stack]:
    """The earlier versions of stacks whose published peaks the memory check still reads (each with its own
    constants: its code kept other memory), by name; never offered as a ``--stack``."""
    where = f"advisor/data/{STACKS_FILE}"
    offered = load_stacks()[2]
    past = {
        name: _stack(name, entry, f"{where}: past_versions.{name}", ("of",))
        for name, entry in (_stacks_file().get("past_versions") or {}).items()
    }
    for name, found in past.items():
        if found.of not in offered or name in offered:
            raise AdvisorError(
                f"{where}: past_versions.{name}: 'of' must name one of the stacks, and the name be its own"
            )
    return past


def default_stack() -> str:
    return load_stacks()[0]


def stack_named(name: str | None, past: bool = False) -> Stack:
    """The stack of that name (None: the default; ``past``: a past version's name too, as the published peaks name
    them); an unknown one lists the known."""
    default, _, stacks = load_stacks()
    wanted = (name or default).strip().lower()
    past_versions = load_past_versions() if past else {}
    if wanted in past_versions:
        return past_versions[wanted]
    if wanted not in stacks:
        raise InputError("stack", names.unknown_text("stack", name, stacks, "python -m advisor stacks lists them"))
    return stacks[wanted]


def resolve(stack: Stack, method: Method, overrides: dict[str, Any]) -> Choices:
    """The stack's choices for the method with each given override (None: the stack's) in its place."""
    given = {k: BY_NAME[k].parse(v, BY_NAME[k].flag) for k, v in overrides.items() if v is not None}
    return replace(stack.choices_for(method), **given)


def apply(job: TrainingJob, choices: Choices, stack: str) -> TrainingJob:
    """The job run with these choices; a combination no stack can run is refused with one line saying why."""
    if choices.optimizer_in_backward and job.grad_accum > 1:
        raise InputError(
            "optimizer_in_backward",
            f"on in {stack}'s choices for this method, it frees each gradient as soon as its step is taken, so it "
            f"cannot accumulate gradients over {job.grad_accum} micro-batches: accumulate over 1, or turn it off",
        )
    if choices.optimizer_in_backward and choices.optimizer_states == StatePlace.OFFLOADED:
        raise InputError(
            "optimizer_in_backward",
            "runs each step on the GPU during the backward pass: it cannot run with the optimizer's states "
            "offloaded (the step on the CPU after it)",
        )
    found = stack_named(stack, past=True)
    return replace(
        job,
        checkpointing=choices.checkpointing,
        loss=choices.loss,
        activation_offloading=choices.activation_offloading,
        optimizer_states=choices.optimizer_states,
        optimizer_in_backward=choices.optimizer_in_backward,
        compiled=choices.compile,
        optimizer=choices.optimizer,
        fp8=choices.fp8,
        tensor_parallel=choices.tensor_parallel,
        stack=stack,
        **{flag: getattr(found, flag) for flag in FLAGS},
    )


@dataclass(frozen=True)
class JobShape:
    """What is trained and how much, before the stack: the model, the method, a micro-batch of sequences, the
    run's tokens (0: one step's)."""

    model: ModelConfig
    method: str = Method.LORA.value
    seq_len: int = 2048
    batch: int = 1
    grad_accum: int = 1
    tokens: float = 0.0
    lora_rank: int = DEFAULT_RANK
    lora_targets: str = "all-linear"


def job_request(
    shape: JobShape,
    stack_name: str | None = None,
    overrides: dict[str, Any] | None = None,
    checkpointing: str | None = None,
    devices: int = 1,
    sharded: bool = False,
    gpu_ids: tuple[str, ...] | None = None,
) -> JobRequest:
    """The one way a language-model job is asked for (the command line's options and the app's inputs): the job run
    with its stack's choices and the overrides given (None: the stack's); ``checkpointing`` auto: decided per GPU,
    None: the stack's."""
    job = job_from_options(
        shape.model,
        shape.method,
        shape.seq_len,
        shape.batch,
        shape.grad_accum,
        shape.tokens,
        lora_rank=shape.lora_rank,
        lora_targets=shape.lora_targets,
    )
    chosen = stack_named(stack_name)
    given = dict(overrides or {})
    given["checkpointing"] = None if checkpointing in (None, Checkpointing.AUTO) else checkpointing
    choices = resolve(chosen, job.method, given)
    job = apply(job, choices, chosen.name)
    mode = (
        Checkpointing(checkpointing)
        if checkpointing
        else (Checkpointing.ON if job.checkpointing else Checkpointing.OFF)
    )
    return JobRequest(job, mode, int(devices), bool(sharded), choices.pure_bf16, gpu_ids)


def stack_rows() -> list[dict[str, Any]]:
    """``advisor stacks --json``: one object per stack (the offered ones, then the past versions the memory check
    reads): its choices in the flags' words, those it makes differently for full fine-tuning, what it does beside
    them, where each default is written, and whether it is the default or a past version of another."""
    default, _, stacks = load_stacks()
    rows = []
    for found in (*stacks.values(), *load_past_versions().values()):
        rows.append(
            {
                "name": found.name,
                "title": found.title,
                "default": found.name == default,
                "past_version_of": found.of or None,
                "choices": found.choices.words(),
                "full_fine_tuning": found.full_differences(),
                **{flag: getattr(found, flag) for flag in FLAGS},
                "sources": dict(found.sources),
            }
        )
    return rows


def markdown_reference() -> str:
    """The reference's table of the stacks: each one's choices (and those it makes differently for full fine-tuning),
    the default and why, and where each default is written (``docs/reference.md``, tested against this)."""
    default, why, stacks = load_stacks()
    choice_names = [c.name for c in CHOICES]
    lines = [
        "| stack | " + " | ".join(c.flag for c in CHOICES) + " | full fine-tuning |",
        "|---|" + "---|" * (len(choice_names) + 1),
    ]
    for found in stacks.values():
        words, full = found.choices.words(), found.full_differences()
        mark = " (default)" if found.name == default else ""
        lines.append(
            f"| `{found.name}`{mark}: {found.title} | "
            + " | ".join(words[n] for n in choice_names)
            + " | "
            + (", ".join(f"{k} {v}" for k, v in full.items()) or "the same")
            + " |"
        )
    lines += ["", f"The default, `{default}`: {why}", "", "Where each default is written:", ""]
    for found in stacks.values():
        lines.append(f"- `{found.name}`: {found.sources_text()}")
    past = load_past_versions()
    if past:
        lines += [
            "",
            "Past versions, whose published peaks the memory check reads with constants of their own "
            "(not offered as `--stack`):",
            "",
        ]
        for found in past.values():
            lines.append(f"- `{found.name}`, an earlier `{found.of}`: {found.title}; {found.sources_text()}")
    return "\n".join(lines) + "\n"
