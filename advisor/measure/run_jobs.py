"""What a measurement trains: the plan's precisions as Keras policies, and its jobs (the post's LSTM or a model
file, on all the devices and on one). Shared by one machine's run (``advisor.measure``) and a cluster's
(``advisor.measure.multiworker``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from advisor.errors import InputError
from advisor.format.vocabulary import MIXED_WORD, Precision
from advisor.measure.plan import MeasurePlan
from advisor.measure.train import Job, lstm_job

Progress = Callable[[str], None]


def resolve_policies(plan: MeasurePlan, device_kind: str) -> list[str]:
    """The plan's precisions as Keras dtype policies on this device ("mixed": the one that helps it)."""
    mixed = plan.mixed_policy or Precision.mixed_for(device_kind).value  # float16 on GPUs, bfloat16 on CPUs
    policies = [mixed if p == MIXED_WORD else p for p in plan.precisions]
    if len(set(policies)) != len(policies):
        raise InputError("precision", f"{mixed} is listed twice (mixed means {mixed} here)")
    return policies


def policy_dtype(policy: str) -> str:
    """The dtype a Keras policy computes in (its matmul peak's)."""
    return Precision(policy).dtype.value


def training_jobs(plan: MeasurePlan, progress: Progress) -> tuple[Job, Job, dict[str, Any], float]:
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
