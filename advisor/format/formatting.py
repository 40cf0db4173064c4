"""Numbers as people read them: seconds, dollars, factors (shared by the analysis's sentences and the reports)."""

from __future__ import annotations

import math
from typing import Any

from advisor.format.units import SECONDS_PER_HOUR, SECONDS_PER_MINUTE


def missing(value: Any) -> bool:
    """None or NaN: a value nobody knows."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_seconds_number(value: float) -> str:
    """Seconds as a table writes them, without the unit: ``1,573``, ``34.1``, ``7.52`` (a range's ends)."""
    if missing(value):
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def fmt_seconds(value: float) -> str:
    """Seconds as a table writes them, with the unit: ``1,573 s``, ``34.1 s``."""
    return "-" if missing(value) else f"{fmt_seconds_number(value)} s"


def fmt_duration(seconds: float) -> str:
    """A length of time in a sentence: seconds under a minute and a half (two significant digits under ten: "1.2 s",
    not "1 s"), minutes under an hour and a half, else hours ("45 s", "12 min", "6.4 hours"). The one duration
    formatter of every sentence and progress line (a table's hour column writes its number alone: metrics.FORMATS)."""
    if missing(seconds):
        return "-"
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.2g} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * SECONDS_PER_MINUTE:
        return f"{seconds / SECONDS_PER_MINUTE:.0f} min"
    return f"{seconds / SECONDS_PER_HOUR:,.1f} hours"


def fmt_usd(value: float) -> str:
    if missing(value):
        return "unknown"
    return f"${value:,.2f}" if value < 100 and value != int(value) else f"${value:,.0f}"


def fmt_times(value: float) -> str:
    return "-" if missing(value) else f"{value:.2f}x"


def fmt_rate(value: float) -> str:
    return "-" if missing(value) else f"{value:,.1f}"


def fmt_usd_small(value: float) -> str:
    """Dollars with cents, or below a cent to four decimals ($0.0011): a run's energy or rental."""
    if missing(value):
        return "unknown"
    return f"${value:,.4f}" if value < 0.01 else f"${value:,.2f}"


def fmt_watts(value: float) -> str:
    return "unknown" if missing(value) else f"{value:,.0f} W"


def short_device(name: str) -> str:
    """'NVIDIA GeForce GTX 1070 Ti' -> 'GTX 1070 Ti': the name people say."""
    words = [w for w in str(name).split() if w.lower() not in ("nvidia", "geforce", "tesla")]
    return " ".join(words) or str(name)


def device_label(name: str, devices: int = 1, machines: int = 1) -> str:
    """``devices`` of the device over ``machines`` in words: 'NVIDIA H100', '2x NVIDIA H100', '2 machines x 4x
    NVIDIA H100' (``devices`` is the total, a whole number per machine)."""
    per = max(1, int(devices) // max(1, int(machines)))
    label = str(name) if per == 1 else f"{per}x {name}"
    return f"{machines} machines x {label}" if machines > 1 else label


def read_number(text: str) -> float | None:
    """A number as a person types it, 0 or more ('$1,599' is 1599), or None where it is not one: the one reader of
    the command line's numbers and dollars and the app's typed prices."""
    try:
        value = float(str(text).replace("$", "").replace(",", "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None
