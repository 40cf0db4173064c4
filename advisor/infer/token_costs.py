"""What a million output tokens cost on a GPU: owned (its price over its life and the hours a week it serves, plus
energy) and rented (the catalog's cheapest on-demand rental), from the tokens a second it delivers. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.infer.job import InferenceJob
from advisor.store.catalog import Gpu


@dataclass(frozen=True)
class CostInputs:
    """How the hardware is paid for: owned over ``lifetime_years`` serving ``hours_per_week``, energy at
    ``kwh_usd``."""

    lifetime_years: float = 3.0
    hours_per_week: float = 40.0
    kwh_usd: float = 0.15


DEFAULT_COSTS = CostInputs()  # three years, 40 hours a week, $0.15 a kWh


def million_token_costs(
    job: InferenceJob, gpu: Gpu, tokens_per_s: float, inputs: CostInputs
) -> tuple[float | None, float | None, str | None]:
    """(owned $, rented $ a million output tokens, the rental's provider) of ``job``'s GPUs delivering
    ``tokens_per_s``; None where the catalog has no price or no rental."""
    per_hour_millions = tokens_per_s * 3600 / 1e6
    owned = rented = None
    price = gpu.price
    watts = gpu.value("board_power_w")
    if price is not None:
        hours = inputs.lifetime_years * 52 * inputs.hours_per_week
        energy = (watts or 0) / 1000 * inputs.kwh_usd
        owned = job.devices * (price.usd / hours + energy) / per_hour_millions
    rental = gpu.best_rental
    if rental is not None:
        rented = job.devices * rental.usd_per_hour / per_hour_millions
    return owned, rented, rental.provider if rental else None
