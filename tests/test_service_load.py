"""The collection service under load and faults, on both databases, as real processes: 200 submits from 20 concurrent
clients lose and duplicate nothing; a service killed with SIGKILL during submits keeps every submit it acknowledged
and no partial result; two services on one PostgreSQL see each other's submits within a second. Slow: each test
starts its own services."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from advisor.service import storage
from advisor.store.write import dump_profile
from helpers import SHIPPED, needs
from servers import Service, get, new_database, submit

pytestmark = [pytest.mark.slow, needs("fastapi"), needs("uvicorn")]
CLIENTS, EACH = 20, 10


def profile(name: str, seconds: float) -> bytes:
    data = yaml.safe_load((SHIPPED / "post-titan-rtx.yaml").read_text(encoding="utf-8"))
    data.update(id=name, name=f"Titan RTX {name}")
    data["results"] = [{"precision": "float32", "total_seconds": seconds}]
    return dump_profile(data).encode("utf-8")


def integrity(url: str) -> tuple[int, int, int]:
    """(results, results without their comparison keys, keys without their result): a partial row shows here."""
    database = storage.open_storage(url)
    try:
        with database.transaction() as cursor:
            results = database._run(cursor, "SELECT COUNT(*) FROM results").fetchone()[0]
            bare = database._run(
                cursor,
                "SELECT COUNT(*) FROM results r WHERE NOT EXISTS (SELECT 1 FROM "
                "comparisons c WHERE c.result_id = r.id)",
            ).fetchone()[0]
            orphans = database._run(
                cursor,
                "SELECT COUNT(*) FROM comparisons c WHERE NOT EXISTS (SELECT 1 FROM "
                "results r WHERE r.id = c.result_id)",
            ).fetchone()[0]
    finally:
        database.close()
    return int(results), int(bare), int(orphans)


def test_200_concurrent_submits_lose_and_duplicate_nothing(database_url, reference):
    service = Service(database_url, reference, submits_per_minute=10_000).start()
    try:
        token = service.token()

        def client(number: int) -> list[tuple[int, str]]:
            return [
                (status, answer.get("id"))
                for status, answer in (
                    submit(service.url, profile(f"load-{number}-{n}", 34.0 + 0.01 * n + 0.001 * number), token)
                    for n in range(EACH)
                )
            ]

        with ThreadPoolExecutor(CLIENTS) as pool:
            answers = [a for found in pool.map(client, range(CLIENTS)) for a in found]
        assert [status for status, _ in answers] == [201] * CLIENTS * EACH
        ids = [i for _, i in answers]
        assert len(set(ids)) == CLIENTS * EACH  # every submit its own result
        assert all(get(f"{service.url}/api/v1/results/{i}")[0] == 200 for i in ids)  # every acknowledged id read
        same = profile("the-same-one", 34.5)  # the same content from every client at once: stored once
        with ThreadPoolExecutor(CLIENTS) as pool:
            replies = list(pool.map(lambda _: submit(service.url, same, token), range(CLIENTS)))
        failed = [(status, answer) for status, answer in replies if "id" not in answer]
        assert not failed, failed  # the service's own answer (its error) where a submit got no id
        assert {answer["id"] for _, answer in replies} == {replies[0][1]["id"]}
        assert sorted(status for status, _ in replies) == [200] * (CLIENTS - 1) + [201]
    finally:
        service.stop()
    assert integrity(database_url) == (CLIENTS * EACH + 1, 0, 0)


def test_a_killed_service_keeps_every_acknowledged_submit_and_no_partial_row(database_url, reference):
    service = Service(database_url, reference, submits_per_minute=10_000).start()
    token = service.token()
    acknowledged: list[str] = []
    lock, stop = threading.Lock(), threading.Event()

    def client(number: int) -> None:
        n = 0
        while not stop.is_set():
            try:
                status, answer = submit(service.url, profile(f"kill-{number}-{n}", 34.0 + 0.001 * n), token)
            except OSError:  # the service is gone
                return
            if status in (200, 201):
                with lock:
                    acknowledged.append(answer["id"])
            n += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while len(acknowledged) < 5 and time.monotonic() < deadline:  # some acknowledged, more in flight
        time.sleep(0.05)
    time.sleep(0.5)
    service.kill()  # SIGKILL mid-submits: no clean shutdown
    stop.set()
    for thread in threads:
        thread.join(60)
    assert len(acknowledged) >= 5
    restarted = Service(database_url, reference).start()
    try:
        missing = [i for i in acknowledged if get(f"{restarted.url}/api/v1/results/{i}")[0] != 200]
        assert missing == []
    finally:
        restarted.stop()
    results, bare, orphans = integrity(database_url)
    assert results >= len(set(acknowledged)) and (bare, orphans) == (0, 0)


def test_two_services_on_one_postgresql_see_each_others_submits_within_a_second(postgres, reference):
    url = new_database(postgres, "two_services")
    first, second = Service(url, reference).start(), Service(url, reference).start()
    try:
        token = first.token()
        delays = []
        for n in range(10):
            target, reader = (first, second) if n % 2 == 0 else (second, first)
            answer = submit(target.url, profile(f"shared-{n}", 34.0 + 0.01 * n), token)[1]
            sent = time.monotonic()
            while get(f"{reader.url}/api/v1/results/{answer['id']}")[0] != 200:
                assert time.monotonic() - sent < 1.0, f"submit {n} not seen by the other service within 1 s"
                time.sleep(0.01)
            delays.append(time.monotonic() - sent)
        assert max(delays) < 1.0
    finally:
        first.stop()
        second.stop()
