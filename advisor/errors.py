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


class InputError(AdvisorError):
    """A value the user gave that the library refuses, named by its field (``budget``, ``lifetime_years``; ``key``:
    which one of a mapping, as a price's profile). The library never names a flag: the command line says the field
    as its option (``--lifetime-years``), the app and the service as they name it."""

    def __init__(self, field: str, message: str, key: str | None = None) -> None:
        self.field, self.message, self.key = field, message, key
        super().__init__(f"{field}{f' {key}' if key else ''}: {message}")

    @property
    def flag(self) -> str:
        """The command line's option for the field: ``lifetime_years`` is ``--lifetime-years``."""
        return "--" + self.field.replace("_", "-")


class ProfileError(AdvisorError):
    """A profile that cannot be used; ``problems`` lists every reason."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("; ".join(str(p) for p in self.problems) or "invalid profile")
