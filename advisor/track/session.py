"""The framework-free part of tracking: the step clock, its statistics and the tracked profile.

An adapter (PyTorch, Lightning, Hugging Face, Keras) tells a :class:`Session` when a step starts, how long it
waited for data, how many samples and tokens it trained on, and when it ended (after synchronising the device);
the session keeps one :class:`StepRecord` per optimizer step. At the end, :func:`summarise` turns the records into
steady-state statistics (the warm-up steps, the step whose FLOPs were counted and the steps next to an evaluation,
a checkpoint or an epoch's end left out) and :func:`tracked_profile` into a profile of kind ``tracked``.

Pure Python: no framework is imported here (tests/test_imports.py checks).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor import store
from advisor.errors import AdvisorError
from advisor.format import typed
from advisor.format.vocabulary import DeviceKind, WorkloadKind
from advisor.measure import hardware
from advisor.measure.profile import price_section, profile_document
from advisor.measure.timing import SteadyStats, stats_of
from advisor.perf.peak_share import share_of_peak
from advisor.store.catalog import load_catalog

MIN_STEADY_STEPS = 5  # fewer steady steps than this and no profile is written: nothing would be known
FEW_STEADY_STEPS = 20  # fewer steady steps than this: a warning (the spread itself is uncertain)
BUSY_OTHER_CORES = 0.5  # other processes using this many cores on average during the run: a warning


class TrackError(AdvisorError):
    """A use of advisor.track that cannot give a profile (said in one line before any training runs)."""


@dataclass
class Options:
    """What the user told the tracker (the same for every adapter)."""

    name: str | None = None  # the profile's name (default: the device's name and the model's class)
    out: str | Path = "profiles"  # the folder the profile is written to
    workload: str | None = None  # the workload's name (default: the model's class)
    warmup_steps: int = 3  # steps timed apart before the steady ones
    steps: int | None = None  # the run's planned optimizer steps
    epochs: int | None = None  # or its planned epochs (with steps_per_epoch, or a loader's length)
    steps_per_epoch: int | None = None
    price_usd: float | None = None
    price_usd_per_hour: float | None = None
    price_note: str | None = None
    power_watts: float | None = None
    count_flops: bool = True  # count one step's FLOPs and activations (that step is not timed)
    overwrite: bool = False  # replace a profile of the same id (otherwise the next free id is taken)
    enabled: bool = True  # False: the tracker does nothing at all
    quiet: bool = False  # no summary line at the end

    def check(self) -> None:
        """Refuse options that cannot work, before the training starts."""
        for label, value in (
            ("warmup_steps", self.warmup_steps),
            ("steps", self.steps),
            ("epochs", self.epochs),
            ("steps_per_epoch", self.steps_per_epoch),
        ):
            minimum = 0 if label == "warmup_steps" else 1
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
                raise TrackError(f"advisor.track: {label} must be a whole number of at least {minimum}, got {value!r}")
        for label, value in (
            ("price_usd", self.price_usd),
            ("price_usd_per_hour", self.price_usd_per_hour),
            ("power_watts", self.power_watts),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0
            ):
                raise TrackError(f"advisor.track: {label} must be a number, 0 or more; got {value!r}")
        if self.name is not None and not store.slugify(str(self.name)):
            raise TrackError(f"advisor.track: name {self.name!r} has no letter or digit to name the file by")
        if self.enabled:
            store.check_writable_folder(self.out)


@dataclass(slots=True)
class StepRecord:
    """One optimizer step (or a Keras execution of several): its wall time, what it waited, what it trained on."""

    seconds: float  # from the request of its first batch to its end, the device synchronised
    wait: float | None  # waiting for its batches (None where the loop does not show it: Keras fit)
    samples: int
    tokens: int | None = None
    steps: int = 1  # optimizer steps it spans (Keras steps_per_execution)
    micro_batches: int = 1  # micro-batches it accumulated
    clean: bool = True  # no evaluation, checkpoint, epoch boundary or pause inside it
    counted: bool = False  # its FLOPs were counted: the counters slowed it, it is not timed


@dataclass
class Counted:
    """What the counted step found: FLOPs by kind, the bytes kept for the backward pass, its precision."""

    flops_by_kind: dict[str, float]  # matmul, attention
    samples: int
    micro_batches: int = 1
    activation_bytes: float | None = None  # kept for the backward pass, per micro-batch
    activation_values: float | None = None
    output_values: float | None = None  # the model's output values (logits, a softmax), per micro-batch
    precision: str | None = None
    method: str = ""
    not_counted: list[str] = field(default_factory=list)
    recurrent_steps: int | None = None  # dependent steps of a recurrent phase (Keras RNN layers)
    operations: int | None = None  # operations of the whole step that launch a kernel (PyTorch's dispatcher)


class Session:
    """The step clock of one tracked run."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.records: list[StepRecord] = []
        self.steps_done = 0  # optimizer steps recorded so far (kept, not summed: it is read every step)
        self.counted: Counted | None = None
        self.in_step = False
        self.step_start = 0.0
        self.wait = 0.0
        self.samples = 0
        self.tokens: int | None = None
        self.micro_batches = 0
        self.clean = True
        self.paused = 0.0
        self.counting = False
        self.interrupted = False
        self.cpu = hardware.CpuUsageMonitor()  # other processes' load during the run: a warning when busy
        self.cpu.__enter__()

    now = staticmethod(time.perf_counter)  # the step clock (called a few times a step: no wrapper)

    def should_count(self) -> bool:
        """Whether the step about to start is the one whose FLOPs are counted: the first after the warm-up."""
        return self.options.count_flops and self.counted is None and self.steps_done == self.options.warmup_steps

    def begin(self, at: float) -> None:
        """A step starts (its first batch is requested) at ``at``, unless one is under way."""
        if not self.in_step:
            self.in_step, self.step_start = True, at
            self.wait, self.samples, self.tokens, self.micro_batches, self.paused = 0.0, 0, None, 0, 0.0

    def cancel(self) -> None:
        """No step after all (the loader ran out before a batch): the next step crosses a boundary."""
        if self.in_step and self.micro_batches == 0 and not self.counting:
            self.in_step = False
        self.clean = False

    def add_batch(self, samples: int, tokens: int | None) -> None:
        """A micro-batch of the current step: its samples and tokens (None where the inputs have no length)."""
        self.samples += samples
        self.micro_batches += 1
        if tokens is not None:
            self.tokens = (self.tokens or 0) + tokens

    def add_wait(self, seconds: float) -> None:
        self.wait += max(seconds, 0.0)

    def add_pause(self, seconds: float) -> None:
        """Time inside the step that is not training (an evaluation the loop ran mid-step): left out."""
        self.paused += max(seconds, 0.0)
        self.clean = False

    def mark_unclean(self) -> None:
        """An evaluation, a checkpoint or an epoch boundary touched the current (or next) step."""
        self.clean = False

    def end(self, at: float, steps: int = 1, wait_known: bool = True) -> StepRecord | None:
        """The current step ends at ``at`` (the device synchronised); None when no step was under way."""
        if not self.in_step:
            return None
        record = StepRecord(
            seconds=max(at - self.step_start - self.paused, 0.0),
            wait=self.wait if wait_known else None,
            samples=self.samples,
            tokens=self.tokens,
            steps=steps,
            micro_batches=max(self.micro_batches, 1),
            clean=self.clean,
            counted=self.counting,
        )
        self.add(record)
        self.in_step, self.clean, self.counting = False, True, False
        return record

    def add(self, record: StepRecord) -> None:
        """Keep a finished step (Keras adds its executions directly)."""
        self.records.append(record)
        self.steps_done += record.steps

    def close(self) -> None:
        self.cpu.__exit__(None, None, None)


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class Summary:
    """The steady state of a tracked run."""

    steady: list[StepRecord]
    warmup: int
    steps_done: int
    step: SteadyStats  # seconds per optimizer step over the steady steps (measure's type for its epochs)
    samples_per_step: float
    tokens_per_step: float | None
    wait_share: float | None
    wait_per_step: float | None

    @property
    def steady_steps(self) -> int:
        return sum(r.steps for r in self.steady)

    @property
    def samples_per_second(self) -> float:
        return self.samples_per_step / self.step.mean

    @property
    def tokens_per_second(self) -> float | None:
        return self.tokens_per_step / self.step.mean if self.tokens_per_step else None


