"""A steady arrival rate of requests: the sequences it keeps in flight on a GPU, or that it overloads it. Pure.

Little's law: in a steady state the sequences at once are the arrival rate times the time each spends in the system.
A request's time is its prompt's prefill, then its output tokens one decode step each at that load, the steps
stretched by the share of the GPU's time the arriving prompts take (each prompt computed once, between the steps):

    users = rate x (prefill + output x step(users) / (1 - rate x prefill))

solved for the smallest whole number of users that holds it. The rate overloads the GPU (the queue grows without
end) when the prompts alone take all of its time, or when the users it needs are more than the engine runs at once
or the cache holds. What a request waits for a free slot depends on how the arrivals bunch (queueing): that is not
predicted, and the time to the first token stays the unloaded one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from advisor.infer.job import InferenceJob
from advisor.infer.speed import EngineFit, predict
from advisor.store.catalog import Gpu


@dataclass(frozen=True)
class AtRate:
    """One copy of the model at a steady arrival rate."""

    requests_per_s: float
    users: int | None  # the sequences at once in the steady state; None: the rate overloads the GPU
    seconds_per_request: float | None  # a request's prompt and output steps at that load (None: overloaded)
    prefill_share: float  # the share of the GPU's time the arriving prompts take
    step_s: float | None = None  # a decode step at that load, stretched by the prompts computed between the steps

    @property
    def overloaded(self) -> bool:
        return self.users is None


def users_at_rate(job: InferenceJob, gpu: Gpu, fit: EngineFit, rate: float, most: int) -> AtRate:
    """The sequences at once that ``rate`` requests a second keep on one copy of the model on ``gpu`` (``most``: the
    most it runs at once, the engine's batch limit or what the cache holds), by Little's law."""
    unloaded = predict(replace(job, users=1), gpu, fit)
    prefill = unloaded.time_to_first_token_s - 1 / unloaded.single_stream_tokens_per_s
    share = rate * prefill
    if share >= 1 or most < 1:
        return AtRate(rate, None, None, share)
    users, speed = 1, unloaded
    while True:
        step = speed.decode_step_s / (1 - share)
        seconds = prefill + job.output * step
        needed = max(1, math.ceil(rate * seconds - 1e-9))
        if needed <= users:
            return AtRate(rate, users, seconds, share, step)
        if needed > most:
            return AtRate(rate, None, None, share)
        users, speed = needed, predict(replace(job, users=needed), gpu, fit)
