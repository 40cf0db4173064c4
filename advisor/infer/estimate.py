"""An inference job on every catalog GPU: does it fit, how fast, and what a million output tokens cost. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from advisor.errors import AdvisorError
from advisor.infer import saturated
from advisor.infer import speed as speed_model
from advisor.infer.arrivals import AtRate, users_at_rate
from advisor.infer.engines import architecture_refusal, platform_refusal
from advisor.infer.job import InferenceJob
from advisor.infer.platform_decode import DecodeOnly, decode_ceiling, one_stream
from advisor.infer.serving_memory import VERDICTS, MemoryVerdict, memory_verdict
from advisor.infer.speed import decode_range, engine_fits
from advisor.infer.token_costs import (
    DEFAULT_COSTS,
    BuyOrRent,
    CostInputs,
    buy_or_rent,
    million_token_costs,
    millions_an_hour,
)
from advisor.infer.ways import Way, ways_to_fit
from advisor.store.catalog import FITTED_PLATFORMS, Catalog, Gpu


@dataclass(frozen=True)
class InferenceRow:
    """One GPU model (``devices`` of them) serving the job: typed, rendered by advisor.render.inference."""

    gpu: str
    catalog_id: str
    devices: int
    memory: MemoryVerdict
    refused: str | None  # why this GPU cannot run the formats (then no speed)
    speed: speed_model.Speed | None
    range_factor: float | None  # the cross-validated 90th-percentile error of single-stream decode (None: a bound)
    usd_per_million_owned: float | None
    usd_per_million_rented: float | None
    rental: str | None  # the provider whose price is used
    saturated_tokens_per_s: float | None = None  # all output tokens a second under maximum load
    saturated_batch: int = 0  # the sequences at once under that load
    saturated_fitted: bool = False  # False: the hardware's bound (no published throughput of this engine)
    replicas: int = 1  # copies of the model (each on `devices` GPUs): memory and speed are one copy's, totals all's
    runs: bool = True  # False: the engine does not run on this GPU's platform (``refused`` says why): not an option
    decode_only: DecodeOnly | None = None  # no speed: one user's decode (a platform's own fit; CUDA's without a peak)
    at_rate: AtRate | None = None  # at a rate of requests: the users it keeps in flight here (None: a number of users)
    attention_data_parallel: bool = False  # each of the devices its own users' attention, the experts split
    ways: tuple[Way, ...] = ()  # where it does not fit as asked: the formats and GPUs that fit (advisor.infer.ways)
    load_fit_speed: bool = False  # its speeds are the engine's fit under load on this platform (vLLM)
    costs_are_floors: bool = False  # one user's decode only: its costs from the most the users could get, at least

    @property
    def total_output_tokens_per_s(self) -> float | None:
        """Output tokens a second of all the copies at the asked load."""
        return None if self.speed is None else self.speed.output_tokens_per_s * self.replicas

    @property
    def total_saturated_tokens_per_s(self) -> float | None:
        """Output tokens a second of all the copies under maximum load."""
        return None if self.saturated_tokens_per_s is None else self.saturated_tokens_per_s * self.replicas


def _saturated(
    job: InferenceJob, gpu: Gpu, catalog: Catalog, fitted_only: bool = False
) -> tuple[float, int, bool] | None:
    """Output tokens a second under maximum load (the engine's constants fitted on the GPU's platform where its runs
    speak for the GPU's architecture, else the hardware's bound; ``fitted_only``: None rather than the bound)."""
    fit = saturated.saturated_fit(catalog, job.engine.id, gpu.platform)
    if not saturated.speaks_for(fit, gpu):
        if fitted_only:
            return None
        fit = saturated.SaturatedFit()  # no runs of the engine, or none of this generation: the bound
    terms = saturated.terms(job, gpu)
    if terms.batch < 1:
        return None
    return saturated.throughput(terms, max(job.output, 1), fit), terms.batch, fit.rows > 0


def _platform_saturated(job: InferenceJob, gpu: Gpu, catalog: Catalog) -> tuple[float, int, bool] | None:
    """On a platform the engines' speed is not fitted on: its throughput under maximum load from the engine's own
    published runs there, on the architectures they ran on (no bound elsewhere: the platform's software may reach
    far less of it)."""
    try:
        return _saturated(job, gpu, catalog, fitted_only=True)
    except AdvisorError:  # a figure the catalog lacks for this GPU (its link): none
        return None


def unfitted_platform_refusal(gpu: Gpu) -> str | None:
    """No speed on a platform the engines' speed is not fitted on (its memory is still answered), never CUDA's."""
    if gpu.platform in FITTED_PLATFORMS:
        return None
    return (
        f"no speed on {gpu.platform} from the engines' fit: it rests on published {', '.join(FITTED_PLATFORMS)} "
        "results, and another platform's software reaches another share of its peaks (memory is answered; where the "
        "platform's own results are published, one user's decode: 'decode only')"
    )


def inference_rows(
    job: InferenceJob, catalog: Catalog, gpu_ids: list[str] | None = None, inputs: CostInputs = DEFAULT_COSTS
) -> list[InferenceRow]:
    """The job on each catalog GPU (or those of ``gpu_ids``), the fastest single stream first; those it does not fit
    last. Memory, speed and the cost of a million tokens are one copy's (its share of the users); with several copies
    the rows' totals add them up. At a rate of requests (``job.rate``) each GPU serves the users that rate keeps in
    flight on it (:mod:`advisor.infer.arrivals`)."""
    copies, job = job.replicas, job.per_copy()
    fit = engine_fits(catalog).get(job.engine.id, speed_model.EngineFit())
    ranges = decode_range(catalog)
    rows = []
    for gpu in catalog.gpus:
        if gpu_ids is not None and gpu.id not in gpu_ids:
            continue
        if not gpu.usable_memory_gb or not gpu.value("memory_bandwidth_gbs"):
            continue  # nothing to decide with: no guess
        rows.append(_row(job, gpu, catalog, fit, ranges.get(job.engine.id) if fit.fitted else None, inputs, copies))
    return sorted(
        rows,
        key=lambda r: (
            not r.runs,
            VERDICTS.index(r.memory.verdict),
            r.refused is not None,
            -(r.speed.single_stream_tokens_per_s if r.speed else 0),
        ),
    )


def _row(
    job: InferenceJob,
    gpu: Gpu,
    catalog: Catalog,
    fit: speed_model.EngineFit,
    range_factor: float | None,
    inputs: CostInputs,
    copies: int,
) -> InferenceRow:
    """One GPU's row: its memory verdict, why it cannot run the job (if so), its speed, costs and saturation."""
    not_run = platform_refusal(job.engine, gpu.platform, gpu.architecture)
    wrong_format = architecture_refusal(job.engine, gpu.architecture, job.weights, job.kv)
    why = not_run or wrong_format or unfitted_platform_refusal(gpu)
    platform = None if not_run or wrong_format else saturated.load_fit_speed(job, gpu, catalog, fit.fitted)
    if platform is not None:  # the engine's own runs on this platform speak for it
        why, range_factor = None, platform[1]
    at_rate = saturation = None
    if why is None and job.rate is not None:
        at_rate, job, why, saturation = _at_rate(job, gpu, catalog, fit)
    verdict = memory_verdict(job, gpu.usable_memory_gb)
    speed = None
    decode_only = None if not_run or wrong_format else one_stream(job, gpu, catalog)
    if why is None:
        try:
            speed = platform[0] if platform is not None else speed_model.predict(job, gpu, fit)
        except AdvisorError as error:  # a figure the catalog lacks for this GPU: no speed, said, the rest go on
            why = str(error)
    if speed is not None and at_rate is not None:  # what the rate delivers, each step stretched by the prompts
        delivered = at_rate.requests_per_s * job.output
        speed = replace(speed, time_per_output_token_s=at_rate.step_s, output_tokens_per_s=delivered)
    owned, rented, provider, floors = _costs(job, gpu, speed, decode_only, verdict, inputs)
    if saturation is None and speed is not None:
        saturation = _saturated(job, gpu, catalog)  # an overloaded row keeps the one its rate was checked against
    elif speed is None and not (not_run or wrong_format) and gpu.platform not in FITTED_PLATFORMS:
        saturation = _platform_saturated(job, gpu, catalog)
    ways = ways_to_fit(job, gpu, fit, catalog, inputs) if not_run is None and verdict.verdict == "does not fit" else ()
    return InferenceRow(
        gpu.name,
        gpu.id,
        job.devices,
        verdict,
        why,
        speed,
        range_factor,
        owned,
        rented,
        provider,
        *(saturation or (None, 0, False)),
        copies,
        not_run is None,
        decode_only if speed is None else None,
        at_rate,
        job.attention_data_parallel,
        ways,
        platform is not None and speed is not None,
        floors,
    )