def summarise(records: list[StepRecord], warmup: int) -> Summary | str:
    """The steady statistics of a run's steps (per optimizer step), or why there are none (a sentence)."""
    if not records:
        return "no optimizer step was seen (call run.step() after each optimizer step)"
    done, seen, steady = sum(r.steps for r in records), 0, []
    for record in records:
        if seen >= warmup and record.clean and not record.counted and record.samples > 0 and record.seconds > 0:
            steady.append(record)
        seen += record.steps
    steady_steps = sum(r.steps for r in steady)
    if steady_steps < MIN_STEADY_STEPS:
        return (
            f"{done} optimizer step(s) ran, {steady_steps} of them steady (after {warmup} warm-up step(s), "
            f"the counted one and those next to an evaluation, a checkpoint or an epoch's end): at least "
            f"{MIN_STEADY_STEPS} steady steps are needed to time a step"
        )
    per_step = [r.seconds / r.steps for r in steady for _ in range(r.steps)]
    samples = [r.samples / r.steps for r in steady]
    tokens = [r.tokens / r.steps for r in steady if r.tokens]
    waits = [r for r in steady if r.wait is not None]
    total = sum(r.seconds for r in waits)
    wait_share = sum(r.wait for r in waits) / total if waits and total > 0 else None  # type: ignore[misc]
    wait_per_step = sum(r.wait for r in waits) / sum(r.steps for r in waits) if waits else None  # type: ignore[misc]
    return Summary(
        steady=steady,
        warmup=warmup,
        steps_done=done,
        step=stats_of(per_step),  # type: ignore[arg-type]  # never None: MIN_STEADY_STEPS were timed
        samples_per_step=statistics.median(samples),
        tokens_per_step=statistics.median(tokens) if tokens else None,
        wait_share=wait_share,
        wait_per_step=wait_per_step,
    )


