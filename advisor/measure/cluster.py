"""Several machines: the cluster a worker belongs to, checked before any framework starts.

``measure --workers HOST:PORT,HOST:PORT --worker-index I`` (or a ``TF_CONFIG`` already set) names the
workers; every worker runs the same command with its own index, and worker 0 (the chief) times the
epochs and writes the profile. This module parses and checks the cluster, probes the ports, reads the
link between the machines where it can, and compares the workers' workloads. No framework here: the
training itself is :mod:`advisor.measure.backends.tf_multiworker`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError, InputError

DEFAULT_JOIN_TIMEOUT = 120.0  # seconds every worker waits for the others to start
MAX_WORKERS = 256


@dataclass(frozen=True)
class Cluster:
    """The workers (``host:port`` each, in index order) and which one this process is."""

    workers: tuple[str, ...]
    index: int
    join_timeout: float = DEFAULT_JOIN_TIMEOUT

    @property
    def is_chief(self) -> bool:
        return self.index == 0

    @property
    def address(self) -> str:
        return self.workers[self.index]

    def name(self, index: int) -> str:
        """'worker 1 (10.0.0.2:2222)', or 'the chief (worker 0, ...)'."""
        role = "the chief (worker 0" if index == 0 else f"worker {index} ("
        return f"{role}{', ' if index == 0 else ''}{self.workers[index]})"

    def tf_config(self) -> str:
        """The TF_CONFIG that tf.distribute.MultiWorkerMirroredStrategy reads."""
        return json.dumps({"cluster": {"worker": list(self.workers)}, "task": {"type": "worker", "index": self.index}})


def split_address(text: str, what: str = "--workers") -> tuple[str, int]:
    """'host:port' (or '[::1]:port') -> (host, port), or a one-line error naming the bad entry."""
    host, sep, port_text = text.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise AdvisorError(f"{what}: {text.strip()!r} is not HOST:PORT (a port from 1 to 65535)")
    return host, int(port_text)


def from_tf_config(environ: Mapping[str, str], join_timeout: float = DEFAULT_JOIN_TIMEOUT) -> Cluster | None:
    """The cluster a ``TF_CONFIG`` already set describes (None when it is not set). A ``chief`` job, if any, is
    worker 0 and the ``worker`` job follows it, as TensorFlow orders them."""
    text = environ.get("TF_CONFIG", "").strip()
    if not text:
        return None
    try:
        config = json.loads(text)
        cluster, task = config["cluster"], config["task"]
        chief, workers = list(cluster.get("chief", [])), list(cluster.get("worker", []))
        kind, index = str(task["type"]), int(task["index"])
    except (ValueError, KeyError, TypeError, AttributeError):
        raise AdvisorError(
            "TF_CONFIG: not a cluster description like "
            '{"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": 0}}'
        ) from None
    if kind not in ("chief", "worker"):
        raise AdvisorError(f"TF_CONFIG: task type {kind!r}: only chief and worker tasks train")
    position = index if kind == "chief" else len(chief) + index
    return checked_cluster(tuple(str(w) for w in chief + workers), position, join_timeout, "TF_CONFIG")


def checked_cluster(workers: tuple[str, ...], index: int | None, join_timeout: float, what: str) -> Cluster:
    """The workers (HOST:PORT each) and this worker's index as a checked cluster (``what``: where they were given)."""
    if len(workers) < 2:
        raise AdvisorError(f"{what}: name at least two workers (HOST:PORT,HOST:PORT); one machine: use --devices")
    if len(workers) > MAX_WORKERS:
        raise AdvisorError(f"{what}: at most {MAX_WORKERS} workers, got {len(workers)}")
    seen = set()
    for worker in workers:
        key = split_address(worker, what)
        if key in seen:
            raise AdvisorError(f"{what}: {worker} is listed twice")
        seen.add(key)
    if index is None:
        raise AdvisorError(f"{what}: say which worker this is with --worker-index (0 is the chief)")
    if not 0 <= index < len(workers):
        raise InputError("worker_index", f"the workers are numbered 0 to {len(workers) - 1}", str(index))
    if not join_timeout > 0:
        raise InputError("join_timeout", f"must be positive, got {join_timeout:g}")
    return Cluster(workers, index, float(join_timeout))


