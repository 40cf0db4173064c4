"""Several machines without starting any: the cluster's checks, the link, the workload comparison, the profile's
cluster section, what an added machine buys and the network term of the estimates."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.commands.common import error_words
from advisor.commands.measure_options import parse_workers
from advisor.decision import analysis
from advisor.errors import AdvisorError
from advisor.format import schema
from advisor.measure import cluster
from advisor.perf import scaling
from advisor.store import results
from helpers import post_workload_profile


def test_workers_and_index_make_a_cluster():
    found = parse_workers("10.0.0.1:2222, 10.0.0.2:2222,[::1]:2223", 2, 30)
    assert found.workers == ("10.0.0.1:2222", "10.0.0.2:2222", "[::1]:2223")
    assert found.address == "[::1]:2223" and not found.is_chief
    assert found.name(0) == "the chief (worker 0, 10.0.0.1:2222)"
    assert found.name(1) == "worker 1 (10.0.0.2:2222)"
    assert json.loads(found.tf_config()) == {
        "cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222", "[::1]:2223"]},
        "task": {"type": "worker", "index": 2},
    }


@pytest.mark.parametrize(
    ("workers", "index", "message"),
    [
        ("a:1", 0, "--workers: name at least two workers (HOST:PORT,HOST:PORT); one machine: use --devices"),
        ("a:1,b", 0, "--workers: 'b' is not HOST:PORT (a port from 1 to 65535)"),
        ("a:1,b:70000", 0, "--workers: 'b:70000' is not HOST:PORT (a port from 1 to 65535)"),
        ("a:1,a:1", 0, "--workers: a:1 is listed twice"),
        ("a:1,b:2", None, "--workers: say which worker this is with --worker-index (0 is the chief)"),
        ("a:1,b:2", 2, "--worker-index 2: the workers are numbered 0 to 1"),
    ],
)
def test_cluster_mistakes_are_one_line(workers, index, message):
    with pytest.raises(AdvisorError) as caught:
        parse_workers(workers, index)
    assert error_words(caught.value) == message


def test_tf_config_puts_the_chief_first():
    config = {"cluster": {"chief": ["c:1"], "worker": ["w:1", "w:2"]}, "task": {"type": "worker", "index": 1}}
    found = cluster.from_tf_config({"TF_CONFIG": json.dumps(config)})
    assert found is not None and found.workers == ("c:1", "w:1", "w:2") and found.index == 2
    assert cluster.from_tf_config({}) is None
    with pytest.raises(AdvisorError, match="TF_CONFIG: not a cluster description"):
        cluster.from_tf_config({"TF_CONFIG": "{not json"})
    evaluator = {"cluster": {"worker": ["w:1", "w:2"]}, "task": {"type": "evaluator", "index": 0}}
    with pytest.raises(AdvisorError, match="only chief and worker tasks train"):
        cluster.from_tf_config({"TF_CONFIG": json.dumps(evaluator)})


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--quick"], "--workers: --quick stops when one machine's epochs settle"),
        (["--backend", "jax"], "--workers: several machines are measured with TensorFlow's MultiWorker"),
        (["--join-timeout", "0"], "--join-timeout: must be positive, got 0"),
    ],
)
def test_measure_refuses_what_a_cluster_cannot_do(capsys, tmp_path: Path, extra, message):
    status = main(
        ["measure", "--workers", "localhost:1,localhost:2", "--worker-index", "0", "--out", str(tmp_path), *extra]
    )
    err = capsys.readouterr().err
    assert status == 1 and err.startswith(f"advisor: error: {message}") and err.count("\n") == 1


def test_worker_index_without_workers_is_a_mistake(capsys, tmp_path: Path):
    assert main(["measure", "--worker-index", "1", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err == "advisor: error: --worker-index goes with --workers HOST:PORT,HOST:PORT,...\n"


def test_a_port_in_use_is_found_before_the_framework_starts():
    with socket.socket() as squatter:
        squatter.bind(("", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        found = parse_workers(f"localhost:{port},localhost:1", 0)
        with pytest.raises(AdvisorError, match=f"port {port} is in use by another program"):
            cluster.check_port_free(found)
        assert cluster.listening(f"localhost:{port}")


def test_the_missing_workers_are_named():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, not listening: nothing accepts there
        found = parse_workers(f"localhost:1,127.0.0.1:{port}", 0)
        assert cluster.missing_line(found, 5) == (
            f"worker 1 (127.0.0.1:{port}) did not join within 5 s (nothing listens there); no profile written"
        )


def test_the_link_is_loopback_on_one_machine_and_the_routed_interface_elsewhere(tmp_path: Path):
    assert cluster.link_facts(parse_workers("localhost:1,127.0.0.1:2", 0)) == {
        "link": "loopback (all workers on this machine)"
    }
    table = tmp_path / "route"
    table.write_text(
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
        "eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"  # default route via 10.0.0.1
        "ib0\t0000000A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"  # 10.0.0.0/16 on the InfiniBand port
    )
    assert cluster._route_interface("10.0.3.4", str(table)) == "ib0"
    assert cluster._route_interface("192.168.1.1", str(table)) == "eth0"


def test_different_workloads_name_the_worker_and_the_field():
    found = parse_workers("a:1,b:2,c:3", 0)
    same = cluster.fingerprint({"name": "lstm4", "units": 4}, ["float32"], {"seed": 0})
    other = cluster.fingerprint({"name": "lstm6", "units": 6}, ["float32"], {"seed": 0})
    assert cluster.mismatch(found, {0: same, 1: same, 2: same}) is None
    assert cluster.mismatch(found, {0: same, 1: same, 2: other}) == (
        "worker 2 (c:3) measures a different workload than the chief: workload.units 6 there, 4 on the chief; run "
        "the same command on every worker; no profile written"
    )


def cluster_profile() -> dict:
    profile = post_workload_profile("two-machines", seconds=60.0, price=3000)
    profile["device"] = {"kind": "gpu", "name": "NVIDIA GeForce RTX 4090", "count": 4}
    profile["cluster"] = {
        "workers": 2,
        "devices_per_worker": 2,
        "collective": "NCCL",
        "link": "network interface ib0",
        "link_gbps": 100.0,
    }
    profile["results"][0]["scaling"] = {
        "workers": 2,
        "devices": 4,
        "single_device_seconds": 180.0,
        "speedup": 3.0,
        "efficiency": 0.75,
    }
    return profile


def test_a_cluster_profile_validates_and_its_mistakes_are_named():
    problems, _ = schema.validate(cluster_profile(), "two-machines.yaml", expected_id="two-machines")
    assert problems == []
    broken = cluster_profile()
    broken["cluster"]["workers"] = 1
    problems, _ = schema.validate(broken, "two-machines.yaml", expected_id="two-machines")
    assert [p.field for p in problems] == ["cluster.workers"]


def test_what_an_added_machine_buys():
    one = post_workload_profile("one-gpu", seconds=180.0, price=750)
    one["device"] = {"kind": "gpu", "name": "NVIDIA GeForce RTX 4090", "count": 1}
    frame = results.results_frame([one, cluster_profile()])
    row = frame[frame["profile"] == "two-machines"].iloc[0]
    assert row["device"] == "2 machines x 2x NVIDIA GeForce RTX 4090" and row["scaling_workers"] == 2
    added = analysis.added_devices(frame).iloc[0]
    assert added["added_speedup_per_device"] == pytest.approx(2 / 3)
    assert added["added_speedup_per_machine"] == pytest.approx(4 / 3)  # a machine holds two of the devices
    assert added["usd_per_added_1x"] == pytest.approx(750 / (2 / 3))
    from advisor.render.compare import recommendation_text

    text = recommendation_text(analysis.recommend(frame, "one-gpu"))
    assert "What each added device or machine buys" in text and "1.33x" in text


def test_the_network_between_machines_costs_what_the_backward_pass_cannot_hide():
    gradient_bytes, iteration = 4 * 4e6, 0.010  # a 4M-parameter model, 10 ms an iteration
    assert scaling.network_efficiency(1, gradient_bytes, 1.0, iteration) == 1.0
    assert scaling.network_efficiency(2, gradient_bytes, 400.0, iteration) == 1.0  # 0.3 ms: hidden
    slow = scaling.network_efficiency(2, gradient_bytes, 1.0, iteration)
    # 16 MB over 1 Gb/s: 128 ms, of which 6.7 ms hide behind the backward pass
    assert slow == pytest.approx(1 / (1 + (0.128 - iteration * 2 / 3) / iteration))
    assert scaling.network_efficiency(4, gradient_bytes, 1.0, iteration) < slow


def test_estimate_offers_machines_with_the_network_said_to_be_estimated(capsys):
    assert main(["estimate", "--gpu", "rtx-4090", "--machines", "2"]) == 1
    assert capsys.readouterr().err == (
        "advisor: error: estimate: --machines needs the network's speed, e.g. --link-gbps 25 (no guess is made)\n"
    )
    speeds = {}
    for link in ("100", "1"):
        assert main(["estimate", "--gpu", "rtx-4090", "--machines", "2", "--link-gbps", link, "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        machines = [r for r in rows if r["machines"] == 2]
        assert machines and all(r["gpu"].startswith("2 machines x") and r["devices"] == 2 for r in machines)
        assert all(r["price_usd"] == 2 * 2125 for r in machines)
        assert all("no published multi-machine results to check it against" in r["basis"] for r in machines)
        single = {r["precision"]: r["seconds_estimate"] for r in rows if r["machines"] == 1}
        speeds[link] = {r["precision"]: single[r["precision"]] / r["seconds_estimate"] for r in machines}
    for precision, speedup in speeds["100"].items():  # the post's LSTM: 16 MB of gradients every 7 ms
        assert 1 < speedup <= 2  # a fast link: two machines help, never more than twice
        assert speeds["1"][precision] < 1  # 1 Gb/s: the network costs more than the second GPU brings
