"""The constants every layer counts with, written once: time and energy units, and how many devices a job may ask
for. Pure; no imports."""

from __future__ import annotations

SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0
WATT_SECONDS_PER_KWH = 3_600_000.0  # a kilowatt-hour in joules: watts x seconds / this = kWh
HOURS_PER_WEEK = 7 * 24.0  # the most hours a week a card can serve
WEEKS_PER_YEAR = 52  # a lifetime in years is this many weeks of use
MOST_DEVICES = 1024  # --devices and --machines: 1 to this many
# A card's memory as its datasheet states it ("24 GB") is binary: 24 GiB, 24 x 2^30 bytes (nvidia-smi shows an RTX
# 4090's as 24,564 MiB). Predictions count decimal GB (1e9 bytes): a card holds this many of them per stated GB.
CARD_BYTES_PER_STATED_GB = 2**30 / 1e9
