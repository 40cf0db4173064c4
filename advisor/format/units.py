"""The constants every layer counts with, written once: time and energy units, and how many devices a job may ask
for. Pure; no imports."""

from __future__ import annotations

SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0
WATT_SECONDS_PER_KWH = 3_600_000.0  # a kilowatt-hour in joules: watts x seconds / this = kWh
MOST_DEVICES = 1024  # --devices and --machines: 1 to this many
