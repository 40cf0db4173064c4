"""Reading a collection of N profiles (default 100,000): a page of 100 from `advisor serve` over loopback (SQLite,
and PostgreSQL where its programs are installed), side by side with reading the same profiles from a folder.

    python benchmarks/bench_service.py [N] [--requests 300]

The profiles are generated (benchmarks/_profiles.py), parsed and validated as a submit's are, and written into each
database in large transactions (the checks' plausibility step is skipped: this times reading, not submitting). The
service then answers --requests page requests at random places in the collection (keyset pages: ``after`` an id),
one at a time from one client, each timed from request to the last byte. The folder is read as the CLI and the app
read it: ``load_frame`` through its index (a warm restart) and without it (cold).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _profiles import ROOT, generate

sys.path.insert(0, str(ROOT / "tests"))

from advisor.decision.pipeline import Advisor
from advisor.service import checks, storage
from advisor.store.results import load_frame
from advisor.store.write import dump_profile
from servers import Service, postgres_bin, postgres_server

CHUNK = 5000


def accepted_profiles(folder: Path) -> list[tuple[checks.Accepted, str]]:
    """Every profile of the folder as the service would store it (validated; its document dumped)."""
    reference = Advisor(load_frame(ROOT / "profiles").frame.iloc[:0])  # no catalog: no plausibility step
    found = []
    for path in sorted(folder.glob("*.yaml")):
        upload = checks.Upload(path.read_bytes())
        for name, check in checks.CHECKS:
            if name != "physical_bound":
                upload = check(upload, reference)
        item = checks._accepted(upload, reference)
        found.append((item, dump_profile(item.profile)))
    return found


def fill(url: str, items: list[tuple[checks.Accepted, str]]) -> None:
    database = storage.open_storage(url)
    try:
        for start in range(0, len(items), CHUNK):
            with database.transaction() as cursor:
                for item, document in items[start : start + CHUNK]:
                    database._run(
                        cursor,
                        f"INSERT INTO results ({storage._COLUMNS}, token_hash) VALUES "
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            item.id,
                            item.profile_id,
                            item.workload,
                            item.workload_name,
                            item.device,
                            item.catalog_id,
                            "listed",
                            None,
                            document,
                            "2026-12-02T00:00:00+00:00",
                            "bench",
                        ),
                    )
                    for precision, key, seconds in item.comparisons:
                        database._run(
                            cursor, "INSERT INTO comparisons VALUES (?, ?, ?, ?)", (item.id, precision, key, seconds)
                        )
    finally:
        database.close()


def page_times(service_url: str, ids: list[str], requests: int, extra: str = "") -> list[float]:
    rng = random.Random(0)
    times = []
    for _ in range(requests):
        after = rng.choice(ids)
        start = time.perf_counter()
        with urllib.request.urlopen(f"{service_url}/api/v1/results?limit=100&after={after}{extra}") as response:
            body = response.read()
        times.append(time.perf_counter() - start)
        assert b'"results"' in body
    return times


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int, nargs="?", default=100_000)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-service-"))
    try:
        folder = work / "profiles"
        folder.mkdir()
        start = time.perf_counter()
        generate(folder, args.count)
        print(f"{args.count:,} profiles generated in {time.perf_counter() - start:.0f} s")
        start = time.perf_counter()
        items = accepted_profiles(folder)
        ids = sorted(item.id for item, _ in items)
        print(f"validated as submits in {time.perf_counter() - start:.0f} s")
        reference = work / "reference"
        shutil.copytree(ROOT / "profiles", reference, ignore=shutil.ignore_patterns(".*", "published-lambda*"))
        workload = items[0][0].workload
        with postgres_server() if postgres_bin() else _nothing() as postgres:
            urls = {"SQLite": f"sqlite:///{work / 'collection.sqlite'}"}
            if postgres:
                urls["PostgreSQL"] = postgres
            for label, url in urls.items():
                start = time.perf_counter()
                fill(url, items)
                print(f"{label}: filled in {time.perf_counter() - start:.0f} s")
                service = Service(url, reference).start()
                try:
                    page_times(service.url, ids, 20)  # warm-up
                    print(
                        f"{label}: a page of 100 of {args.count:,} ({args.requests} requests): "
                        f"{summary(page_times(service.url, ids, args.requests))}"
                    )
                    quoted = urllib.request.quote(workload)
                    print(
                        f"{label}: of one workload: "
                        f"{summary(page_times(service.url, ids, args.requests, f'&workload={quoted}'))}"
                    )
                finally:
                    service.stop()
        for label, keep_index in (("folder, cold (no index)", False), ("folder, warm (its index)", True)):
            if not keep_index:
                for index in folder.glob(".advisor-index*"):
                    index.unlink()
            start = time.perf_counter()
            frame = load_frame(folder).frame
            page = frame.sort_values("profile").iloc[:100]
            print(
                f"{label}: the same page: {time.perf_counter() - start:.2f} s (the whole folder read: "
                f"{len(frame):,} rows; {len(page)} shown)"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == "__main__":
    main()
