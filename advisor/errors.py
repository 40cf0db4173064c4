"""The advisor's one domain error type and the problems it carries."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one field of one profile file."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file else ""
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"


class AdvisorError(Exception):
    """A user-facing error: the CLI prints it as one line and exits with status 1."""


class ProfileError(AdvisorError):
    """A profile that cannot be used; ``problems`` lists every reason."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("; ".join(str(p) for p in self.problems) or "invalid profile")
