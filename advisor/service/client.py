"""The collection service's client: what ``advisor submit`` sends (:func:`prepare`: validated as ``validate``
does, then scrubbed), sending it (:func:`send`), and reading a service's collection through a cache on disk
(:func:`cached_collection`) so that the commands and the app go on offline, saying how old the copy is.

Only ``advisor submit`` sends anything, and only after showing it. HTTP through the standard library: the client
needs nothing the rest of advisor does not.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError, InputError, ProfileError
from advisor.format.units import SECONDS_PER_HOUR, SECONDS_PER_MINUTE
from advisor.service import privacy
from advisor.store import collection
from advisor.store.parse import parse_yaml, profile_from_data
from advisor.store.write import dump_profile

DEFAULT_URL = "http://127.0.0.1:8600"  # a service of one's own or a lab's: `advisor serve`
URL_VARIABLE = "ADVISOR_COLLECTION_URL"
TOKEN_VARIABLE = "ADVISOR_TOKEN"
CACHE_VARIABLE = "ADVISOR_CACHE"  # where --collection keeps its copies (default: ~/.cache/advisor)
TIMEOUT_SECONDS = 30.0
API = "/api/v1"


@dataclass(frozen=True)
class Prepared:
    """A profile ready to send: its file, the exact text that will be sent and what was scrubbed from it."""

    path: Path
    text: str
    scrubbed: tuple[privacy.Finding, ...]


def prepare(path: str | os.PathLike, names: list[str] | None = None) -> Prepared:
    """A profile file validated (as ``advisor validate`` does), scrubbed of private facts (this machine's names
    too) and dumped as the YAML that will be sent."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise AdvisorError(f"{path}: cannot read it: {error.strerror or error}") from None
    data = parse_yaml(raw, str(path))
    if collection.is_collection(data):
        raise AdvisorError(f"{path}: a published collection, not a profile: submit the profiles measured here")
    profile, _ = profile_from_data(data, str(path))
    clean, scrubbed = privacy.scrub(profile.data, privacy.local_names() if names is None else names)
    try:  # what is sent is still a valid profile
        profile_from_data(clean, f"{path} (scrubbed)")
    except ProfileError as error:
        raise AdvisorError(f"{path}: scrubbing left it invalid ({error}): edit the file by hand") from None
    return Prepared(path, dump_profile(clean), tuple(scrubbed))


def send(prepared: Prepared, url: str, token: str, private: bool = False) -> dict[str, Any]:
    """POST the prepared text; the service's answer (its id, status and URL). A refusal is one line."""
    query = "?private=true" if private else ""
    request = urllib.request.Request(
        f"{url.rstrip('/')}{API}/results{query}",
        data=prepared.text.encode("utf-8"),
        method="POST",
        headers={"Content-Type": "application/yaml", "Authorization": f"Bearer {token}"},
    )
    return _json(request, f"{prepared.path}")


def _json(request: urllib.request.Request, what: str) -> Any:
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        try:
            detail = json.loads(error.read().decode("utf-8")).get("detail")
        except (ValueError, AttributeError):
            detail = None
        raise AdvisorError(f"{what}: {detail or f'the service answered {error.code} {error.reason}'}") from None
    except (urllib.error.URLError, OSError, TimeoutError) as error:
        reason = getattr(error, "reason", error)
        raise AdvisorError(f"{what}: cannot reach {request.full_url.split('/api/')[0]}: {reason}") from None


# --------------------------------------------------------------------------- reading a collection


@dataclass(frozen=True)
class CachedCollection:
    """A service's collection as a profiles folder on disk, and how fresh it is: ``fetched`` is when the copy was
    taken, ``offline`` the reason it could not be refreshed now (None: fresh from the service)."""

    folder: Path
    url: str
    fetched: dt.datetime
    offline: str | None = None

    def age_text(self, now: dt.datetime | None = None) -> str:
        """How old the copy is, in words (for a warning when offline)."""
        seconds = ((now or dt.datetime.now(dt.UTC)) - self.fetched).total_seconds()
        if seconds < 90:
            return f"{seconds:.0f} seconds"
        if seconds < 5400:
            return f"{seconds / SECONDS_PER_MINUTE:.0f} minutes"
        return f"{seconds / SECONDS_PER_HOUR:.1f} hours" if seconds < 172_800 else f"{seconds / 86_400:.0f} days"


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "advisor") / "collections"


def cached_collection(url: str, root: Path | None = None) -> CachedCollection:
    """The collection at ``url`` as a profiles folder: fetched afresh (the service's export, unpacked into a new
    folder and swapped in whole), or, when the service cannot be reached, the last copy with its age. No copy and
    no service: a one-line error."""
    base = (root or cache_root()) / hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]
    folder, stamp = base / "profiles", base / "fetched.json"
    try:
        archive = _fetch(url)
    except AdvisorError as error:
        if not stamp.exists():
            raise InputError("collection", f"{error} (and no copy of it is cached)", str(url)) from None
        fetched = dt.datetime.fromisoformat(json.loads(stamp.read_text(encoding="utf-8"))["fetched"])
        return CachedCollection(folder, url, fetched, offline=str(error))
    fetched = dt.datetime.now(dt.UTC)
    _unpack(archive, base, folder)
    stamp.write_text(json.dumps({"url": url, "fetched": fetched.isoformat()}), encoding="utf-8")
    return CachedCollection(folder, url, fetched)


def _fetch(url: str) -> bytes:
    request = urllib.request.Request(f"{url.rstrip('/')}{API}/export.tar.gz")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            return response.read()
    except urllib.error.HTTPError as error:
        raise AdvisorError(f"the service answered {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError, TimeoutError) as error:
        raise AdvisorError(f"cannot reach it: {getattr(error, 'reason', error)}") from None


def _unpack(archive: bytes, base: Path, folder: Path) -> None:
    """The export's profiles into a new folder beside the old one, then swapped in: a reader never sees half."""
    base.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".fetch-", dir=base))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            for member in tar.getmembers():
                name = Path(member.name)
                if not member.isfile() or name.parent != Path("profiles") or name.suffix != ".yaml":
                    continue  # only profiles/<id>.yaml: no path leaves the folder
                source = tar.extractfile(member)
                if source is not None:
                    (fresh / name.name).write_bytes(source.read())
        old = base / ".old"
        shutil.rmtree(old, ignore_errors=True)
        if folder.exists():
            folder.rename(old)
        fresh.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(fresh)


def parse_url(text: str) -> str:
    """An http(s) URL of a service, or a one-line error."""
    parsed = urllib.parse.urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise AdvisorError(f"{text!r} is not a service's URL (http://host:port)")
    return text.rstrip("/")
