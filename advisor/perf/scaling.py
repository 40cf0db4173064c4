"""Data-parallel scaling: what an added GPU costs in time, learnt from the published multi-GPU results.

With data parallelism each GPU runs the same iteration on its own batch, then the GPUs average their gradients
(an all-reduce): a ring all-reduce sends 2 (N - 1) / N times the gradients' bytes over each GPU's link (NVLink
where the GPUs have it, else PCIe). Part of it hides behind the backward pass; the rest, and a synchronisation
that grows with log2(N), adds to every iteration:

    efficiency(N) = 1 / (1 + sync x log2(N) + phi x 2 (N - 1) / N x gradient bytes / link bandwidth / t1)

where t1 is one GPU's iteration time. ``phi`` (the share of the all-reduce left exposed) and ``sync`` are fitted
on every multi-GPU result whose one-GPU result (same GPU, workload, precision and batch per GPU) is published
too, in log space with Huber weights; the leave-one-system-out error says how far a new system's efficiency is
off.

Across machines the gradients also cross the network once per machine. No published result spans machines, so
that term (``network_efficiency``) is physics, not a fit: the ring all-reduce over the link hides behind the
backward pass (two thirds of an iteration) and only its excess adds. Pure NumPy; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from advisor.format.vocabulary import DeviceKind, Source, WorkloadKind
from advisor.store.catalog import Catalog, Gpu

SIGMA = 0.05  # an efficiency's spread in log space
HUBER = 2.0  # beyond this many sigmas a residual weighs less (some published multi-GPU rows are far off)
FALLBACK_FACTOR = 1.35  # the scaling's error when no cross-validation is on file (its measured 90th percentile)
GRADIENT_BYTES = 4.0  # per parameter: data-parallel frameworks all-reduce float32 gradients (AMP keeps them too)


@dataclass(frozen=True)
class Observation:
    """One multi-GPU result and what its one-GPU counterpart says."""

    system: str  # the published system (its name and date): what leave-one-system-out holds out together
    gpu: str
    devices: int
    link: str  # "NVLink" or "PCIe"
    link_gbs: float
    gradient_bytes: float
    iteration_seconds: float  # one GPU's iteration, from its own published result
    efficiency: float  # observed: throughput / (devices x one GPU's throughput)


def link_of(gpu: Gpu, named: bool = False) -> tuple[str, float] | None:
    """The link an all-reduce uses: NVLink on SXM boards or where the system names it (a bridge), else PCIe; None
    when the catalog gives neither bandwidth."""
    nvlink, pcie = gpu.value("nvlink_gbs"), gpu.value("pcie_gbs")
    if nvlink and (named or "sxm" in gpu.id or gpu.id == "b200"):
        return "NVLink", nvlink
    return ("PCIe", pcie) if pcie else None


def comm_seconds(devices: int, gradient_bytes: float, link_gbs: float) -> float:
    """A ring all-reduce's time at the link's full bandwidth."""
    return 2 * (devices - 1) / devices * gradient_bytes / (link_gbs * 1e9)


@dataclass(frozen=True)
class ScalingFit:
    phi: float  # share of the all-reduce that stays exposed
    sync: float  # the share of an iteration lost per doubling of the GPUs (synchronisation, stragglers)
    observations: int

    def efficiency(
        self, devices: int, gradient_bytes: float, link_gbs: float, iteration_seconds: float, machines: int = 1
    ) -> float:
        """``devices`` GPUs on each of ``machines``; the network between machines is ``network_efficiency``'s."""
        if devices * machines <= 1:
            return 1.0
        exposed = self.phi * comm_seconds(devices, gradient_bytes, link_gbs) if devices > 1 else 0.0
        return 1.0 / (1.0 + self.sync * math.log2(devices * machines) + exposed / iteration_seconds)


BACKWARD_SHARE = 2 / 3  # of an iteration: the backward pass (twice the forward's), which an all-reduce overlaps


def network_efficiency(machines: int, gradient_bytes: float, link_gbps: float, iteration_seconds: float) -> float:
    """What the network between ``machines`` costs on top of each machine's own scaling (1: nothing): a ring
    all-reduce at the link's speed (Gb/s), its part beyond the backward pass exposed. Estimated, not fitted."""
    if machines <= 1:
        return 1.0
    over_network = comm_seconds(machines, gradient_bytes, link_gbps / 8)
    exposed = max(0.0, over_network - BACKWARD_SHARE * iteration_seconds)
    return 1.0 / (1.0 + exposed / iteration_seconds)


DEFAULT = ScalingFit(phi=0.5, sync=0.02, observations=0)  # without observations: half the all-reduce exposed


