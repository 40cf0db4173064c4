"""What a contributed profile must not carry: the machine's and the user's names, email addresses, phone numbers,
access tokens, home paths, serial numbers, UUIDs, MAC and IP addresses. One table of rules: the client scrubs what
they find (:func:`scrub`) before it shows and sends a profile; the server refuses a profile in which any is still
found (:func:`findings`). Pure.

A key rule drops the whole field wherever it appears (``hostname: gpu-box-7``); a text rule rewrites the part of a
string it matches (``/home/alice/data`` becomes ``~/data``). The client also removes this machine's own host and
user names wherever they appear as words (:func:`local_names`), which no pattern could know.
"""

from __future__ import annotations

import getpass
import re
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

# Keys that name a machine, a person or a unit: dropped by the client, refused by the server (any case, - or _).
PRIVATE_KEYS = frozenset(
    {
        "hostname",
        "host_name",
        "fqdn",
        "node",
        "nodename",
        "user",
        "username",
        "user_name",
        "login",
        "email",
        "serial",
        "serial_number",
        "uuid",
        "gpu_uuid",
        "mac",
        "mac_address",
        "ip",
        "ip_address",
        "address",
    }
)


@dataclass(frozen=True)
class TextRule:
    """A kind of private text: its name (said in a refusal), its pattern and what the client writes instead."""

    name: str
    pattern: re.Pattern[str]
    replacement: str


TEXT_RULES = (
    TextRule("email address", re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"), "[email]"),
    # a secret: this service's own tokens and the common providers' keys (GitHub, OpenAI, Hugging Face, Slack, AWS)
    TextRule(
        "access token",
        re.compile(
            r"\b(?:adv_[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}"
            r"|sk-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}"
            r"|AKIA[0-9A-Z]{16})"
        ),
        "[token]",
    ),
    TextRule("home path", re.compile(r"(?:/home|/Users|/export/home)/[^/\s'\"]+|[A-Za-z]:\\Users\\[^\\\s'\"]+"), "~"),
    TextRule(
        "UUID", re.compile(r"\b[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\b"), "[uuid]"
    ),
    TextRule("MAC address", re.compile(r"\b[0-9A-Fa-f]{2}(?:[:-][0-9A-Fa-f]{2}){5}\b"), "[mac]"),
    TextRule(
        "IPv4 address",
        re.compile(
            r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)"
            r"(?![\d.])"
        ),
        "[ip]",
    ),
    TextRule(
        "IPv6 address",
        re.compile(
            r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){4,7}[0-9A-Fa-f]{1,4}(?![\w:])"
            r"|(?<![\w:])(?:[0-9A-Fa-f]{1,4}:)+:(?:[0-9A-Fa-f]{1,4}:?)*[0-9A-Fa-f]{0,4}"
            r"(?![\w:])"
        ),
        "[ip]",
    ),
    TextRule(
        "host name",
        re.compile(
            r"\b[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:local|lan|internal|localdomain|"
            r"home\.arpa|corp)\b|\bip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}\b"
        ),
        "[host]",
    ),
    # a phone number: +country, (area) or groups of 2-4, 3-4 and 3-4 digits; run after the addresses (an IPv4
    # address would read as one), before serial numbers
    TextRule(
        "phone number",
        re.compile(
            r"(?<![\w.+-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)|\d{2,4})[\s.-]\d{3,4}"
            r"[\s.-]\d{3,4}(?![\w.-])"
        ),
        "[phone]",
    ),
    TextRule(
        "serial number", re.compile(r"(?i)\bserial(?:\s*(?:number|no\.?|#))?\s*[:=]?\s*[A-Za-z0-9-]{6,}"), "[serial]"
    ),
)


@dataclass(frozen=True)
class Finding:
    """One private thing found: where (a field path, as the validation writes them) and which rule."""

    field: str
    rule: str


def _key_is_private(key: Any) -> bool:
    return str(key).lower().replace("-", "_") in PRIVATE_KEYS


def _walk(value: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """Every (path, key, value) below ``value``: mapping entries and list items."""
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            yield here, key, item
            yield from _walk(item, here)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            here = f"{path}[{index}]"
            yield here, None, item
            yield from _walk(item, here)


def findings(data: Any, names: Iterable[str] = ()) -> list[Finding]:
    """Every private key and text in a profile (and each of ``names`` where it appears as a word)."""
    words = [re.compile(rf"(?<![\w-]){re.escape(n)}(?![\w-])", re.IGNORECASE) for n in names if n]
    found = []
    for path, key, value in _walk(data, ""):
        if key is not None and _key_is_private(key):
            found.append(Finding(path, f"a {key!s} field"))
            continue
        if isinstance(value, str):
            found.extend(Finding(path, rule.name) for rule in TEXT_RULES if rule.pattern.search(value))
            found.extend(Finding(path, "this machine's host or user name") for word in words if word.search(value))
    return found


def scrub(data: Any, names: Iterable[str] = ()) -> tuple[Any, list[Finding]]:
    """A copy of ``data`` without private keys, with private text replaced; and what was scrubbed."""
    words = [(re.compile(rf"(?<![\w-]){re.escape(n)}(?![\w-])", re.IGNORECASE), n) for n in names if n]
    scrubbed: list[Finding] = []

    def clean(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            kept = {}
            for key, item in value.items():
                here = f"{path}.{key}" if path else str(key)
                if _key_is_private(key):
                    scrubbed.append(Finding(here, f"a {key!s} field"))
                else:
                    kept[key] = clean(item, here)
            return kept
        if isinstance(value, list):
            return [clean(item, f"{path}[{index}]") for index, item in enumerate(value)]
        if isinstance(value, str):
            text = value
            for rule in TEXT_RULES:
                text, count = rule.pattern.subn(rule.replacement, text)
                if count:
                    scrubbed.append(Finding(path, rule.name))
            for pattern, _ in words:
                text, count = pattern.subn("[host]", text)
                if count:
                    scrubbed.append(Finding(path, "this machine's host or user name"))
            return text
        return value

    return clean(data, ""), scrubbed


def local_names() -> list[str]:
    """This machine's host name (short and full) and the user's login name, best effort: what the client removes
    wherever it appears. Names of two characters or fewer are left alone (they would match ordinary words)."""
    names = set()
    for read in (socket.gethostname, socket.getfqdn, getpass.getuser):
        try:
            name = read()
        except Exception:  # no user database entry, no resolver: nothing to remove
            continue
        names.update({name, name.split(".")[0]} if name else set())
    return sorted(n for n in names if len(n) > 2 and n.lower() not in {"localhost", "root"})
