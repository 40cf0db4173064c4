"""What a million output tokens cost on a GPU: owned (its price over its life and the hours a week it serves, plus
energy) and rented (the catalog's cheapest on-demand rental), from the tokens a second it delivers. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from advisor.errors import InputError
from advisor.format.units import HOURS_PER_WEEK, WEEKS_PER_YEAR
from advisor.infer.job import InferenceJob
from advisor.store.catalog import Gpu

# Each input's bounds: (the least, whether the least itself is allowed, the most), walked by CostInputs' one check.
COST_LIMITS = {
    "lifetime_years": (0.0, False, math.inf),
    "hours_per_week": (0.0, False, HOURS_PER_WEEK),
    "kwh_price": (0.0, True, math.inf),
}


@dataclass(frozen=True)
class CostInputs:
    """How the hardware is paid for: owned over ``lifetime_years`` serving ``hours_per_week``, energy at
    ``kwh_price`` (USD a kWh). The training habits (``advisor.decision.costs.Habits``) take their lifetime and
    electricity defaults from these. A value out of :data:`COST_LIMITS` is refused by its field's name."""

    lifetime_years: float = 3.0
    hours_per_week: float = 40.0
    kwh_price: float = 0.15

    def __post_init__(self) -> None:
        for f in fields(self):
            least, least_allowed, most = COST_LIMITS[f.name]
            value = getattr(self, f.name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if not number or value < least or (value == least and not least_allowed) or value > most:
                shown = f"{value:g}" if isinstance(value, float) else repr(value)
                raise InputError(f.name, f"must be {_bounds(least, least_allowed, most)}; got {shown}")

    @property
    def lifetime_hours(self) -> float:
        """The hours an owned card serves over its years at these hours a week."""
        return self.lifetime_years * WEEKS_PER_YEAR * self.hours_per_week

    def energy_usd_per_hour(self, gpu: Gpu) -> float:
        """What an hour of ``gpu`` at its board power costs in energy (0 where the catalog gives no power)."""
        return (gpu.value("board_power_w") or 0) / 1000 * self.kwh_price


def _bounds(least: float, least_allowed: bool, most: float) -> str:
    """'more than 0 and at most 168 (the hours in a week)', from an input's limits."""
    low = f"{least:g} or more" if least_allowed else f"more than {least:g}"
    if math.isinf(most):
        return f"a number, {low}"
    week = " (the hours in a week)" if most == HOURS_PER_WEEK else ""
    return f"{low} and at most {most:g}{week}"


DEFAULT_COSTS = CostInputs()  # three years, 40 hours a week, $0.15 a kWh


def million_token_costs(
    job: InferenceJob, gpu: Gpu, tokens_per_s: float, inputs: CostInputs
) -> tuple[float | None, float | None, str | None]:
    """(owned $, rented $ a million output tokens, the rental's provider) of ``job``'s GPUs delivering
    ``tokens_per_s``; None where the catalog has no price or no rental."""
    per_hour_millions = millions_an_hour(tokens_per_s)
    owned = rented = None
    price = gpu.price
    if price is not None:
        owned = job.devices * (price.usd / inputs.lifetime_hours + inputs.energy_usd_per_hour(gpu)) / per_hour_millions
    rental = gpu.best_rental
    if rental is not None:
        rented = job.devices * rental.usd_per_hour / per_hour_millions
    return owned, rented, rental.provider if rental else None


@dataclass(frozen=True)
class BuyOrRent:
    """When owning a GPU costs less than renting the same one for the job: after ``hours`` of serving (its price
    over what an hour's rental saves beyond its energy), that many weeks at the owner's hours and million output
    tokens at the job's speed; ``hours`` None where its energy alone costs more than the rental (renting always
    does)."""

    gpu: str
    provider: str
    hours: float | None
    weeks: float | None
    million_tokens: float | None
    lifetime_hours: float  # the hours it serves over the owner's years: past them, renting costs less


def buy_or_rent(job: InferenceJob, gpu: Gpu, tokens_per_s: float, inputs: CostInputs) -> BuyOrRent | None:
    """Owning ``gpu`` (``job.devices`` of them) against renting the same at the catalog's cheapest on-demand price
    (None: no price or no rental)."""
    price, rental = gpu.price, gpu.best_rental
    if price is None or rental is None:
        return None
    energy = job.devices * inputs.energy_usd_per_hour(gpu)
    rent = job.devices * rental.usd_per_hour
    if rent <= energy:
        return BuyOrRent(gpu.name, rental.provider, None, None, None, inputs.lifetime_hours)
    hours = job.devices * price.usd / (rent - energy)
    millions = hours * millions_an_hour(tokens_per_s)
    return BuyOrRent(gpu.name, rental.provider, hours, hours / inputs.hours_per_week, millions, inputs.lifetime_hours)


def millions_an_hour(tokens_per_s: float) -> float:
    """Millions of tokens an hour at ``tokens_per_s``."""
    return tokens_per_s * 3600 / 1e6
