"""The collection service for real: ``advisor serve`` as a process over a real SQLite file and a real PostgreSQL
server, fed by ``advisor submit``. Bad uploads are refused by their rule before anything is stored; nothing refused,
held or private is ever listed or exported; a repeated submit is the same result; the readers (the JSON pages, the
export, ``--collection``) see what was listed. The load and fault tests are in test_service_load.py (slow)."""

from __future__ import annotations

import copy
import gzip
import importlib.util
import io
import json
import tarfile
import time
import zipfile

import pytest
import yaml

from advisor.cli import main
from advisor.errors import AdvisorError
from advisor.service import privacy, storage
from advisor.service.checks import RULES
from advisor.store import load_profiles
from advisor.store.write import dump_profile
from helpers import SHIPPED, app_test, needs
from servers import Service, get, submit

pytestmark = [needs("fastapi"), needs("uvicorn")]


def shipped(profile_id: str) -> dict:
    return yaml.safe_load((SHIPPED / f"{profile_id}.yaml").read_text(encoding="utf-8"))


def text(data: dict) -> bytes:
    return dump_profile(data).encode("utf-8")


@pytest.fixture(scope="module")
def service(tmp_path_factory, reference):
    running = Service(f"sqlite:///{tmp_path_factory.mktemp('db') / 'collection.sqlite'}", reference).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def token(service) -> str:
    made = service.token()
    assert made.startswith(storage.TOKEN_PREFIX) and len(made) > 40  # never '-...', which argparse reads as an option
    return made


def listed(service: Service) -> list[dict]:
    found, after = [], ""
    while True:
        status, body = get(f"{service.url}/api/v1/results?limit=100&after={after}")
        assert status == 200
        page = json.loads(body)
        found.extend(page["results"])
        if not page["next"]:
            return found
        after = page["next"]


def exported(service: Service) -> dict[str, str]:
    status, body = get(f"{service.url}/api/v1/export.tar.gz")
    assert status == 200
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as archive:
        return {m.name: archive.extractfile(m).read().decode() for m in archive.getmembers()}


# --------------------------------------------------------------------------- privacy, pure


def test_the_privacy_rules_find_and_scrub_each_kind():
    notes = (
        "ran in /home/alice/work and C:\\Users\\bob\\x on ip-10-0-0-12 at 192.168.1.4, mac 00:1a:2b:3c:4d:5e, "
        "GPU-6f1c2b3a-1111-2222-3333-444455556666, fe80::1ff:fe23:4567:890a, box.local, serial: ABC123456, "
        "mail al@example.org, phone +1 415 555 0199, key hf_abcdefghijklmnopqrstuvwx"
    )
    data = {"notes": [notes], "host": {"hostname": "gpu-box-7", "cpu": "AMD EPYC"}, "software": {"python": "3.11.7"}}
    rules = {f.rule for f in privacy.findings(data)}
    assert rules == {
        "home path",
        "UUID",
        "MAC address",
        "IPv4 address",
        "IPv6 address",
        "host name",
        "serial number",
        "email address",
        "phone number",
        "access token",
        "a hostname field",
    }
    clean, scrubbed = privacy.scrub(data, names=["gpu-box-7"])
    assert privacy.findings(clean, names=["alice"]) == [] and {f.rule for f in scrubbed} == rules
    assert clean["host"] == {"cpu": "AMD EPYC"} and clean["software"] == {"python": "3.11.7"}
    assert clean["notes"][0].startswith("ran in ~/work and ~\\x on [host] at [ip], mac [mac], GPU-[uuid]")
    mine = privacy.scrub({"notes": ["trained on lab-box-3 by carol"]}, names=["lab-box-3", "carol"])[0]
    assert mine == {"notes": ["trained on [host] by [host]"]}


def test_no_shipped_profile_trips_a_privacy_rule():
    profiles = load_profiles(SHIPPED, use_index=False).profiles
    assert len(profiles) > 1000  # versions, driver numbers, times and sources are not addresses or names
    assert [(p.id, f) for p in profiles for f in privacy.findings(p.data)] == []


# --------------------------------------------------------------------------- the server's checks, over HTTP