def check_port_free(cluster: Cluster) -> None:
    """This worker's port must be free before the framework listens on it (a clear line, not a gRPC trace)."""
    _, port = split_address(cluster.address)
    with socket.socket(socket.AF_INET6 if ":" in cluster.address.rpartition(":")[0] else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC does: a closed port's TIME_WAIT is free
        try:
            probe.bind(("", port))
        except OSError as error:
            raise AdvisorError(
                f"{cluster.name(cluster.index)}: port {port} is in use by another program ({error.strerror}); "
                "free it or give this worker another port"
            ) from None


def listening(address: str, timeout: float = 0.5) -> bool:
    """Whether something accepts connections at ``host:port`` (a worker that has started listens there)."""
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def missing_line(cluster: Cluster, waited: float) -> str:
    """The line a worker prints when the others have not all joined in time."""
    others = [i for i in range(len(cluster.workers)) if i != cluster.index]
    silent = [cluster.name(i) for i in others if not listening(cluster.workers[i])]
    if silent:
        return f"{', '.join(silent)} did not join within {waited:g} s (nothing listens there); no profile written"
    return f"the workers did not all join within {waited:g} s; no profile written"


# --------------------------------------------------------------------------- the link between the machines


LOOPBACK_LINK = "loopback (all workers on this machine)"  # the link fact where the workers share this machine


def link_facts(cluster: Cluster) -> dict[str, Any]:
    """What can be read of the link to the other workers: 'loopback' when they all run on this machine, else the
    network interface that routes to the first other worker and its speed (Linux sysfs). Unknowns are left out."""
    hosts = {split_address(worker)[0] for i, worker in enumerate(cluster.workers) if i != cluster.index}
    addresses = set()
    for host in hosts:
        with contextlib.suppress(OSError):
            addresses.update(info[4][0] for info in socket.getaddrinfo(host, None))
    if addresses and all(_is_loopback(a) for a in addresses):
        return {"link": LOOPBACK_LINK}
    facts: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        ipv4 = sorted(a for a in addresses if "." in a and not _is_loopback(a))
        interface = _route_interface(ipv4[0]) if ipv4 else None
        if interface:
            facts["link"] = f"network interface {interface}"
            speed = Path(f"/sys/class/net/{interface}/speed").read_text().strip()
            if speed.isdigit() and int(speed) > 0:  # Mb/s; -1 or empty when the driver does not say
                facts["link_gbps"] = int(speed) / 1000
    return facts


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


def _route_interface(ipv4: str, table: str = "/proc/net/route") -> str | None:
    """The interface of the most specific route to ``ipv4`` in the kernel's IPv4 routing table."""
    target = struct.unpack("<I", socket.inet_aton(ipv4))[0]
    best: tuple[int, str] | None = None
    for line in Path(table).read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        destination, mask = int(fields[1], 16), int(fields[7], 16)
        if target & mask == destination and (best is None or bin(mask).count("1") > best[0]):
            best = (bin(mask).count("1"), fields[0])
    return best[1] if best else None


# --------------------------------------------------------------------------- the same workload everywhere


def fingerprint(workload: Mapping[str, Any], precisions: list[str], extra: Mapping[str, Any]) -> str:
    """What every worker must agree on, as canonical JSON (exchanged before any training)."""
    return json.dumps(
        {"workload": dict(workload), "precisions": list(precisions), **extra}, sort_keys=True, default=str
    )


def mismatch(cluster: Cluster, prints: Mapping[int, str]) -> str | None:
    """The line naming the first worker whose workload differs from the chief's, and the first field that does."""
    chief = json.loads(prints[0])
    for index in sorted(prints):
        theirs = json.loads(prints[index])
        if theirs == chief:
            continue
        field, mine, other = _first_difference(chief, theirs)
        return (
            f"{cluster.name(index)} measures a different workload than the chief: {field} {other} there, "
            f"{mine} on the chief; run the same command on every worker; no profile written"
        )
    return None


def _first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any]:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=lambda k: (k == "name", k)):  # a name only repeats what differs
            if a.get(key) != b.get(key):
                return _first_difference(a.get(key), b.get(key), f"{path}.{key}" if path else key)
    return path or "workload", a, b


def environment_cluster(join_timeout: float) -> Cluster | None:
    """The cluster of a ``TF_CONFIG`` in this process's environment, if any."""
    return from_tf_config(os.environ, join_timeout)
