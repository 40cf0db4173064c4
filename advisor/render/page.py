"""The app's page as values: every input (its label, menu, default and help), every headline and caption the app
lays out. ``streamlit_app.py`` calls ``st.*`` over these and decides nothing; the library decided, this module says
it. No Streamlit, and no file read but the library's own packaged data through its loaders.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from advisor.decision.costs import GOAL_HELP, HABIT_OPTIONS, Habits
from advisor.format import metrics
from advisor.format.formatting import fmt_duration, fmt_seconds, fmt_usd, fmt_usd_small, fmt_watts, missing, read_number
from advisor.format.units import HOURS_PER_WEEK
from advisor.format.vocabulary import Goal, PrecisionFilter, Source, WorkloadKind
from advisor.infer.token_costs import CostInputs
from advisor.llm.job import Checkpointing, Method
from advisor.render import basis as render_basis
from advisor.render import charts, prose, text_width
from advisor.render import compare as render_compare
from advisor.render import jobs as render_jobs
from advisor.render.estimate import constants_text

TITLE = "Which upgrade makes your training pay?"
INTRO = (
    "Speedups, dollars per speedup and what a run really costs, from real training runs (the post's LSTM(1000), "
    "your own Keras model measured with `python -m advisor measure`, your own training job recorded where it runs "
    "with `advisor.track`, or quoted from a source) and estimates for today's GPUs."
)
CHART_BARS = 25  # bar charts show the best options; the table shows more, the CSV every one
CHART_POINTS = 300  # the price-time chart draws the frontier and the fastest results
TABLE_ROWS = 200  # the options table shows the best in the goal's order (a buyer reads the top); the CSV has every one
CHARTS = ("Speedup", "Price vs time", "Dollars per speedup")
PRECISION_CHOICES = {choice.label: choice.value for choice in PrecisionFilter}
GOAL_LABELS = {goal.value: goal.label for goal in Goal}
YOUR_PRICE = "your price"
DOLLARS_PATTERN = r"^\s*\$?\s*[0-9][0-9,]*(\.[0-9]*)?\s*$"  # what the "your price" column takes: 1500, $1,500
EDIT_ICON_PX = 18  # the editable column's pencil, beside its widest text
TABLE_HELP = {
    YOUR_PRICE: "type the price you were offered: the recommendation, the charts and the downloads use it (and say so)",
    "option": "the profile's name, or a catalog GPU nobody measured (source: estimated)",
    "price is": "what the price is and when it was true: a catalog price's kind and date, the profile's, or yours",
    "source": "measured, quoted, or estimated (with a likely range)",
}
WORKLOAD_KINDS = {
    WorkloadKind.LSTM: "LSTM, ",
    WorkloadKind.MODEL: "your model, ",
    WorkloadKind.TRACKED: "your job, tracked, ",
    WorkloadKind.PUBLISHED: "",  # a published name says it
}
ICONS = {"warning": ":material/warning:"}  # Material icons: an emoji loads Streamlit's table of every emoji (0.3 s)
STACK_CHOICE = "stack"  # a job input left to the training stack's default
METHOD_LABELS = {
    Method.FULL.value: "full fine-tuning",
    Method.LORA.value: "LoRA",
    Method.QLORA.value: "QLoRA (4-bit base)",
}


INPUT_KINDS = ("number", "select", "multiselect", "radio", "toggle", "checkbox", "file")  # each has its app widget


@dataclass(frozen=True)
class Input:
    """One input of the page: its kind (number, select, radio, toggle, checkbox or file), label, session key,
    choices (``labels``: how each is shown), default and help."""

    kind: str
    label: str
    key: str
    options: tuple = ()
    labels: Mapping[Any, str] | None = None
    value: Any = None
    index: int | None = 0
    least: float | None = None
    most: float | None = None
    step: float | None = None
    format: str | None = None
    placeholder: str | None = None
    help: str | None = None
    types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in INPUT_KINDS:  # a page made wrong: a bug, not a user's mistake
            raise ValueError(f"Input {self.key}: kind {self.kind!r} is none of {', '.join(INPUT_KINDS)}")

    def shown(self, option: Any) -> str:
        """An option as the menu shows it."""
        return str(self.labels[option]) if self.labels is not None else str(option)


def _number(label: str, key: str, least: float, most: float | None, value: Any, step: Any = None, **more) -> Input:
    """A number input: its bounds (``most`` None: none), its default (None: empty) and step."""
    return Input("number", label, key, least=least, most=most, value=value, step=step, **more)


def _split_help(engines: Any) -> str:
    """How each engine splits a copy of the model over its GPUs (``engines``: engines.yaml's, read once)."""
    layered = [e.name for e in engines.engines.values() if e.splits == "whole layers"]
    parallel = [e.name for e in engines.engines.values() if e.splits == "tensor parallel"]
    return (
        f"Tensor parallel ({', '.join(parallel)}: each layer split, the GPUs working at once), or whole layers on "
        f"each GPU ({', '.join(layered)}: a token passes them in turn, one stream at one GPU's speed)."
    )


def _engine_help(engines: Any) -> str:
    """Where each engine runs (``engines``: engines.yaml's, read once): its platforms and, where its install pages
    name them, the architectures; the GPUs an engine does not run on are left out of its answer."""
    where = []
    for engine in engines.engines.values():
        arches = f" ({', '.join(engine.architectures)})" if engine.architectures else ""
        where.append(f"{engine.name}: {', '.join(engine.platforms)}{arches}")
    return "Where each runs: " + "; ".join(where) + ". The GPUs an engine does not run on are left out of its answer."


def _stack_or(label: str, key: str, words: tuple[str, ...], help_text: str) -> Input:
    """A menu of a job's choice whose first entry leaves it to the training stack."""
    options = (STACK_CHOICE, *words)
    labels = {o: "the stack's" if o == STACK_CHOICE else o for o in options}
    return Input("select", label, key, options, labels, help=help_text)


# --------------------------------------------------------------------------- the sidebar


def upload_input() -> Input:
    """The sidebar's upload of a profile (read, never saved)."""
    return Input(
        "file",
        "Your own profile (YAML, compared without being saved)",
        "upload",
        help="Make one with: python -m advisor measure --price-usd 0",
        types=("yaml", "yml"),
    )


def workload_input(names: Mapping, counts: Mapping, order: list) -> Input:
    """The workload menu: each by name, kind and its results (``order``: analysis.order_workloads')."""
    labels = {k: f"{names[k]} ({WORKLOAD_KINDS.get(k[0], '')}{counts[k]} results)" for k in order}
    return Input("select", "Workload", "workload", tuple(order), labels)


def sidebar_inputs() -> dict[str, Input]:
    """Budget, precision, goal, estimates and the two-machine link, in the sidebar's order."""
    return {
        "budget": _number(
            "Budget (USD)",
            "budget",
            0.0,
            None,
            None,
            100.0,
            format="%.0f",
            placeholder="no limit",
            help="The most you will spend on a purchase (empty: no limit). Renting needs none.",
        ),
        "precision": Input(
            "radio",
            "Precision",
            "precision",
            tuple(PRECISION_CHOICES),
            help="float32 only, mixed precision only, or the best of both (mixed precision is a free upgrade).",
        ),
        "goal": Input(
            "radio",
            "Goal",
            "goal",
            tuple(GOAL_LABELS),
            GOAL_LABELS,
            help="; ".join(f"{GOAL_LABELS[g]}: {text}" for g, text in GOAL_HELP.items()),
        ),
        "estimates": Input(
            "toggle",
            "Include estimates",
            "estimates",
            value=True,
            help="Add the performance model's estimates for the catalog's GPUs (marked estimated, with a likely "
            "range).",
        ),
        "link_gbps": _number(
            "Also two machines, linked at (Gb/s)",
            "link_gbps",
            0.0,
            None,
            None,
            10.0,
            format="%g",
            placeholder="not offered",
            help="Offer two machines of each GPU joined by a network of this speed. Estimated: the network's cost "
            "comes from the link's speed (an all-reduce that hides behind the backward pass), and no published "
            "result spans machines to check it.",
        ),
    }


# The habit inputs: (label, smallest value, step); what each means is costs.HABIT_OPTIONS.
HABIT_INPUTS = {
    "runs_per_week": ("Training runs per week", 0.0, 1.0),
    "hour_value": ("An hour of waiting is worth (USD)", 0.0, 5.0),
    "kwh_price": ("Electricity (USD per kWh)", 0.0, 0.01),
    "lifetime_years": ("Years you keep bought hardware", 0.5, 0.5),
    "resale_usd": ("Your current hardware would sell for (USD)", 0.0, 50.0),
    "session_minutes": ("A rented session's start-up (minutes)", 0.0, 1.0),
    "runs_per_session": ("Runs in one rented session", 1.0, 1.0),
}


def habit_inputs() -> list[Input]:
    """The user's habits and prices, each from its one definition (costs.HABIT_OPTIONS: what it means)."""
    defaults = Habits()
    return [
        _number(
            label,
            name,
            least,
            None,
            float(getattr(defaults, name)),
            step,
            help=f"{HABIT_OPTIONS[name][1].capitalize()}.",
        )
        for name, (label, least, step) in HABIT_INPUTS.items()
    ]


# --------------------------------------------------------------------------- a language-model job


HARDWARE_HELP = (
    "Narrow the GPUs to one vendor's (by the platform they run: CUDA, ROCm, Metal) or to whole machines (a Mac, a "
    "128 GB mini-PC, a DGX Spark), whose price is the machine's and whose memory counts what the GPU may allocate."
)


def hardware_input(key: str) -> Input:
    """Which GPUs a job is answered on: every one, one vendor's, or the whole machines."""
    from advisor.store.catalog import hardware_choices

    return Input("select", "Hardware", key, hardware_choices(), help=HARDWARE_HELP)


def hardware_ids(catalog: Any, values: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    """The catalog GPUs the hardware input chose (None: every one)."""
    from advisor.store.catalog import EVERY_GPU, gpu_ids_of

    return gpu_ids_of(catalog, values.get(key) or EVERY_GPU)


def _job_left(presets: Mapping, sizes: Mapping[str, str], stacks: Mapping, default_stack: str, why: str) -> list:
    """The job's model (a preset or an uploaded config.json), its training stack and checkpointing."""
    return [
        Input(
            "select",
            "Model",
            "llm_model",
            tuple(presets),
            {k: f"{presets[k].name} ({sizes[k]})" for k in presets},
            index=None,
            placeholder="Pick a model",
        ),
        Input("file", "or its config.json (read, never saved)", "llm_config", types=("json",)),
        Input(
            "select",
            "Training stack",
            "llm_stack",
            tuple(stacks),
            {k: stacks[k].title for k in stacks},
            index=list(stacks).index(default_stack),
            help="Its defaults decide the memory (the loss, checkpointing, where the optimizer's states live) "
            f"and, for a tuned FP8 stack (nemo), the speed and how the model is split over several GPUs. "
            f"Default: {why}",
        ),
        _stack_or(
            "Activation checkpointing",
            "llm_ckpt",
            tuple(c.value for c in Checkpointing),
            "auto: on only where the job does not fit without it",
        ),
        hardware_input("llm_hardware"),
    ]


def job_inputs(presets: Mapping, default_stack: str, why: str, stacks: Mapping) -> dict:
    """The language-model job's inputs by column (left, middle, right), the training stack's choices among them
    (``presets``: the models by id; ``stacks``: the stacks by name, ``why``: why the default is)."""
    from advisor.llm.config import size_text

    sizes = {key: size_text(model) for key, model in presets.items()}
    return {
        "left": _job_left(presets, sizes, stacks, default_stack, why),
        "middle": [
            Input("select", "Method", "llm_method", tuple(METHOD_LABELS), METHOD_LABELS, index=1),
            _number("Tokens per example (sequence length)", "llm_seq", 64, 262_144, 2048, 128),
            _number("Micro-batch (sequences)", "llm_batch", 1, 4096, 1),
            _stack_or(
                "Pure bf16 (no fp32 master copy)",
                "llm_pure_bf16",
                ("on", "off"),
                "Weights, gradients and optimizer state in bf16, as LitGPT's bf16-true.",
            ),
            _stack_or(
                "torch.compile",
                "llm_compile",
                ("on", "off"),
                "Compiled kernels keep fewer activations for the backward pass (torchtune's README measured its "
                "memory with it on; its recipes ship it off).",
            ),
        ],
        "right": [
            _number("Examples", "llm_examples", 1, 10**9, 10_000, 1000),
            _number("Epochs", "llm_epochs", 0.1, 1000.0, 1.0, 0.5),
            _number(
                "GPUs",
                "llm_devices",
                1,
                64,
                1,
                help="Data parallel; a stack with tensor parallelism (nemo) splits the model over the fewest of them "
                "it fits on.",
            ),
            Input("checkbox", "Shard the model over them (FSDP / ZeRO-3)", "llm_fsdp", value=False),
        ],
    }


def stack_choice(value: str | None) -> str | None:
    """An input left to the stack (None), else the word chosen."""
    return None if value in (None, STACK_CHOICE) else value


JOB_EXPANDER = "What are you training? A language model: full fine-tuning, LoRA or QLoRA"
JOB_HINT = "Pick a preset (their numbers come from each model's config.json) or upload your own."
JOB_BACK = ("Compare the profiles instead", "Back to the profiles' workload: the page answers for it again.")


def job_title(found: Any) -> str:
    """'**Llama 3.1 8B, LoRA ...**: 20,480,000 tokens, 8.03 B parameters ...' (Markdown, its text made safe)."""
    safe = prose_safe
    return f"**{safe(found.job.describe())}**: " + safe(
        f"{found.job.run_tokens:,.0f} tokens, {render_jobs.weights_text(found.job)}."
    )


def job_caption(found: Any) -> str:
    """What a job's table rests on."""
    basis = render_jobs.memory_basis(found.options[0].footprint) if found.options else ""
    return (
        "Estimated, not measured: time for the published stacks' mix ("
        + render_basis.LANGUAGE_MODEL_STACKS
        + "). "
        + basis
        + "; time ranges: the cross-validated error of language-model throughputs in the estimate's situation "
        "(advisor/data/llm_crossval.yaml)" + render_jobs.fp8_source(found) + "."
    )


@dataclass(frozen=True)
class Headline:
    """A page's answer: its metric (label, value, delta), the cells under it, what it says and its captions."""

    label: str
    value: str
    delta: str | None = None
    cells: list[tuple[str, str, str | None]] = field(default_factory=list)
    said: str = ""
    free: bool = False
    captions: list[str] = field(default_factory=list)


def job_headline(choice: Any, mine: Any | None) -> Headline:
    """The page's answer for a language-model job (``mine``: its option on the hardware you have, if any)."""
    best = choice.best
    label = "Best GPU for this job"
    said = " ".join(render_jobs.choice_lines(choice))
    captions = []
    if mine is not None:
        captions.append(
            f"On the hardware you have ({mine.gpu.name}): {mine.verdict}, {mine.footprint.total_gb:.1f} GB "
            f"(up to {mine.footprint.high_gb:.1f}) of {render_basis.capacity_text(mine.gpu)}."
        )
    captions.append("The profiles' workload is another job: 'Compare the profiles instead' above answers for it.")
    if best is None:
        return Headline(label, "None within your choices", said=said, captions=captions)
    delta = f"{best.tokens_per_second:,.0f} tokens/s, {fmt_duration(best.seconds)} a run"
    return Headline(label, best.name, delta, said=said, captions=captions)


# --------------------------------------------------------------------------- the profiles' answer


def headline(rec: Any) -> Headline:
    """One plain answer: the best option for the goal, what it costs, saves and when it pays back; rent or buy."""
    best = rec.best
    captions = []
    if best is None:
        head = Headline("Best upgrade", "None within your choices", said=prose.reason(rec))
    else:
        free = best.free_upgrade
        cost = "free" if free else f"{fmt_usd(best.dollars_per_speedup_vs_current)} per 1x"
        # a payback counting the time saved alone (the power is unknown) is said in the tooltip
        time_only = render_compare.payback_counts_time_alone(best.payback_weeks, best.payback_counts)
        payback = render_compare.payback_text(
            best.payback_weeks,
            best.payback_counts,
            best.payback_beyond_lifetime,
            best.faster and not missing(best.upgrade_cost_usd),
            weeks_word="weeks",
        )
        cells = [
            ("Upgrade cost", "free" if free else fmt_usd(best.upgrade_cost_usd), None),
            ("Hours saved a week", f"{best.hours_saved_per_week:,.1f} h", None),
            ("Pays for itself", payback, "Counts the time saved alone: the power is unknown." if time_only else None),
            ("Cost per run", fmt_usd_small(best.usd_per_run), None),
        ]
        if best.source == Source.ESTIMATED:
            captions.append(f"Estimated, not measured: {render_basis.sentence(best.basis) or best.source_detail}")
        head = Headline(
            "Best upgrade",
            prose.describe_result(best),
            f"{best.speedup_vs_current:.2f}x faster, {cost}",
            cells,
            prose.reason(rec),
            free,
        )
    h, current = rec.habits, rec.current
    power = f" ({current.power_source})." if current.power_source != "unknown" else "."
    captions += [
        "Renting: " + prose.rent_advice(rec),
        f"With: {h.runs_per_week:g} runs a week, an hour of waiting worth ${h.hour_value:,.0f}, ${h.kwh_price:.2f} "
        f"per kWh, hardware kept {h.lifetime_years:g} years (change them in the sidebar; an hour worth $0 counts the "
        "energy alone).",
        f"Current: {prose.option_name(current.name, current.source)} ({current.precision}), "
        f"{fmt_seconds(current.seconds)} per training run; power {fmt_watts(current.power_watts)}{power}",
        *("Note: " + note for note in prose.notes(rec, other_workloads=False)),  # the workload menu lists the others
    ]
    return Headline(head.label, head.value, head.delta, head.cells, head.said, head.free, captions)


def cost_caption(rec: Any) -> str:
    """What the cost chart counts, over how many runs."""
    habits, horizon = rec.habits, rec.horizon_runs
    unknown = (
        ""
        if not missing(rec.current.power_watts)
        else (" Your current hardware's power is unknown: its energy counts as $0.")
    )
    return (
        f"Over {habits.lifetime_years:g} years at {habits.runs_per_week:g} runs a week ({horizon:,} runs). Each run "
        f"costs its energy plus its waiting time at ${habits.hour_value:,.2f} an hour.{unknown}"
    )


def options_caption(count: int) -> str:
    more = f" {count - TABLE_ROWS:,} more are in the CSV." if count > TABLE_ROWS else ""
    return (
        "Estimated rows show their likely range beside the time; payback * means the energy saving is unknown and "
        f"left out.{more}"
    )


def price_time_caption(shown: int, priced: int) -> str:
    note = f" The frontier and the {CHART_POINTS} fastest of {priced:,} results are drawn." if shown < priced else ""
    return (
        "A result is on the frontier when nothing is both cheaper (or equal) and faster. Unpriced results are left "
        f"out.{note}"
    )


LADDER_TITLE = "The upgrade ladder: where returns fall off"
LADDER_COLUMNS = [  # the app names options
    ("step", lambda r: prose.describe(r["name"], r.get("source"), r["precision"])),
    *render_compare.LADDER_COLUMNS[1:],
]
LADDER_CAPTION = metrics.definition("marginal_usd_per_hour_saved_per_week")
DEVICES_TITLE = "What each added device or machine buys"


def collection_note(copy: Any) -> str:
    """Where the profiles come from: the collection service's copy (offline: how old it is)."""
    offline = f": offline ({copy.offline}), the copy taken {copy.age_text()} ago." if copy.offline else "."
    return f"Profiles from the collection at {copy.url}{offline}"


def no_profiles(folder_name: str) -> str:
    return (
        "No profiles yet. Measure this machine with `python -m advisor measure --price-usd 0` and put the YAML file "
        f"it writes into `{folder_name}/`, or upload a profile in the sidebar."
    )


HOW_ESTIMATES_ARE_MADE = (
    "An estimate predicts the total training time from the GPU's specifications: each step of the run is bound by "
    "**arithmetic** (its FLOPs over the precision's peak), by **memory** traffic (its bytes over the bandwidth) or "
    "by a fixed **per-step** cost, plus a start-up. How much of its peak and bandwidth each GPU, architecture and "
    "workload reaches is fitted on every GPU result the model can describe: the published benchmarks, the post's and "
    "your own runs. Each range is the error measured by cross-validation for the estimate's situation (a GPU with "
    "results or not, a workload with results on several GPUs, one, or none)."
)


def prose_safe(text: str) -> str:
    """Profile text as Markdown shows it literally (render.tables.markdown_safe)."""
    from advisor.render.tables import markdown_safe

    return markdown_safe(text)


# --------------------------------------------------------------------------- running or serving a model

INFERENCE_EXPANDER = "Running or serving a model? Memory, tokens/s and the cost of a million tokens per GPU"
INFERENCE_HINT = "Pick a model (inference presets carry their sliding windows, latent attention and experts)."


MIXED_HELP = (
    "Two cards or more of one platform in one machine, the model split layer by layer as llama.cpp does by default "
    "(by each card's memory): each card's share, whether it fits, one stream's speed."
)


def mixed_picked(values: Mapping[str, Any]) -> list[str] | None:
    """The cards the job is to be split over (two or more picked), else None: the job on every GPU."""
    picked = list(values.get("run_mixed") or ())
    return picked if len(picked) > 1 else None


def mixed_choices(catalog: Any) -> dict[str, str]:
    """The cards a model can be split over (a whole machine is not a card), by id."""
    return {gpu.id: gpu.name for gpu in catalog.gpus if not gpu.whole_machine}


HOURS_HELP = (
    "The cost of a million tokens on a card you own spreads its price over the hours it serves in its lifetime; the "
    "years and the electricity are the sidebar's habits (their defaults where it is not shown)."
)
API_HELP = "Say from how many users at once renting the cheapest rented GPU costs less than this API (0: no API)."
RATE_HELP = (
    "A steady rate of requests instead of users at once: each GPU serves the users the rate keeps in flight on it "
    "(Little's law), or is said to be overloaded; the first token's wait for a free slot is not predicted."
)


def inference_inputs(
    models: Mapping[str, str], engines: Any, engine: str | None, catalog: Any = None
) -> dict[str, list[Input]]:
    """The inference job's inputs by column (``engine``: the one picked, whose formats the middle column offers;
    None: the first; ``catalog``: the cards the mixed-cards menu offers, none without it)."""
    from advisor.infer.job import ATTENTION_DATA_PARALLEL

    chosen = engines.engines[engine or next(iter(engines.engines))]
    cards = mixed_choices(catalog) if catalog is not None else {}
    return {
        "left": [
            Input("select", "Model", "run_model", tuple(models), models, index=None, placeholder="Pick a model"),
            Input("file", "or its config.json (read, never saved)", "run_config", types=("json",)),
            Input(
                "select",
                "Engine",
                "run_engine",
                tuple(engines.engines),
                {e: v.name for e, v in engines.engines.items()},
                help=_engine_help(engines),
            ),
            hardware_input("run_hardware"),
        ],
        "middle": [
            Input("select", "Weights", "run_weights", tuple(chosen.weights)),
            Input("select", "Cache", "run_kv", tuple(chosen.kv_cache)),
            _number("GPUs a copy is split over", "run_devices", 1, 64, 1, help=_split_help(engines)),
            _number("Copies (data parallel)", "run_replicas", 1, 64, 1),
            Input(
                "checkbox",
                "Experts split, attention per GPU",
                "run_attention_dp",
                value=False,
                help=ATTENTION_DATA_PARALLEL[0].upper() + ATTENTION_DATA_PARALLEL[1:] + ".",
            ),
        ],
        "right": [
            _number("Prompt tokens", "run_prompt", 1, 1_048_576, 1024, 256),
            _number("Output tokens", "run_output", 1, 1_048_576, 256, 64),
            _number("Users at once", "run_users", 1, 4096, 1),
            _number("or requests a second (0: the users)", "run_rate", 0.0, 1e6, 0.0, 0.5, help=RATE_HELP),
            _number(
                "Hours a week an owned card serves",
                "run_hours",
                1.0,
                HOURS_PER_WEEK,
                CostInputs.hours_per_week,
                1.0,
                help=HOURS_HELP,
            ),
            _number(
                "An API's price (USD a million output tokens; 0: none)", "run_api", 0.0, None, 0.0, 0.1, help=API_HELP
            ),
            *(
                [Input("multiselect", "Mixed cards (llama.cpp)", "run_mixed", tuple(cards), cards, help=MIXED_HELP)]
                if cards
                else []
            ),
        ],
    }


# --------------------------------------------------------------------------- the options table, charts, details

MORE_COLUMNS_HELP = "Also what each price is (its kind and date) and what renting costs a run."
DOWNLOADS = (  # (label, what renders it from the recommendation, file name, type): made only when clicked
    ("Download the table (CSV)", render_compare.options_csv, "advisor-options.csv", "text/csv"),
    (
        "Download the recommendation (Markdown)",
        render_compare.recommendation_markdown,
        "advisor-recommendation.md",
        "text/markdown",
    ),
)


def typed_prices(prices: Mapping[str, float], ids: list[str], cells: list[Any]) -> dict[str, float]:
    """The prices the user has typed: those of the rows not shown kept, the shown rows' cells read (an empty cell or
    one that is not a sum: no price)."""
    typed = {
        pid: value for pid, text in zip(ids, cells, strict=True) if (value := read_number(text or "x")) is not None
    }
    return {**{k: v for k, v in prices.items() if k not in ids}, **typed}


@dataclass(frozen=True)
class Glance:
    """One chart of the page: its specification (None: nothing to draw), its caption, or what to say instead."""

    spec: dict | None = None
    caption: str = ""
    info: str = ""


def price_time_glance(points: Any, results: Any) -> Glance:
    """Price against time: ``points`` the ones drawn (analysis.price_time_points), of ``results``."""
    caption = price_time_caption(len(points), int(results["price_usd"].notna().sum()))
    return Glance(charts.price_time_chart(points), caption)


def glance(chosen: str, options: Any) -> Glance:
    """The chart chosen among the options (speedups, or dollars per speedup), each over the best few."""
    if chosen == "Dollars per speedup":
        priced = options.column("dollars_per_speedup_vs_current").dropna()
        if priced.empty:
            return Glance(info="No faster option with a known price.")
        shown = options.rows(priced.nsmallest(CHART_BARS).index)
        more = (
            f"The {CHART_BARS} best values of {len(priced)} priced, faster options." if len(shown) < len(priced) else ""
        )
        return Glance(charts.dollars_per_speedup_chart(shown), more)
    if not len(options):
        return Glance(info="No other results of this workload to compare with.")
    shown = options.rows(options.column("speedup_vs_current").nlargest(CHART_BARS).index)
    more = (
        f"The {CHART_BARS} fastest of {len(options)} options; the table has them all."
        if len(shown) < len(options)
        else ""
    )
    return Glance(charts.speedup_chart(shown), more)


def detail_sections(detail: Any) -> dict[str, dict]:
    """A profile's sections as its file has them, under the page's three headings (an absent section: empty)."""

    def shown(section: Any) -> dict:
        return dict(section.raw) if section is not None else {}

    notes = [detail.notes] if isinstance(detail.notes, str) else list(detail.notes or ())
    return {
        "Hardware": {"device": shown(detail.device), "host": shown(detail.host), "price": shown(detail.price)},
        "Software and workload": {"software": shown(detail.software), "workload": shown(detail.workload)},
        "Provenance": {"id": detail.id, "provenance": shown(detail.provenance), "notes": notes},
    }


def estimates_parts(found: Any) -> list[tuple[Any, str]]:
    """What the estimates rest on, each part with how it is shown (markdown, text or table): the method, the fit's
    constants and calibration, the cross-validated widths, the GPUs not estimated and why."""
    rests, missing = estimates_texts(found)
    parts = [(HOW_ESTIMATES_ARE_MADE, "markdown"), (rests, "text")]
    if found.widths.summary:
        parts.append((pd.DataFrame(list(found.widths.summary)), "table"))
    return parts + ([(missing, "text")] if missing else [])


def estimates_texts(found: Any) -> tuple[str, str]:
    """What the estimates rest on (the fit's constants and the calibration), and the GPUs not estimated and why."""
    rests = constants_text(found.fit.constants()) + "\n" + render_basis.words(found.calibration())
    return rests, "\n".join(render_basis.not_estimated_lines(found.not_estimated))


@dataclass(frozen=True)
class Choices:
    """What the user chose in the sidebar."""

    current_id: str
    budget: float | None  # None: no limit
    precision: str
    include_estimates: bool
    goal: str
    habits: Habits
    link_gbps: float | None = None  # a network between two machines: their estimates are offered too (0: none)

    def advisor_choices(self, prices: Mapping[str, float]) -> dict[str, Any]:
        """What :meth:`Advisor.with_choices` takes of them (with the prices typed in the options table)."""
        return {
            "prices": prices,
            "habits": self.habits,
            "link_gbps": self.link_gbps,
            "include_estimates": self.include_estimates,
        }


def problem_blocks(problems: list[str], bad_files: int, upload: list[str], catalog: str) -> list[tuple]:
    """What the page warns of before its answer: (level: warning or error, the line, the details, the title they
    fold under: None, shown as they are)."""
    blocks = []
    if problems:
        left_out = f"{bad_files} invalid profile file(s) are left out; the rest work as usual."
        blocks.append(("warning", left_out, problems, f"{len(problems)} problem(s) in the profiles folder"))
    if upload:
        blocks.append(("error", "Your uploaded profile cannot be used:", upload, None))
    if catalog:
        blocks.append(
            ("warning", "The GPU catalog cannot be used (no estimates, rentals or board powers):", [catalog], None)
        )
    return blocks


def job_model(values: Mapping[str, Any]) -> tuple[Any, str]:
    """The model picked or uploaded (``llm_config``: a config.json, read, never saved) and why an upload is refused."""
    from advisor.llm.config import chosen_training_model

    upload = values["llm_config"]
    raw, name = (upload.getvalue(), upload.name) if upload is not None else (None, "")
    return chosen_training_model(raw, name, values["llm_model"])


def epoch_glance(detail: Any) -> Glance:
    """A profile's epoch times as a chart, or why there is none."""
    spec = charts.epoch_times_chart(detail)
    return (
        Glance(spec)
        if spec is not None
        else Glance(caption="This profile records no per-epoch times (quoted results give only totals).")
    )


def job_request(model: Any, values: Mapping[str, Any], catalog: Any = None) -> Any:
    """The job the inputs describe (``values``: each job input's value by its key), as the command line makes it; on
    the GPUs of the hardware input (``catalog``: the one they are of; None: every GPU)."""
    from advisor.llm import stack as llm_stack

    tokens = int(values["llm_examples"]) * int(values["llm_seq"]) * float(values["llm_epochs"])
    shape = llm_stack.JobShape(
        model, values["llm_method"], int(values["llm_seq"]), int(values["llm_batch"]), tokens=tokens
    )
    options = {"pure_bf16": stack_choice(values["llm_pure_bf16"]), "compile": stack_choice(values["llm_compile"])}
    checkpointing, devices = stack_choice(values["llm_ckpt"]), int(values["llm_devices"])
    gpu_ids = hardware_ids(catalog, values, "llm_hardware") if catalog is not None else None
    return llm_stack.job_request(
        shape, values["llm_stack"], options, checkpointing, devices, values["llm_fsdp"], gpu_ids
    )


@dataclass(frozen=True)
class Answer:
    """A job's answer as the page shows it: its title (Markdown), the decision's lines, its table, its charts (none:
    an empty tuple), and the captions under them."""

    title: str
    lines: list[str]
    table: Any
    charts: tuple[dict, ...]
    captions: list[str]


def job_answer(found: Any) -> Answer:
    """A language-model training job's answer."""
    table = pd.DataFrame([{name: render(o) for name, render in render_jobs.job_table(found)} for o in found.options])
    memory_only = [render_jobs.memory_only_line(found.memory_only)] if found.memory_only else []
    return Answer(job_title(found), render_jobs.summary_lines(found), table, (), [job_caption(found), *memory_only])


def inference_answer(found: Any, job: Any) -> Answer:
    """An inference job's answer: the picks (and, against an API's price, from how many users renting costs less),
    the table per GPU, throughput as users grow, speed against the cost of a million tokens, what it rests on."""
    from advisor.render import inference as render_inference

    throughput = [render_inference.throughput_chart(found.curves)] if any(found.curves.values()) else []
    cost = render_inference.cost_speed_chart(found.rows)
    charts = tuple(throughput + ([cost] if cost is not None else []))
    header = render_inference.inference_header(job, found.inputs).replace("\n", "; ")
    api = render_inference.api_line(found.picks, found.api_usd_per_million, found.versus_api)
    buying = render_inference.buying_line(found.buying, found.inputs)
    lines = [*render_inference.pick_lines(found.picks), *buying, *api]
    notes = [header, *render_inference.table_notes(found.rows)]
    return Answer("", lines, render_inference.table_frame(found.rows), charts, notes)


def run_answer(job: Any, catalog: Any, values: Mapping[str, Any]) -> Answer:
    """The answer for running a model: split over the mixed cards picked, else on every GPU of the hardware menu."""
    from advisor.infer import estimate as infer_estimate
    from advisor.infer.mixed import mixed_cards

    picked = mixed_picked(values)
    if picked is not None:
        return mixed_answer(mixed_cards(job, [catalog.by_id()[i] for i in picked], catalog), job)
    ids = hardware_ids(catalog, values, "run_hardware")
    api = float(values.get("run_api") or 0) or None  # 0: no API to weigh against
    return inference_answer(infer_estimate.answer(job, catalog, ids, inference_costs(values), api), job)


def inference_costs(values: Mapping[str, Any]) -> CostInputs:
    """How an owned card is paid for: the hours a week it serves (the run section's ``run_hours``), the years and the
    electricity of the sidebar's habits (``lifetime_years``, ``kwh_price``; their defaults where it is not shown)."""
    default = CostInputs()
    return CostInputs(
        float(values.get("lifetime_years", default.lifetime_years)),
        float(values.get("run_hours", default.hours_per_week)),
        float(values.get("kwh_price", default.kwh_price)),
    )


MEASURED_TITLE = "**Measured here**: timed generations (`advisor measure --inference`) beside the estimate"


def measured_answer(generations: list[Any], catalog: Any) -> Answer | None:
    """The folder's inference profiles beside the estimate of the same job on their GPU (None: there are none)."""
    from advisor.infer.measured import comparisons
    from advisor.render import inference as render_inference

    rows = comparisons(generations, catalog)
    if not rows:
        return None
    table = render_inference.measured_frame(rows)
    return Answer(MEASURED_TITLE, [], table, (), render_inference.measured_notes(rows))


def mixed_answer(found: Any, job: Any) -> Answer:
    """A job split over mixed cards: the verdict and speed, each card's share, what it rests on."""
    from advisor.render import inference as render_inference

    table = render_inference.mixed_frame(found)
    return Answer("", render_inference.mixed_lines(found), table, (), render_inference.model_and_load(job))


def column_width(head: str, cells: Any, extra: int = 0) -> int:
    """Pixels for a column of the options table: its widest text whole, head or cell, in the table's font."""
    if head == "option":
        return text_width.option_width(list(cells))
    return text_width.column_px([head, *(str(cell) for cell in cells)], extra)


def option_columns(table: Any) -> dict[str, tuple[int, str | None, str | None]]:
    """Each column of the options table: its width, its definition, and what a typed cell must match (the "your
    price" column's pattern; None: not typed)."""
    found = {
        name: (column_width(name, table[name]), metrics.definition(key) if key else TABLE_HELP.get(name), None)
        for name, key, _ in render_compare.DISPLAY_COLUMNS
        if name in table.columns
    }
    width = column_width(YOUR_PRICE, ["$10,000"], EDIT_ICON_PX)
    return {**found, YOUR_PRICE: (width, TABLE_HELP[YOUR_PRICE], DOLLARS_PATTERN)}


def pick_caption(picks: Any) -> str:
    """'40 of 1,137 matching profiles listed: type more of a name to narrow them.' ('' where all are listed)."""
    if not picks.searchable:
        return ""
    more = ": type more of a name to narrow them." if picks.matched > len(picks.ids) else "."
    return f"{min(len(picks.ids), picks.matched):,} of {picks.matched:,} matching profiles listed{more}"


def inference_job(values: Mapping[str, Any], upload: Any) -> Any:
    """The inference job the inputs describe (``upload``: an uploaded config.json, read, never saved)."""
    from advisor.infer.architecture import chosen_inference_model
    from advisor.infer.job import make_job

    raw, name = (upload.getvalue(), upload.name) if upload is not None else (None, "")
    model = chosen_inference_model(raw, name, values["run_model"])
    sizes = {k: int(values[f"run_{k}"]) for k in ("prompt", "output", "users", "devices", "replicas")}
    rate = float(values.get("run_rate") or 0) or None  # 0: the users at once
    if rate is not None:
        sizes["users"] = 1  # the rate decides the users on each GPU
    attention_dp = bool(values.get("run_attention_dp"))
    return make_job(
        model,
        values["run_engine"],
        values["run_weights"],
        values["run_kv"],
        **sizes,
        rate=rate,
        attention_data_parallel=attention_dp,
    )