def _costs(
    job: InferenceJob,
    gpu: Gpu,
    speed: speed_model.Speed | None,
    decode_only: DecodeOnly | None,
    verdict: MemoryVerdict,
    inputs: CostInputs,
) -> tuple[float | None, float | None, str | None, bool]:
    """(owned $, rented $ a million tokens, the rental's provider, whether they are floors) where the job fits: at
    the speed estimated, or with one user's decode only, at the most tokens a second the asked users could get."""
    if verdict.verdict == "does not fit":
        return None, None, None, False
    if speed is not None:
        return *million_token_costs(job, gpu, speed.output_tokens_per_s, inputs), False
    if decode_only is None or job.rate is not None:
        return None, None, None, False
    ceiling = decode_ceiling(job, gpu, decode_only, min(job.users, verdict.most_sequences))
    return *million_token_costs(job, gpu, ceiling, inputs), True


def _at_rate(
    job: InferenceJob, gpu: Gpu, catalog: Catalog, fit: speed_model.EngineFit
) -> tuple[AtRate | None, InferenceJob, str | None, tuple[float, int, bool] | None]:
    """The users a steady rate keeps in flight on ``gpu`` and the job at them, or why the rate overloads it: past
    the users it runs or holds, or past its throughput under maximum load (the 'max tok/s' column: fitted on the
    engine's published saturated throughputs where it has them), which comes back too."""
    rate = float(job.rate or 0)
    try:
        found = users_at_rate(job, gpu, fit, rate, saturated.sequences_at_once(job, gpu))
        most_tokens = _saturated(job, gpu, catalog)
    except AdvisorError as error:  # a figure the catalog lacks for this GPU: no speed, so no users at the rate
        return None, job, str(error), None
    if found.overloaded or (most_tokens is not None and rate * job.output > most_tokens[0]):
        return replace(found, users=None, seconds_per_request=None, step_s=None), job, OVERLOADED, most_tokens
    return found, replace(job, users=found.users), None, most_tokens


