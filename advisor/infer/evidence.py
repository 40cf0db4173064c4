"""What each engine's speeds rest on: the published and measured runs every fit of it was made from, by platform and
kind of speed (``advisor engines``), so a reader sees where a figure is fitted and where it is the hardware's bound.
Pure."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from advisor.infer import platform_decode, saturated
from advisor.infer import speed as speed_model
from advisor.store.catalog import Catalog

ONE_USER_AND_BATCH = "decode and prefill, one user to a batch"
ONE_USER_DECODE = "one user's decode"
UNDER_LOAD = "under maximum load"


@dataclass(frozen=True)
class Evidence:
    """One fit of an engine: the speed it gives, on which platform, from how many runs on which GPUs."""

    engine: str
    speed: str  # one of ONE_USER_AND_BATCH, ONE_USER_DECODE, UNDER_LOAD
    platform: str
    runs: int
    gpus: tuple[str, ...]
    only: tuple[str, ...] = ()  # the architectures it answers, alone (empty: every one of its platform)

    def as_dict(self) -> dict[str, object]:
        """``advisor engines --json``'s form: its fields but the engine (the row's own), the GPUs and architectures
        lists."""
        found = {name: value for name, value in asdict(self).items() if name != "engine"}
        return found | {"gpus": list(self.gpus), "only": list(self.only)}


def engine_evidence(catalog: Catalog) -> dict[str, list[Evidence]]:
    """Each engine's fits (an engine with none is left out: its speeds are the hardware's bound where it runs)."""
    found: dict[str, list[Evidence]] = {}
    gpus_by_id = catalog.by_id()
    measured = speed_model.on_fitted_platform(speed_model.load_measured(), catalog)
    for engine in sorted({r.engine for r in measured}):
        mine = [r for r in measured if r.engine == engine]
        for platform in sorted({gpus_by_id[r.gpu].platform for r in mine}):
            rows = [r for r in mine if gpus_by_id[r.gpu].platform == platform]
            gpus = tuple(sorted({r.gpu for r in rows}))
            found.setdefault(engine, []).append(Evidence(engine, ONE_USER_AND_BATCH, platform, len(rows), gpus))
    for (engine, platform), fit in sorted(platform_decode.platform_fits(catalog).items()):
        found.setdefault(engine, []).append(Evidence(engine, ONE_USER_DECODE, platform, fit.rows, fit.gpus))
    fits = saturated.saturated_fits(catalog)
    for (engine, platform), rows in saturated.rows_by_engine_platform(catalog).items():
        gpus = tuple(sorted({r.gpu for r in rows}))
        only = saturated.only_architectures(fits[engine, platform], platform)
        found.setdefault(engine, []).append(Evidence(engine, UNDER_LOAD, platform, len(rows), gpus, only))
    return found