def planted(token: str) -> dict[str, tuple[bytes, str | None, dict, str]]:
    """Bad uploads: (bytes, token, headers, the rule that refuses them)."""
    titan = shipped("post-titan-rtx")
    bomb = b"a: &a ['x','x','x','x','x','x','x','x','x']\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b]\n"
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("profile.yaml", b"# " + b"0" * 10_000_000)  # 10 MB of nothing, a few KB zipped
    fast = copy.deepcopy(titan)
    fast.update(id="impossibly-fast-titan")
    fast["results"] = [{"precision": "float32", "total_seconds": titan["results"][0]["total_seconds"] / 10}]
    hostname = {**copy.deepcopy(titan), "id": "with-a-hostname", "host": {"hostname": "gpu-box-7"}}
    home = {**copy.deepcopy(titan), "id": "with-a-home-path", "notes": ["data in /home/alice/lstm"]}
    future = {**copy.deepcopy(titan), "id": "from-the-future", "schema_version": 99}
    invalid = {key: value for key, value in titan.items() if key != "results"} | {"id": "no-results"}
    return {
        "malformed YAML": (b"id: [unclosed\nname: x\n", token, {}, "yaml"),
        "a YAML bomb": (bomb, token, {}, "yaml"),
        "a zip bomb": (archive.getvalue(), token, {}, "encoding"),
        "gzip-encoded": (gzip.compress(text(titan)), token, {"Content-Encoding": "gzip"}, "encoding"),
        "over the size limit": (b"# " + b"x" * 1_000_000 + b"\n" + text(titan), token, {}, "size"),
        "nested too deep": (b"a: " + b"[" * 60 + b"]" * 60 + b"\n", token, {}, "yaml"),
        "a future schema": (text(future), token, {}, "schema_version"),
        "not a valid profile": (text(invalid), token, {}, "validation"),
        "10x faster than the device's bound": (text(fast), token, {}, "physical_bound"),
        "a hostname inside": (text(hostname), token, {}, "privacy"),
        "a home path inside": (text(home), token, {}, "privacy"),
        "a missing token": (text({**titan, "id": "no-token"}), None, {}, "token"),
        "an unknown token": (text({**titan, "id": "bad-token"}), "not-a-token", {}, "unknown_token"),
    }


def test_every_planted_upload_is_refused_by_its_rule_and_nothing_of_it_is_listed(service, token):
    plants = planted(token)
    assert len(plants) >= 12
    for name, (raw, sent_token, headers, rule) in plants.items():
        status, answer = submit(service.url, raw, sent_token, headers=headers)
        assert (status, answer["rule"]) == (RULES[rule].status, rule), (name, answer)
        assert 400 <= status < 500 and answer["detail"].startswith(f"refused by rule {rule}"), name
        assert "\n" not in answer["detail"] and "Traceback" not in answer["detail"], name
    assert get(f"{service.url}/api/v1/health")[0] == 200  # the service never stops for a bad upload
    names = [r["profile_id"] for r in listed(service)] + list(exported(service))
    for planted_id in (
        "impossibly-fast",
        "with-a-hostname",
        "with-a-home-path",
        "from-the-future",
        "no-results",
        "no-token",
        "bad-token",
    ):
        assert not any(planted_id in name for name in names), planted_id


def test_a_replayed_submit_is_the_same_result_stored_once(service, token):
    raw = text({**shipped("post-gtx-1070-ti"), "id": "replayed-1070-ti"})
    first_status, first = submit(service.url, raw, token)
    again_status, again = submit(service.url, raw, token)
    assert (first_status, again_status) == (201, 200) and first["id"] == again["id"] and again["new"] is False
    same_content = raw.replace(b"id: replayed-1070-ti", b"id: replayed-1070-ti\n# a comment: not content")
    assert submit(service.url, same_content, token)[1]["id"] == first["id"]  # the content, not the bytes
    ids = [r["id"] for r in listed(service)]
    assert ids.count(first["id"]) == 1 and first["profile_id"].startswith("replayed-1070-ti-")
    status, body = get(first["url"])
    profile = json.loads(body)["profile"]
    sent = shipped("post-gtx-1070-ti")["results"][0]["total_seconds"]
    assert status == 200 and profile["id"] == first["profile_id"] and profile["results"][0]["total_seconds"] == sent