OVERLOADED = (
    "overloaded at this rate: the arriving prompts, or the sequences they keep in flight, are more than the GPU runs, "
    "holds or computes at its most (max tok/s), so the queue grows without end (fewer requests a second, or more "
    "copies: --replicas)"
)


@dataclass(frozen=True)
class InferencePicks:
    """What the analysis picks among the rows that fit (None where no row qualifies)."""

    fastest: InferenceRow | None  # the most single-stream tokens a second
    cheapest_owned: InferenceRow | None  # the least $ a million output tokens, owned
    cheapest_rented: InferenceRow | None  # the least $ a million output tokens, rented
    fit_without_speed: tuple[InferenceRow, ...] = ()  # hold the job, no speed estimated (a platform not fitted)
    ways: tuple[InferenceRow, ...] = ()  # where no GPU holds the job as asked: the first few with ways to fit
    # a way to fit on a GPU the job as asked does not fit that costs less a million tokens than every GPU that holds
    # it as asked (owned, rented): the row and its way
    cheaper_way_owned: tuple[InferenceRow, Way] | None = None
    cheaper_way_rented: tuple[InferenceRow, Way] | None = None
    # a GPU holding the job with one user's decode only whose cost's floor is under the cheapest estimated one (or
    # the lowest floor where none is estimated): it may cost less, or not (owned, rented)
    floor_under_owned: InferenceRow | None = None
    floor_under_rented: InferenceRow | None = None


WAYS_SHOWN = 3  # where nothing holds the job as asked, the GPUs whose ways to fit the summary names


def picks(rows: list[InferenceRow]) -> InferencePicks:
    """The fastest fitting GPU, and the cheapest a million tokens owned and rented (tight rows count: they run); the
    GPUs that hold the job with no speed estimated (another platform, a peak nobody published); where none holds it,
    the first few GPUs with ways to fit (in the rows' order: the fastest first); and the way to fit, on a GPU that
    does not hold the job as asked, that costs less a million tokens than any that does (owned and rented)."""
    holding = [r for r in rows if r.runs and r.memory.verdict != "does not fit"]
    ok = [r for r in holding if r.speed is not None]

    def least(attribute: str) -> InferenceRow | None:
        priced = [r for r in ok if getattr(r, attribute) is not None]
        return min(priced, key=lambda r: getattr(r, attribute)) if priced else None

    def cheaper_way(attribute: str, asked: InferenceRow | None) -> tuple[InferenceRow, Way] | None:
        priced = [(r, w) for r in rows if r.runs for w in r.ways if getattr(w, attribute) is not None]
        best = min(priced, key=lambda pair: getattr(pair[1], attribute)) if priced else None
        beaten = asked is None or (best is not None and getattr(best[1], attribute) < getattr(asked, attribute))
        return best if beaten else None

    fastest = max(ok, key=lambda r: r.speed.single_stream_tokens_per_s) if ok else None
    owned, rented = least("usd_per_million_owned"), least("usd_per_million_rented")

    def floor_under(attribute: str, estimated: InferenceRow | None) -> InferenceRow | None:
        floors = [r for r in holding if r.costs_are_floors and getattr(r, attribute) is not None]
        lowest = min(floors, key=lambda r: getattr(r, attribute)) if floors else None
        under = estimated is None or (lowest is not None and getattr(lowest, attribute) < getattr(estimated, attribute))
        return lowest if under else None

    unestimated = tuple(r for r in holding if r.speed is None)
    ways = () if holding else tuple(r for r in rows if r.runs and r.ways)[:WAYS_SHOWN]
    return InferencePicks(
        fastest,
        owned,
        rented,
        unestimated,
        ways,
        cheaper_way("usd_per_million_owned", owned),
        cheaper_way("usd_per_million_rented", rented),
        floor_under("usd_per_million_owned", owned),
        floor_under("usd_per_million_rented", rented),
    )


