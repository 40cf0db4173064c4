"""Finding what a user named: a workload, a GPU, a model, a stack, by any case, spacing or punctuation; and the one
way an unknown name is answered (the closest few, and where the full list is). Pure; no I/O."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

_NOT_WORD = re.compile(r"[^a-z0-9.]+")
CLOSEST = 4  # an unknown name is answered with at most this many of the closest known ones
SHOWN = 6  # several matches: at most this many are named


def normalise(name: str) -> str:
    """Lower case, every run of punctuation or spaces one space: 'bert_base_squad' and 'BERT-base SQuAD' alike."""
    return " ".join(_NOT_WORD.sub(" ", str(name).lower()).split())


def closest(wanted: str, names: Iterable[str], count: int = CLOSEST, cutoff: float = 0.3) -> list[str]:
    """The known names closest to ``wanted`` (compared normalised), best first."""
    by_key: dict[str, str] = {}
    for name in names:
        by_key.setdefault(normalise(name), name)
    return [by_key[key] for key in difflib.get_close_matches(normalise(wanted), list(by_key), count, cutoff)]


def matching(wanted: str, names: Sequence[str]) -> list[str]:
    """The names equal to ``wanted`` (normalised), else those that contain it (normalised), in their order."""
    key = normalise(wanted)
    exact = [n for n in names if normalise(n) == key]
    return exact or [n for n in names if key and key in normalise(n)]


def unknown_text(kind: str, wanted: str, names: Iterable[str], listed_by: str) -> str:
    """'no workload named like 'x'; closest: a, b (listed_by)': the one answer to a name nothing matches."""
    near = closest(wanted, names)
    hint = f"; closest: {', '.join(near)}" if near else ""
    return f"no {kind} named like {wanted!r}{hint} ({listed_by})"


def several_text(kind: str, wanted: str, found: Sequence[str]) -> str:
    """'several workloads named like 'x': a; b; ... and N more: give more of the name'."""
    shown = "; ".join(found[:SHOWN]) + (f"; and {len(found) - SHOWN:,} more" if len(found) > SHOWN else "")
    return f"several {kind}s named like {wanted!r}: {shown}; give more of the name"
