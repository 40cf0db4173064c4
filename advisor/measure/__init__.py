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
from typing import Any

from advisor.errors import AdvisorError
from advisor.format.formatting import device_label
from advisor.measure import backends, hardware
from advisor.measure.plan import MeasurePlan
from advisor.measure.profile import measured_profile, result_record
from advisor.measure.run_jobs import Progress, policy_dtype, resolve_policies, training_jobs
from advisor.measure.signals import InterruptGuard
from advisor.measure.train import train_once

__all__ = ["InterruptGuard", "MeasurePlan", "measure", "resolve_policies"]


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
    job, single_job, workload, flops_per_epoch = training_jobs(plan, progress)

    peaks = _matmul_peaks(backend, plan, policies, one_device, progress, guard)

    results = []
    for policy in policies:
        guard.check()
        single = None
        if device.count > 1:
            single = train_once(
                backend,
                single_job,
                policy,
                one_device,
                plan.seed,
                plan.quick,
                progress,
                guard,
                label=f"{policy}, 1 device",
            )
            guard.check()
        label = policy if device.count == 1 else f"{policy}, {device.count} devices"
        run = train_once(backend, job, policy, device, plan.seed, plan.quick, progress, guard, label=label)
        results.append(
            result_record(
                run,
                flops_per_epoch,
                peaks.get(policy_dtype(policy)),
                policy_dtype(policy),
                single,
                device.count,
                workload["batch_size"],
            )
        )
        for warning in run.warnings:
            progress(f"warning: {policy}: {warning}")

    return measured_profile(plan, device, host, software, results, workload)


def _matmul_peaks(
    backend: Any, plan: MeasurePlan, policies: list[str], device: Any, progress: Progress, guard: InterruptGuard
) -> dict[str, float]:
    """Each dtype's matmul peak on one device (GFLOP/s), the ceiling the runs' utilisation is read against."""
    peaks: dict[str, float] = {}
    for dtype in sorted({policy_dtype(p) for p in policies}):
        progress(f"matmul peak ({dtype}, {plan.matmul_size}x{plan.matmul_size})...")
        try:
            peaks[dtype] = backend.matmul_peak_gflops(dtype, plan.matmul_size, device)
            guard.check()
        except backend.failure_types() as error:
            if backend.is_out_of_memory(error):
                raise AdvisorError("out of memory in the matmul test: try a smaller --matmul-size") from None
            raise
        progress(f"matmul peak ({dtype}): {peaks[dtype]:,.1f} GFLOP/s")
    return peaks
