"""``measure --workers``: the same training on several machines, timed by the chief against one device.

Every worker runs the same command. In order: this worker's port is checked, TensorFlow starts, the workers
join (:func:`tf_multiworker.join`, bounded by ``--join-timeout``), they compare their workloads (one line on
every worker when they differ), the chief alone measures its matmul peak and times one device with the same
custom step while the others wait, then all of them train together and the chief writes the profile. A worker
that dies or is stopped ends the run on every other worker with one line, and nothing is written.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from advisor.errors import AdvisorError, InputError
from advisor.format.vocabulary import DeviceKind
from advisor.measure import backends, hardware
from advisor.measure.cluster import LOOPBACK_LINK, check_port_free, fingerprint, link_facts, mismatch
from advisor.measure.plan import MeasurePlan
from advisor.measure.profile import measured_profile, result_record
from advisor.measure.run_jobs import policy_dtype, resolve_policies, training_jobs
from advisor.measure.signals import InterruptGuard
from advisor.measure.train import Progress, TrainingRun

READY_KEY = "chief-ready"


def measure_cluster(plan: MeasurePlan, progress: Progress, guard: InterruptGuard) -> dict[str, Any] | None:
    """Run this worker's part; the chief returns the profile, the other workers None."""
    from advisor.measure.backends import tf_multiworker as mw

    cluster = plan.cluster
    assert cluster is not None
    backend, strategy = _join_cluster(plan, cluster, progress)
    host = hardware.host_facts()
    device = backend.resolve_device(plan.device, host, plan.devices)
    policies = resolve_policies(plan, device.kind)
    job, single_job, workload, flops_per_epoch = training_jobs(plan, progress)
    _agree_on_the_job(backend.tf, cluster, workload, policies, device, plan.seed, guard)

    references, peaks = _the_chief_alone(plan, backend, policies, single_job, device, progress, guard)
    workers = len(cluster.workers)
    total = workers * device.count
    link = link_facts(cluster)
    others_expected = link.get("link") == LOOPBACK_LINK  # the other workers share this machine: no warning
    results = []
    for policy in policies:
        guard.check()
        label = f"{policy}, {workers} workers" + (f" x {device.count} devices" if device.count > 1 else "")
        label = label if cluster.is_chief else f"worker {cluster.index}: {label}"
        run = mw.train_steps(
            backend.tf,
            job,
            policy,
            device,
            plan.seed,
            progress,
            guard,
            label,
            strategy,
            cluster,
            others_expected=others_expected,
        )
        if cluster.is_chief:
            dtype = policy_dtype(policy)
            results.append(
                result_record(
                    run,
                    flops_per_epoch,
                    peaks.get(dtype),
                    dtype,
                    references[policy],
                    total,
                    workload["batch_size"],
                    workers=workers,
                )
            )
            for warning in run.warnings:
                progress(f"warning: {policy}: {warning}")
    if not cluster.is_chief:
        return None

    software = {**backend.software_facts(device), **hardware.software_facts()}
    facts = {"workers": workers, "devices_per_worker": device.count, "collective": strategy.advisor_collective, **link}
    whole = dataclasses.replace(device, count=total)
    return measured_profile(plan, whole, host, software, results, workload, cluster=facts)


def _agree_on_the_job(
    tf: Any, cluster: Any, workload: dict, policies: list[str], device: Any, seed: int, guard: InterruptGuard
) -> None:
    """Every worker's workload, precisions, devices and seed compared: a mismatch raises its line on every worker."""
    from advisor.measure.backends import tf_multiworker as mw

    agreed = {"devices_per_worker": device.count, "device_kind": device.kind, "seed": seed}
    mw.exchange(
        tf,
        cluster,
        "workload",
        fingerprint(workload, policies, agreed),
        guard,
        verdict=lambda prints: mismatch(cluster, prints),
    )


def _join_cluster(plan: MeasurePlan, cluster: Any, progress: Progress) -> tuple[Any, Any]:
    """Start TensorFlow on this worker and wait for the others: the backend and the joined strategy."""
    from advisor.measure.backends import tf_multiworker as mw

    me = cluster.name(cluster.index)
    check_port_free(cluster)
    backend = backends.load("tensorflow")
    progress(f"{me}: starting tensorflow...")
    backend.start(plan.device, 1)
    kind = _train_on(plan, backend)
    progress(f"{me}: waiting for the other {len(cluster.workers) - 1} worker(s) (at most {cluster.join_timeout:g} s)")
    strategy = mw.join(backend.tf, cluster, kind)
    progress(f"{me}: joined ({strategy.num_replicas_in_sync} replicas in all)")
    return backend, strategy


def _train_on(plan: MeasurePlan, backend) -> DeviceKind:
    """Keep the GPUs this worker trains on visible (``--devices`` of them); its device kind."""
    if backend.gpus:
        if plan.devices > len(backend.gpus):
            raise InputError("devices", f"only {len(backend.gpus)} GPU(s) are visible", str(plan.devices))
        backend.tf.config.set_visible_devices(backend.gpus[: plan.devices], "GPU")  # the devices it trains on
        backend.gpus = backend.gpus[: plan.devices]
    elif plan.devices > 1:
        raise InputError("devices", "counts each worker's GPUs when several workers train; a CPU worker trains on one")
    return DeviceKind.GPU if backend.gpus else DeviceKind.CPU


def _the_chief_alone(
    plan: MeasurePlan, backend, policies, single_job, device, progress: Progress, guard: InterruptGuard
) -> tuple[dict[str, TrainingRun], dict[str, float]]:
    """The chief times one device alone (the speedup's reference) and its matmul peaks while the others wait; an
    error on the chief is told to every worker, which stops with the chief's line."""
    from advisor.measure.backends import tf_multiworker as mw

    tf, cluster = backend.tf, plan.cluster
    one = dataclasses.replace(device, count=1)
    references: dict[str, TrainingRun] = {}
    peaks: dict[str, float] = {}
    if cluster.is_chief:
        try:
            for dtype in sorted({policy_dtype(p) for p in policies}):
                peaks[dtype] = backend.matmul_peak_gflops(dtype, plan.matmul_size, one)
                progress(f"matmul peak ({dtype}): {peaks[dtype]:,.1f} GFLOP/s")
            for policy in policies:
                references[policy] = mw.train_steps(
                    tf,
                    single_job,
                    policy,
                    one,
                    plan.seed,
                    progress,
                    guard,
                    label=f"{policy}, 1 device (the chief alone)",
                )
        except AdvisorError as error:
            mw.publish(cluster, READY_KEY, f"error: {error}")
            mw.barrier(tf, cluster, f"{READY_KEY}/read", "telling the workers")  # they read it before the chief ends
            raise
        mw.publish(cluster, READY_KEY, "ok")
        mw.barrier(tf, cluster, f"{READY_KEY}/read", "starting to train together")
    else:
        progress(f"{cluster.name(cluster.index)}: waiting while the chief times one device...")
        answer = mw.wait_for(tf, cluster, READY_KEY, guard)
        stopped = (
            f"the chief stopped: {answer.removeprefix('error: ')}; no profile written"
            if answer.startswith("error: ")
            else None
        )
        try:
            mw.barrier(tf, cluster, f"{READY_KEY}/read", "starting to train together")
        except AdvisorError:
            if stopped:  # the chief said why before it left: that is the line, whenever the barrier's answer came
                raise AdvisorError(stopped) from None
            raise
        if stopped:
            raise AdvisorError(stopped)

    return references, peaks