def noise_warnings(summary: Summary, other_load: float | None) -> list[str]:
    """What makes the steady time less certain, in sentences."""
    found = []
    if summary.step.noisy:
        found.append(
            f"the steady steps vary by {summary.step.relative_stdev:.0%} (stdev / median): another "
            "process may be using the device, or the steps differ in size"
        )
    count = summary.steady_steps
    if count < FEW_STEADY_STEPS:
        found.append(
            f"only {count} steady steps were timed: their spread is itself uncertain (track {FEW_STEADY_STEPS} or more)"
        )
    if other_load is not None and other_load > BUSY_OTHER_CORES:
        found.append(
            f"other processes used {other_load:.1f} CPU cores on average during the run: the time may "
            "be slower than on a quiet machine"
        )
    return found


# --------------------------------------------------------------------------- the profile


@dataclass
class RunFacts:
    """What the adapter read of the run: the device, the software, the model and its planned length."""

    device: dict[str, Any]  # kind, name, count, memory_gb...
    software: dict[str, Any]
    precision: str
    model_class: str
    parameters: int
    trainable_parameters: int
    optimizer: str
    identity: list[Any]  # what identifies the model (its parameters' shapes and dtypes...), hashed
    planned_steps: int | None = None
    planned_epochs: int | None = None
    steps_per_epoch: int | None = None
    memory: dict[str, Any] | None = None
    checks: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    wait_method: str = ""
    command: str = ""


def planned_length(options: Options, facts: RunFacts, done: int) -> tuple[int, int, int, str | None]:
    """(steps of the run, epochs, steps an epoch, a note when the length was not given): the options first, then
    what the loop knows (a trainer's planned steps, a loader's length), else the steps tracked."""
    per_epoch = options.steps_per_epoch or facts.steps_per_epoch
    epochs = options.epochs or facts.planned_epochs
    if options.steps:
        return options.steps, 1, options.steps, None
    if epochs and per_epoch:
        return epochs * per_epoch, epochs, per_epoch, None
    if facts.planned_steps:
        return facts.planned_steps, 1, facts.planned_steps, None
    note = (
        f"The run's length was not given (steps= or epochs= with steps_per_epoch=): the profile's total is "
        f"the {done} steps tracked."
    )
    return done, 1, done, note