def observations(frame: pd.DataFrame, catalog: Catalog) -> list[Observation]:
    """The published multi-GPU results with a one-GPU counterpart of the same GPU, workload, precision and batch."""
    rows = frame[(frame["source"] == Source.QUOTED) & (frame["device_kind"] == DeviceKind.GPU)]
    rows = rows[rows["workload_spec"].map(lambda spec: spec.get("kind") == WorkloadKind.PUBLISHED).astype(bool)]
    gpus = {name: catalog.match(str(name)) for name in rows["device_name"].unique()}
    batch = [
        b if b == b else spec["batch_size"] for b, spec in zip(rows["batch_size"], rows["workload_spec"], strict=True)
    ]
    rows = rows.assign(batch=batch, gpu=[gpus[n].id if gpus[n] else None for n in rows["device_name"]])
    rows = rows[rows["gpu"].notna()]
    single = rows[rows["device_count"] == 1].groupby(["gpu", "workload", "precision", "batch"])["seconds"].median()
    single = single.to_dict()  # looked up once a multi-GPU result: a dict, not a MultiIndex (0.04 ms a lookup)
    found = []
    by_id = catalog.by_id()
    read = ["gpu", "workload", "precision", "batch", "name", "workload_spec", "device_count", "seconds"]
    for row in rows.loc[rows["device_count"] > 1, read].to_dict("records"):  # the columns read: a third of the time
        key = (row["gpu"], row["workload"], row["precision"], row["batch"])
        if key not in single:
            continue
        gpu = by_id[row["gpu"]]
        link = link_of(gpu, named="NVLink" in str(row["name"]))  # "2x RTX 2080Ti NVLink": a bridge
        spec = row["workload_spec"]
        if link is None or not spec.get("parameters"):
            continue
        one = float(single[key])
        iterations = spec["train_samples"] * spec["epochs"] / row["batch"]
        found.append(
            Observation(
                system=str(row["name"]),
                gpu=row["gpu"],
                devices=int(row["device_count"]),
                link=link[0],
                link_gbs=link[1],
                gradient_bytes=GRADIENT_BYTES * spec["parameters"],
                iteration_seconds=one / iterations,
                efficiency=one / (row["device_count"] * row["seconds"]),
            )
        )
    return found


def fit_scaling(found: Iterable[Observation]) -> ScalingFit:
    """phi and sync by a grid search in log space (two constants: a grid is exact enough and cannot diverge)."""
    found = list(found)
    if not found:
        return DEFAULT
    comm = np.array([comm_seconds(o.devices, o.gradient_bytes, o.link_gbs) for o in found])
    doublings = np.array([math.log2(o.devices) for o in found])
    iteration = np.array([o.iteration_seconds for o in found])
    observed = np.log([o.efficiency for o in found])
    phis = np.concatenate([[0.0], np.exp(np.linspace(math.log(1e-3), math.log(2.0), 79))])
    syncs = np.concatenate([[0.0], np.exp(np.linspace(math.log(1e-4), math.log(0.5), 79))])
    # One phi at a time, in buffers made once: the whole grid at once (80 x 80 x 1,362 observations) made temporaries
    # of 70 MB each, and a fresh process spent a second faulting their pages in (the app's restart paid it). The
    # same operations on the same values: the same sums, bit for bit.
    ratio, sync_terms = comm / iteration, syncs[:, None] * doublings[None]
    loss = np.empty((len(phis), len(syncs)))
    residual, size, cost = (np.empty(sync_terms.shape) for _ in range(3))
    for i, phi in enumerate(phis):
        np.multiply(phi, ratio[None], out=residual)
        np.add(residual, sync_terms, out=residual)
        np.log1p(residual, out=residual)
        np.negative(residual, out=residual)
        np.subtract(residual, observed[None], out=residual)
        np.divide(residual, SIGMA, out=residual)  # residual = (-log1p(extra) - observed) / SIGMA
        np.abs(residual, out=size)
        np.multiply(2 * HUBER, size, out=cost)
        np.subtract(cost, HUBER**2, out=cost)  # Huber: linear beyond HUBER sigmas...
        np.square(residual, out=residual)
        np.copyto(cost, residual, where=size <= HUBER)  # ...squared within
        loss[i] = cost.sum(axis=1)
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return ScalingFit(float(phis[i]), float(syncs[j]), len(found))


def leave_one_system_out(found: list[Observation]) -> list[tuple[Observation, float]]:
    """Each system's efficiencies predicted by a fit on the other systems: (observation, predicted efficiency)."""
    predicted = []
    for system in sorted({o.system for o in found}):
        rest = fit_scaling(o for o in found if o.system != system)
        for o in found:
            if o.system == system:
                predicted.append((o, rest.efficiency(o.devices, o.gradient_bytes, o.link_gbs, o.iteration_seconds)))
    return predicted