USER_STEPS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def throughput_curve(job: InferenceJob, row: InferenceRow, catalog: Catalog) -> list[tuple[int, float, float]]:
    """(users, output tokens a second of all of them, time per output token) as users grow on one copy of the model,
    up to the most sequences of the job's context that fit on ``row``'s GPU."""
    if row.speed is None or row.memory.most_sequences < 1:
        return []
    gpu = catalog.by_id()[row.catalog_id]
    fit = engine_fits(catalog).get(job.engine.id, speed_model.EngineFit())
    out = []
    for users in (u for u in USER_STEPS if u <= row.memory.most_sequences):
        loaded = speed_model.predict(replace(job.per_copy(), users=users), gpu, fit)
        out.append((users, loaded.output_tokens_per_s, loaded.time_per_output_token_s))
    return out


CURVE_GPUS = 4  # the throughput chart draws the first few GPUs that fit


@dataclass(frozen=True)
class InferenceAnswer:
    """An inference job on every catalog GPU: its rows, the picks among them, and the throughput as users grow on
    the first few GPUs that fit (``curves``: GPU name -> :func:`throughput_curve`)."""

    rows: list[InferenceRow]
    picks: InferencePicks
    curves: dict[str, list[tuple[int, float, float]]]
    inputs: CostInputs = DEFAULT_COSTS  # how an owned card is paid for
    api_usd_per_million: float | None = None  # an API's price the user weighs renting against
    versus_api: dict[str, int | None] = field(default_factory=dict)  # the cheapest rented GPU's break-even users
    buying: BuyOrRent | None = None  # the cheapest owned GPU bought against renting the same


def answer(
    job: InferenceJob,
    catalog: Catalog,
    gpu_ids: tuple[str, ...] | None = None,
    inputs: CostInputs = DEFAULT_COSTS,
    api_usd_per_million: float | None = None,
) -> InferenceAnswer:
    """Every GPU's row for the job (or those of ``gpu_ids``) at the owner's costs ``inputs``, what the analysis picks,
    the curves the page draws, the cheapest owned GPU bought against renting the same (:func:`buying_pick`) and,
    against an API at ``api_usd_per_million``, from how many users renting the cheapest rented GPU costs less
    (:func:`break_even_users`)."""
    rows = inference_rows(job, catalog, list(gpu_ids) if gpu_ids is not None else None, inputs)
    fitting = [r for r in rows if r.memory.verdict != "does not fit" and r.speed is not None][:CURVE_GPUS]
    found = picks(rows)
    rented = found.cheapest_rented
    versus_api = {}
    if api_usd_per_million is not None and rented is not None:
        versus_api = {rented.catalog_id: break_even_users(job, rented, catalog, api_usd_per_million)}
    curves = {r.gpu: throughput_curve(job, r, catalog) for r in fitting}
    buying = buying_pick(job, found, catalog, inputs)
    return InferenceAnswer(rows, found, curves, inputs, api_usd_per_million, versus_api, buying)


def buying_pick(job: InferenceJob, found: InferencePicks, catalog: Catalog, inputs: CostInputs) -> BuyOrRent | None:
    """The cheapest GPU a million tokens owned (else the cheapest rented) bought against renting the same GPU: after
    how many hours of serving owning it costs less (None: neither pick has both a price and a rental)."""
    for row in (found.cheapest_owned, found.cheapest_rented):
        if row is not None and row.speed is not None and row.at_rate is None:
            gpu = catalog.by_id()[row.catalog_id]
            found_buying = buy_or_rent(job.per_copy(), gpu, row.speed.output_tokens_per_s, inputs)
            if found_buying is not None:
                return found_buying
    return None


def break_even_users(job: InferenceJob, row: InferenceRow, catalog: Catalog, api_usd_per_million: float) -> int | None:
    """The fewest users at once (of USER_STEPS, up to what fits) at which renting ``row``'s GPU costs no more a
    million output tokens than an API at ``api_usd_per_million``; None when it never does (or it has no rental)."""
    gpu = catalog.by_id()[row.catalog_id]
    rental = gpu.best_rental
    if rental is None:
        return None
    for users, tokens_per_s, _ in throughput_curve(job, row, catalog):
        if job.devices * rental.usd_per_hour / millions_an_hour(tokens_per_s) <= api_usd_per_million:
            return users
    return None