def model_hash(facts: RunFacts, samples_per_step: float, tokens_per_step: float | None) -> str:
    """The model's identity with its batch: two runs share a workload when these agree."""
    tokens = round(tokens_per_step) if tokens_per_step else None
    text = repr((facts.model_class, facts.identity, round(samples_per_step), tokens))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _phases(counted: Counted | None, samples: float) -> tuple[list[dict[str, Any]], float]:
    """The workload's phases per sample from the counted step, and the training FLOPs of one step."""
    if counted is None or counted.samples <= 0:
        return [{"kind": "matmul", "flops_per_sample": 0.0, "note": "FLOPs not counted (count_flops=False)"}], 0.0
    per_sample = {kind: flops / counted.samples for kind, flops in counted.flops_by_kind.items() if flops > 0}
    phases = []
    for kind in ("matmul", "attention", "recurrent"):
        if kind in per_sample:
            phase: dict[str, Any] = {"kind": kind, "flops_per_sample": _sig(per_sample[kind]), "note": counted.method}
            if kind == "recurrent" and counted.recurrent_steps:
                phase["sequential_steps"] = counted.recurrent_steps
            phases.append(phase)
    if counted.activation_values:
        micro_samples = counted.samples / max(counted.micro_batches, 1)
        phases.append(
            {
                "kind": "elementwise",
                "flops_per_sample": 0.0,
                "activations_per_sample": _sig(counted.activation_values / micro_samples),
                "note": "the values kept for the backward pass (memory traffic)",
            }
        )
    if not phases:
        phases.append({"kind": "matmul", "flops_per_sample": 0.0, "note": "no matmul, convolution or attention ran"})
    return phases, sum(per_sample.values()) * samples


def _sig(value: float, digits: int = 6) -> float:
    return float(f"{value:.{digits}g}")


def tracked_profile(
    options: Options,
    facts: RunFacts,
    summary: Summary,
    counted: Counted | None,
    other_load: float | None,
    interrupted: bool,
) -> dict[str, Any]:
    """The profile of a tracked run (schema :data:`~advisor.format.schema.SCHEMA_VERSION`, workload kind tracked)."""
    steps, epochs, per_epoch, length_note = planned_length(options, facts, summary.steps_done)
    workload, flops_per_step = _workload_section(options, facts, summary, counted, (steps, epochs, per_epoch))
    result = _result_section(facts, summary, other_load, steps, flops_per_step)
    name = options.name or f"{facts.device['name']} ({facts.model_class})"
    profile_id = store.slugify(name) if options.overwrite else store.unique_slug(Path(options.out), name)
    notes = list(facts.notes)
    if length_note:
        notes.append(length_note)
    if interrupted:
        notes.append(
            f"Interrupted (Ctrl-C) after {summary.steps_done} steps: the profile holds the steps done; the "
            "total is the planned run at their steady time."
        )
    if options.price_usd is None:
        notes.append("The price is unknown: compared by speed only, never recommended. Add price.usd to fix.")
    price = price_section(
        options.price_usd,
        _dt.date.today().isoformat(),
        options.price_note,
        None,
        options.power_watts,
        options.price_usd_per_hour,
        "given by the person who trained",
    )
    return profile_document(
        profile_id,
        name,
        facts.device,
        hardware.host_facts(),
        facts.software,
        price,
        workload,
        [result],
        facts.command or _command(),
        notes,
        interrupted=interrupted,
    )


def _workload_section(
    options: Options, facts: RunFacts, summary: Summary, counted: Counted | None, length: tuple[int, int, int]
) -> tuple[dict[str, Any], float]:
    """The tracked workload (``length``: steps of the run, epochs, steps an epoch) and one step's training FLOPs."""
    steps, epochs, per_epoch = length
    samples = summary.samples_per_step
    batch = max(1, round(samples))
    phases, flops_per_step = _phases(counted, samples)
    workload: dict[str, Any] = {
        "name": options.workload or f"{facts.model_class} (tracked)",
        "kind": WorkloadKind.TRACKED,
        "train_samples": per_epoch * batch,
        "batch_size": batch,
        "epochs": epochs,
        "steps": steps,
        "optimizer": facts.optimizer,
        "model_hash": model_hash(facts, samples, summary.tokens_per_step),
        "parameters": int(facts.parameters),
        "trainable_parameters": int(facts.trainable_parameters),
        "phases": phases,
        "model_class": facts.model_class,
    }
    if counted is not None and counted.micro_batches > 1:
        workload["gradient_accumulation"] = counted.micro_batches
    if summary.tokens_per_step:
        workload["tokens_per_sample"] = _sig(summary.tokens_per_step / samples)
    if counted is not None:
        if counted.activation_bytes is not None:
            micro_samples = counted.samples / max(counted.micro_batches, 1)
            workload["activation_bytes_per_sample"] = _sig(counted.activation_bytes / micro_samples)
            if counted.output_values:
                workload["output_values_per_sample"] = _sig(counted.output_values / micro_samples)
        if counted.operations:
            workload["operations_per_step"] = counted.operations
        if counted.precision:
            workload["counted_precision"] = counted.precision
        workload["flops_method"] = counted.method
        if counted.not_counted:
            workload["not_counted"] = counted.not_counted
    return workload, flops_per_step


