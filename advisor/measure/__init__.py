"""``advisor measure``: time the training on this device with a Keras backend and return a profile.

One job per module: ``plan`` (arguments to a checked plan), ``signals`` (safe interrupts),
``backends`` (one small module per Keras backend: the only code that imports a framework, and only
when a run starts), ``train`` (the model and its timed training), ``profile`` (the profile);
``cluster`` (several machines, checked without a framework) and ``multiworker`` (one worker's part of a
multi-machine run, trained by ``backends.tf_multiworker``). The command itself is
``advisor.cli.cmd_measure``; its summary table is ``advisor.render.measure.measure_table``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from advisor.errors import AdvisorError
from advisor.format.formatting import device_label
from advisor.format.vocabulary import MIXED_WORD, Precision
from advisor.measure import backends, hardware
from advisor.measure.plan import MeasurePlan
from advisor.measure.profile import build_profile, result_record
from advisor.measure.signals import InterruptGuard
from advisor.measure.train import Job, lstm_job, train_once

__all__ = ["InterruptGuard", "MeasurePlan", "measure"]

Progress = Callable[[str], None]


def resolve_policies(plan: MeasurePlan, device_kind: str) -> list[str]:
    """The plan's precisions as Keras dtype policies on this device ("mixed": the one that helps it)."""
    mixed = plan.mixed_policy or Precision.mixed_for(device_kind).value  # float16 on GPUs, bfloat16 on CPUs
    policies = [mixed if p == MIXED_WORD else p for p in plan.precisions]
    if len(set(policies)) != len(policies):
        raise AdvisorError(f"--precision: {mixed} is listed twice (mixed means {mixed} here)")
    return policies


def measure(plan: MeasurePlan, progress: Progress, guard: InterruptGuard | None = None) -> dict[str, Any] | None:
    """Run the whole measurement and return the profile (not yet written; None on a worker other than the chief).
    The framework starts here."""
    guard = guard or InterruptGuard()
    if plan.cluster is not None:  # several machines: this worker's part (the chief returns the profile)
        from advisor.measure.multiworker import measure_cluster

        return measure_cluster(plan, progress, guard)
    backend = backends.load(plan.backend)
    progress(f"starting {plan.backend}...")
    backend.start(plan.device, plan.devices)
    host = hardware.host_facts()
    device = backend.resolve_device(plan.device, host, plan.devices)
    policies = resolve_policies(plan, device.kind)
    where = device_label(device.name, device.count)
    progress(f"device: {where} ({device.kind}, {plan.backend}); precisions: {', '.join(policies)}")
    software = {**backend.software_facts(device), **hardware.software_facts()}
    one_device = dataclasses.replace(device, count=1)
    job, single_job, workload, flops_per_epoch = _jobs(plan, progress)

    peaks: dict[str, float] = {}
    for dtype in sorted({_dtype(p) for p in policies}):
        progress(f"matmul peak ({dtype}, {plan.matmul_size}x{plan.matmul_size})...")
        try:
            peaks[dtype] = backend.matmul_peak_gflops(dtype, plan.matmul_size, one_device)
            guard.check()
        except backend.failure_types() as error:
            if backend.is_out_of_memory(error):
                raise AdvisorError("out of memory in the matmul test: try a smaller --matmul-size") from None
            raise
        progress(f"matmul peak ({dtype}): {peaks[dtype]:,.1f} GFLOP/s")

    results = []
    for policy in policies:
        guard.check()
        single = None
        if device.count > 1:
            single = train_once(backend, single_job, policy, one_device, plan.seed, plan.quick, progress, guard,
                                label=f"{policy}, 1 device")  # fmt: skip
            guard.check()
        label = policy if device.count == 1 else f"{policy}, {device.count} devices"
        run = train_once(backend, job, policy, device, plan.seed, plan.quick, progress, guard, label=label)
        results.append(result_record(run, flops_per_epoch, peaks.get(_dtype(policy)), _dtype(policy), single,
                                     device.count, workload["batch_size"]))  # fmt: skip
        for warning in run.warnings:
            progress(f"warning: {policy}: {warning}")

    return build_profile(plan, device, host, software, results, workload)


def _dtype(policy: str) -> str:
    return Precision(policy).dtype.value


def _jobs(plan: MeasurePlan, progress: Progress) -> tuple[Job, Job, dict[str, Any], float]:
    """The training job (the LSTM, or the model file), the same on one device, the profile's workload, and the
    training FLOPs of one epoch."""
    workload = plan.workload
    if plan.model is None:
        single = workload
        if plan.scale_batch:  # with --scale-batch, one device gets its share of the global batch
            single = dataclasses.replace(workload, batch_size=workload.batch_size // plan.devices)
        return lstm_job(workload), lstm_job(single), workload.as_dict(), workload.training_flops_per_epoch()
    from advisor.measure import model_file

    progress(f"loading {plan.model} (safe_mode on)...")
    model = model_file.load(plan.model, plan.loss, plan.optimizer)
    spec = model_file.workload(model, workload.train_samples, workload.batch_size, workload.epochs)
    if spec.get("not_counted"):
        progress(f"FLOPs not counted for: {', '.join(spec['not_counted'])}")
    single_batch = workload.batch_size // plan.devices if plan.scale_batch else workload.batch_size
    job = model_file.ModelJob(model, workload.train_samples, workload.batch_size, workload.epochs).job()
    single = model_file.ModelJob(model, workload.train_samples, single_batch, workload.epochs).job()
    return job, single, spec, spec["flops_per_sample"] * workload.train_samples