def test_a_time_far_from_the_model_is_held_and_a_private_one_kept_out_of_every_listing(service, token):
    slow = shipped("post-titan-rtx")
    slow.update(id="a-very-slow-titan")
    slow["results"] = [{"precision": "float32", "total_seconds": 3400.0}]  # 100x the post's: possible, unlikely
    status, held = submit(service.url, text(slow), token)
    assert status == 201 and held["status"] == "held" and "outside the model's cross-validated range" in held["reason"]
    status, private = submit(service.url, text({**shipped("post-cpu-only"), "id": "my-private-cpu"}), token, True)
    assert status == 201 and private["status"] == "private"
    names = [r["profile_id"] for r in listed(service)] + list(exported(service))
    assert not any(n.startswith(("a-very-slow-titan", "my-private-cpu")) for n in names)
    for answer in (held, private):
        assert get(answer["url"])[0] == 404  # never shown, even by id
    counts = json.loads(get(f"{service.url}/api/v1/health")[1])["results"]
    assert counts["held"] >= 1 and counts["private"] >= 1


def test_only_comparable_results_are_put_side_by_side(service, token):
    base = shipped("post-titan-rtx")
    first = submit(service.url, text({**base, "id": "titan-a"}), token)[1]
    other = copy.deepcopy(base)
    other.update(id="titan-b")
    other["results"] = [{**base["results"][0], "total_seconds": 33.0}]
    second = submit(service.url, text(other), token)[1]
    newer = copy.deepcopy(other)
    newer.update(id="titan-c", software={"framework": "tensorflow", "framework_version": "3.1.0"})
    third = submit(service.url, text(newer), token)[1]
    found = json.loads(get(f"{service.url}/api/v1/comparable/{first['id']}")[1])
    float32 = next(rows for key, rows in found.items() if "|float32|" in key)
    ids = [row["id"] for row in float32]
    assert second["id"] in ids and first["id"] in ids and third["id"] not in ids  # TensorFlow 3 is not compared
    assert ids.index(second["id"]) < ids.index(first["id"])  # fastest first


# --------------------------------------------------------------------------- the client


def test_submit_shows_what_it_sends_scrubbed_and_asks(service, token, tmp_path, capsys):
    data = shipped("amd-epyc-2-vcpu-cloud-vm")
    data.update(id="my-epyc", notes=["measured from /home/dave/advisor on node 10.1.2.3"])
    data["host"] = {**data["host"], "hostname": "dave-workstation"}
    path = tmp_path / "my-epyc.yaml"
    path.write_text(dump_profile(data), encoding="utf-8")
    before = len(listed(service))
    assert main(["submit", str(path), "--to", service.url, "--token", token]) == 1  # no terminal to ask: nothing sent
    out, err = capsys.readouterr()
    assert "add --yes to send" in err and len(listed(service)) == before
    assert main(["submit", str(path), "--to", service.url, "--token", token, "--yes"]) == 0
    out, err = capsys.readouterr()
    assert "scrubbed host.hostname: a hostname field" in out and "scrubbed notes[0]: home path" in out
    assert "scrubbed notes[0]: IPv4 address" in out
    assert "/home/dave" not in out and "dave-workstation" not in out and "10.1.2.3" not in out
    last = out.strip().splitlines()[-1]
    assert last.startswith(f"{path}: ") and " listed: " in last and last.endswith(tuple("0123456789abcdef"))
    profile = json.loads(get(last.rsplit(": ", 1)[1])[1])["profile"]
    assert profile["notes"] == ["measured from ~/advisor on node [ip]"] and "hostname" not in profile["host"]