def _result_section(
    facts: RunFacts, summary: Summary, other_load: float | None, steps: int, flops_per_step: float
) -> dict[str, Any]:
    """The run's one result: its total, its steady step, the wait for data, memory, checks and warnings."""
    step: dict[str, Any] = {
        "count": summary.steady_steps,
        "warmup": summary.warmup,
        **summary.step.as_dict(),
        "samples_per_second": _sig(summary.samples_per_second),
    }
    if summary.tokens_per_second:
        step["tokens_per_second"] = _sig(summary.tokens_per_second)
    if flops_per_step > 0:
        step["flops_per_step"] = _sig(flops_per_step)
        step["achieved_tflops"] = _sig(flops_per_step / summary.step.mean / 1e12)
        if facts.device.get("kind") == DeviceKind.GPU:
            step.update(_peak_share(step["achieved_tflops"], facts))
    result: dict[str, Any] = {
        "precision": facts.precision,
        "total_seconds": _sig(steps * _sig(summary.step.mean), 8),
        "step": step,
    }
    if summary.wait_share is not None and summary.wait_per_step is not None:
        result["data_wait"] = {
            "share": round(summary.wait_share, 4),
            "seconds_per_step": _sig(summary.wait_per_step),
            "method": facts.wait_method,
        }
    if facts.memory:
        result["memory"] = facts.memory
    result["checks"] = facts.checks
    warnings = facts.warnings + noise_warnings(summary, other_load)
    if warnings:
        result["warnings"] = warnings
    return result


def _peak_share(achieved_tflops: float, facts: RunFacts) -> dict[str, Any]:
    """The share of one device's catalog peak the run reached (``share_of_peak``), and what it rests on or why there
    is none (``peak_basis``). Best effort: a catalog that cannot be read gives no share, and says so."""
    try:
        catalog = load_catalog()
    except (AdvisorError, OSError, ValueError) as error:
        return {"peak_basis": f"no share of its peak: the GPU catalog could not be read ({error})"}
    per_device = achieved_tflops / max(int(facts.device.get("count") or 1), 1)
    found = share_of_peak(per_device, str(facts.device.get("name", "")), facts.precision, catalog)
    return (
        {"share_of_peak": round(found.share, 4), "peak_basis": found.basis}
        if found.share is not None
        else {"peak_basis": found.basis}
    )


def _command() -> str:
    """The script that trained, as it was started (its arguments left out: they may hold secrets)."""
    script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return f"python {script} (advisor.track)"


def device_kind(is_gpu: bool) -> str:
    return DeviceKind.GPU.value if is_gpu else DeviceKind.CPU.value


def finish(session: Session, facts: RunFacts) -> Path | None:
    """Summarise and write the run's profile; one line on standard error, and nothing written, when there is
    nothing to write. Returns the profile's path."""
    session.close()
    summary = summarise(session.records, session.options.warmup_steps)
    if isinstance(summary, str):
        say(f"no profile written: {summary}")
        return None
    profile = tracked_profile(
        session.options, facts, summary, session.counted, session.cpu.other_load(), session.interrupted
    )
    try:
        path = store.write_profile(profile, session.options.out, overwrite=session.options.overwrite)
    except AdvisorError as error:
        say(f"no profile written: {error}")
        return None
    if not session.options.quiet:
        wait = summary.wait_share
        waiting = f", {wait:.0%} of it waiting for data" if wait is not None else ""
        say(
            f"wrote {path}: {summary.step.median * 1000:.4g} ms a step (median of {summary.steady_steps} steady "
            f"steps{waiting}), {summary.samples_per_second:,.4g} samples/s"
        )
        step = typed.of(profile).results[0].step
        if step.peak_basis:
            share = f"{step.share_of_peak:.1%} " if step.share_of_peak is not None else ""
            say(f"{share}{step.peak_basis}")
        say(store.submit_hint(path))
    return path


def say(line: str) -> None:
    """One line for the user, on standard error (never in the way of the training's own output)."""
    print(f"advisor.track: {line}", file=sys.stderr, flush=True)
