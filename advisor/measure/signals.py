"""Ctrl-C and SIGTERM stop a run cleanly, at a safe point."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any


class InterruptGuard:
    """SIGINT and SIGTERM stop a run cleanly, at a safe point.

    Raising KeyboardInterrupt from a signal handler while a framework's C++ code is calling back into
    Python can abort the whole process, so the first signal only records the request; the run checks
    it after every training batch and between phases (``check``). A second signal raises at once.
    """

    def __init__(self) -> None:
        self.requested: int | None = None

    def handle(self, signum: int, frame: Any) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt(f"signal {signum}")
        self.requested = signum

    def check(self) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt(f"signal {self.requested}")

    @contextlib.contextmanager
    def installed(self) -> Iterator[InterruptGuard]:
        signals = (signal.SIGINT, signal.SIGTERM)
        try:
            previous = {sig: signal.signal(sig, self.handle) for sig in signals}
        except ValueError:  # not the main thread: leave the signals alone
            yield self
            return
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