def test_submit_refusals_are_one_line(service, token, tmp_path, capsys):
    fast = shipped("post-titan-rtx")
    fast.update(id="too-fast")
    fast["results"] = [{"precision": "float32", "total_seconds": 1.0}]
    path = tmp_path / "too-fast.yaml"
    path.write_text(dump_profile(fast), encoding="utf-8")
    assert main(["submit", str(path), "--to", service.url, "--token", token, "--yes"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "refused by rule physical_bound: results[0]: faster than the device's physical" in err[0]
    assert main(["submit", str(path), "--to", "http://127.0.0.1:9", "--token", token, "--yes"]) == 1
    assert "cannot reach http://127.0.0.1:9" in capsys.readouterr().err


def test_the_export_is_a_profiles_folder_and_collection_reads_it_offline_too(tmp_path, reference, monkeypatch, capsys):
    monkeypatch.setenv("ADVISOR_CACHE", str(tmp_path / "cache"))
    own = Service(f"sqlite:///{tmp_path / 'c.sqlite'}", reference, submits_per_minute=3).start()
    try:
        token = own.token()
        if time.time() % 60 > 50:  # the four submits below fall in one minute's window
            time.sleep(61 - time.time() % 60)
        sent = submit(own.url, text({**shipped("post-titan-rtx"), "id": "shared-titan"}), token)[1]
        for n in range(2):  # the token's other two submits this minute, then one too many
            titan = text({**shipped("post-titan-rtx"), "id": f"titan-{n}"})
            assert submit(own.url, titan, token, private=True)[0] == 201
        status, answer = submit(own.url, text({**shipped("post-titan-rtx"), "id": "one-too-many"}), token)
        assert (status, answer["rule"]) == (429, "rate_limit") and "over 3 submits a minute" in answer["detail"]
        assert main(["--collection", own.url, "list"]) == 0
        first = capsys.readouterr()
        assert sent["profile_id"] in first.out and "warning" not in first.err
        if importlib.util.find_spec("streamlit") is not None:  # the app reads the same collection
            monkeypatch.setenv("ADVISOR_COLLECTION_URL", own.url)
            at = app_test(monkeypatch, tmp_path / "unused")
            assert not at.exception, at.exception
            shown = [c.value.replace("\\", "") for c in at.caption]  # the app escapes Markdown
            assert any(f"Profiles from the collection at {own.url}." in c for c in shown), shown[:3]
            assert at.sidebar.selectbox(key="current").options == ["Titan RTX (the post)"]  # the collection's one
    finally:
        own.stop()
    assert main(["--collection", own.url, "compare", "--json"]) == 0  # the service is gone: the cached copy
    out, err = capsys.readouterr()
    assert sent["profile_id"] in {row["profile"] for row in json.loads(out)}
    assert "cannot reach it" in err and "reading the copy taken" in err and " seconds ago" in err
    assert main(["--collection", "http://127.0.0.1:9", "list"]) == 1  # never fetched: nothing to fall back on
    assert "no copy of it is cached" in capsys.readouterr().err
    assert main(["--collection", own.url, "add", str(SHIPPED / "post-cpu-only.yaml")]) == 1
    assert "--collection is for the commands that read profiles" in capsys.readouterr().err


# --------------------------------------------------------------------------- storage, both databases


def test_the_schema_is_migrated_once_and_a_newer_database_is_refused(database_url):
    database = storage.open_storage(database_url)
    assert database.version == storage.LATEST
    database.close()
    database = storage.open_storage(database_url)  # nothing left to apply
    with database.transaction() as cursor:
        versions = database._run(cursor, f"SELECT version FROM {storage.VERSION_TABLE}").fetchall()
        assert [v[0] for v in versions] == [number for number, _, _ in storage.MIGRATIONS]
        database._run(cursor, f"INSERT INTO {storage.VERSION_TABLE} (version) VALUES (?)", (storage.LATEST + 1,))
    database.close()
    with pytest.raises(AdvisorError, match=f"schema is version {storage.LATEST + 1}, newer than this advisor's"):
        storage.open_storage(database_url)


def test_results_are_stored_once_and_only_listed_ones_are_read(database_url, reference):
    from advisor.decision.pipeline import Advisor
    from advisor.service.checks import check_upload
    from advisor.store.catalog import load_catalog
    from advisor.store.results import load_frame

    advisor = Advisor(load_frame(reference).frame, load_catalog())
    database = storage.open_storage(database_url)
    try:
        accepted = [
            check_upload(text({**shipped("post-titan-rtx"), "id": f"titan-{n}", "name": f"Titan {n}"}), advisor)
            for n in range(5)
        ]
        for index, item in enumerate(accepted):
            stored, new = database.add(item, dump_profile(item.profile), "h", private=index == 4)
            assert new and stored.status == ("private" if index == 4 else "listed")
        assert database.add(accepted[0], dump_profile(accepted[0].profile), "h", private=False)[1] is False
        first = database.page(limit=2)
        rest = database.page(after=first[-1].id, limit=10)
        assert len(first) == 2 and len(rest) == 2 and first[-1].id < rest[0].id
        assert accepted[4].id not in {r.id for r in first + rest}
        workload = database.page(workload=accepted[0].workload, device="titan-rtx:1x")
        assert len(workload) == 4 and database.page(device="rtx-4090:1x") == []
        assert database.counts() == {"listed": 4, "private": 1}
    finally:
        database.close()


def test_a_bad_database_url_is_one_line(tmp_path):
    with pytest.raises(AdvisorError, match=r"the folder .* does not exist"):
        storage.open_storage(str(tmp_path / "nowhere" / "c.sqlite"))
    (tmp_path / "not.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(AdvisorError, match="cannot use it"):
        storage.open_storage(str(tmp_path / "not.sqlite"))
    with pytest.raises(AdvisorError, match="cannot connect to PostgreSQL") as refused:
        storage.open_storage("postgresql://nobody@127.0.0.1:9/none")
    assert "\n" not in str(refused.value)


def test_the_references_rules_are_the_checks_table():
    from advisor.service.checks import CHECKS, rules_markdown
    from helpers import ROOT

    text = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    stale = "docs/reference.md: the service's rules are stale (advisor.service.checks.rules_markdown())"
    assert f"<!-- service-rules:start -->\n{rules_markdown()}\n<!-- service-rules:end -->" in text, stale
    assert {name for name, _ in CHECKS} <= set(RULES)  # every check refuses by a rule the table names


def test_serve_without_its_extra_says_what_to_install(tmp_path, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if the serve extra were not installed
    monkeypatch.delitem(sys.modules, "advisor.service.app", raising=False)
    assert main(["serve", "--database", str(tmp_path / "c.sqlite"), "--port", "9"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "advisor: error: serve: fastapi is missing: install the service's extra, pip install 'advisor[serve]'"
    ]


# --------------------------------------------------------------------------- personal data, on both databases

# At least 12 kinds of personal data, each planted in free text (a note) and in a string field the schema knows (the
# price's source), and in a field the schema does not know: (kind, the text, what must never be found again).
PERSONAL = [
    ("an email address", "mail alice.smith@example.com", "alice.smith@example.com"),
    ("a phone number", "call +1 415 555 0199", "415 555 0199"),
    ("a phone number with an area code", "or (212) 555-0142", "555-0142"),
    ("a home path", "data in /home/alice/runs", "/home/alice"),
    ("a Windows home path", r"data in C:\Users\bob\runs", r"C:\Users\bob"),
    ("a host name", "ran on gpu-7.corp", "gpu-7.corp"),
    ("a cloud host name", "node ip-10-1-2-3 in the VPC", "ip-10-1-2-3"),
    ("an IPv4 address", "served from 203.0.113.17", "203.0.113.17"),
    ("an IPv6 address", "and fe80::1ff:fe23:4567:890a", "fe80::1ff:fe23:4567:890a"),
    ("a MAC address", "nic 00:1a:2b:3c:4d:5e", "00:1a:2b:3c:4d:5e"),
    ("a UUID", "GPU-6f1c2b3a-1111-2222-3333-444455556666", "6f1c2b3a-1111-2222-3333-444455556666"),
    ("a serial number", "serial: XK3920DD11", "XK3920DD11"),
    ("a GitHub token", "token ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("an API key", "key sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2", "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"),
]


def _with_personal_data(profile_id: str, kind: str, planted: str) -> dict:
    data = shipped("post-titan-rtx")
    data.update(id=profile_id, notes=[f"questions: {planted}"])
    data["price"] = {**data["price"], "source": f"{data['price']['source']}; {planted}"}
    data["provenance"] = {**data["provenance"], "note": planted}  # a field the schema does not know
    return data


def test_no_planted_personal_data_is_stored_listed_or_exported(database_url, reference, tmp_path, capsys):
    """Each kind, straight to the service: refused by the privacy rule. Through `advisor submit`: scrubbed, stored
    without it. The field the schema does not know is never stored or served, and the answer names it."""
    assert len(PERSONAL) >= 12
    running = Service(database_url, reference).start()
    try:
        token = running.token()
        for index, (kind, planted, secret) in enumerate(PERSONAL):
            raw = text(_with_personal_data(f"straight-{index}", kind, planted))
            status, answer = submit(running.url, raw, token)
            assert (status, answer["rule"]) == (RULES["privacy"].status, "privacy"), (kind, answer)
            path = tmp_path / f"through-{index}.yaml"
            path.write_text(dump_profile(_with_personal_data(f"through-{index}", kind, planted)), encoding="utf-8")
            assert main(["submit", str(path), "--to", running.url, "--token", token, "--yes"]) == 0, kind
            out = capsys.readouterr().out
            assert secret not in out, kind
        stored = [json.loads(get(r["url"])[1])["profile"] for r in listed(running)]
        served = json.dumps(stored) + json.dumps(listed(running)) + "".join(exported(running).values())
        assert len(stored) == len(PERSONAL)
        for kind, _, secret in PERSONAL:
            assert secret not in served, kind
        assert all("note" not in profile["provenance"] for profile in stored)
        unknown = _with_personal_data("unknown-field", "none", "nothing personal")
        unknown["provenance"]["note"] = "just a note"
        status, answer = submit(running.url, text(unknown), token)
        assert status == 201 and answer["dropped"] == ["provenance.note: not a field of the schema; not stored"]
        assert "note" not in json.loads(get(answer["url"])[1])["profile"]["provenance"]
    finally:
        running.stop()


# --------------------------------------------------------------------------- the keeper's review, on both databases


def _review(service: Service, token: str | None, result_id: str = "", decision: str = "") -> tuple[int, dict]:
    from servers import request

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if not result_id:
        status, body = request(f"{service.url}/api/v1/review", headers=headers)
    else:
        url = f"{service.url}/api/v1/review/{result_id}?decision={decision}"
        status, body = request(url, b"", headers, "POST")
    return status, json.loads(body)


def _page(service: Service, url: str, token: str | None = None) -> tuple[int, dict]:
    from servers import request

    status, body = request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    return status, json.loads(body)


def test_held_results_reach_a_keeper_who_approves_or_rejects_each(database_url, reference):
    """Two results held (100x slower than the model says): the keeper lists them with why; one approved is in the
    pages and the export at the next request, the other rejected never is; the contributor's page says held, then
    listed or rejected; a contributor's token cannot review, and a decision is made once."""
    running = Service(database_url, reference).start()
    try:
        token, keeper = running.token(), running.token(keeper=True)
        held = []
        for name in ("slow-titan-a", "slow-titan-b"):
            slow = shipped("post-titan-rtx")
            slow.update(id=name)
            slow["results"] = [{"precision": "float32", "total_seconds": 3400.0 + len(held)}]
            status, answer = submit(running.url, text(slow), token)
            assert status == 201 and answer["status"] == "held", answer
            held.append(answer)
        assert _page(running, held[0]["url"])[0] == 404  # a stranger never sees a held result
        status, page = _page(running, held[0]["url"], token)  # its contributor does, and why
        assert status == 200 and page["status"] == "held" and "cross-validated range" in page["reason"]
        assert _review(running, None)[0] == 401
        assert _review(running, token)[0:1] == (403,) and _review(running, token)[1]["rule"] == "keeper"
        status, waiting = _review(running, keeper)
        assert status == 200 and {r["id"] for r in waiting["held"]} == {a["id"] for a in held}
        assert all("outside the model's cross-validated range" in r["reason"] for r in waiting["held"])
        maybe = _review(running, keeper, held[0]["id"], "maybe")
        assert maybe[0] == 422 and maybe[1]["rule"] == "request" and maybe[1]["field"] == "decision"
        assert _review(running, token, held[0]["id"], "approve")[0] == 403
        status, approved = _review(running, keeper, held[0]["id"], "approve")
        assert status == 200 and approved["status"] == "listed"
        status, rejected = _review(running, keeper, held[1]["id"], "reject")
        assert status == 200 and rejected["status"] == "rejected"
        again = _review(running, keeper, held[1]["id"], "approve")
        assert again[0] == 409 and again[1]["rule"] == "not_held"
        ids = [r["id"] for r in listed(running)]
        names = list(exported(running))
        assert held[0]["id"] in ids and any(n.startswith("profiles/slow-titan-a") for n in names)
        assert held[1]["id"] not in ids and not any("slow-titan-b" in n for n in names)
        assert _page(running, held[1]["url"])[0] == 404
        assert _page(running, held[1]["url"], token)[1]["status"] == "rejected"
        assert _page(running, held[0]["url"])[1]["status"] == "listed"
        assert _review(running, keeper)[1]["held"] == []
    finally:
        running.stop()
