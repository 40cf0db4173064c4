"""The app's page as values: every input (its label, menu, default and help), every headline and caption the app
lays out. ``streamlit_app.py`` calls ``st.*`` over these and decides nothing; the library decided, this module says
it. Pure: no Streamlit, no I/O (the menus' data are passed in).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from advisor.decision.costs import GOAL_HELP, HABIT_OPTIONS, Habits
from advisor.format import metrics
from advisor.format.formatting import fmt_duration, fmt_seconds, fmt_usd, fmt_usd_small, fmt_watts
from advisor.format.vocabulary import Goal, PrecisionFilter, Source, WorkloadKind
from advisor.llm.job import Checkpointing
from advisor.render import basis as render_basis
from advisor.render import compare as render_compare
from advisor.render import jobs as render_jobs
from advisor.render import prose

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
STACK_CHOICE = "stack"  # a job input left to the training stack's default
METHOD_LABELS = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA (4-bit base)"}


@dataclass(frozen=True)
class Input:
    """One input of the page: its kind (number, select, radio, toggle, checkbox, file, text), label, session key,
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

    def shown(self, option: Any) -> str:
        """An option as the menu shows it."""
        return str(self.labels[option]) if self.labels is not None else str(option)


def _number(label: str, key: str, least: float, most: float | None, value: Any, step: Any = None, **more) -> Input:
    return Input("number", label, key, least=least, most=most, value=value, step=step, **more)


def _stack_or(label: str, key: str, words: tuple[str, ...], help_text: str) -> Input:
    options = (STACK_CHOICE, *words)
    labels = {o: "the stack's" if o == STACK_CHOICE else o for o in options}
    return Input("select", label, key, options, labels, help=help_text)


# --------------------------------------------------------------------------- the sidebar


def upload_input() -> Input:
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
    ]


def job_inputs(presets: Mapping, sizes: Mapping[str, str], stacks: Mapping, default_stack: str, why: str) -> dict:
    """The language-model job's inputs by column (left, middle, right), the training stack's choices among them
    (``sizes``: each preset's size in words; ``stacks``: the stacks by name, ``why``: why the default is)."""
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
            f"(up to {mine.footprint.high_gb:.1f}) of {mine.gpu.value('memory_gb'):g}."
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
        free = bool(best["free_upgrade"])
        cost = "free" if free else f"{fmt_usd(best['dollars_per_speedup_vs_current'])} per 1x"
        time_only = render_compare.payback_counts_time_alone(best)  # the power is unknown: said in the tooltip
        cells = [
            ("Upgrade cost", "free" if free else fmt_usd(best["upgrade_cost_usd"]), None),
            ("Hours saved a week", f"{best['hours_saved_per_week']:,.1f} h", None),
            (
                "Pays for itself",
                render_compare.fmt_payback(best, weeks_word="weeks"),
                "Counts the time saved alone: the power is unknown." if time_only else None,
            ),
            ("Cost per run", fmt_usd_small(best["usd_per_run"]), None),
        ]
        if best["source"] == Source.ESTIMATED:
            captions.append(f"Estimated, not measured: {render_basis.sentence(best['basis']) or best['source_detail']}")
        head = Headline(
            "Best upgrade",
            prose.describe_result(best),
            f"{best['speedup_vs_current']:.2f}x faster, {cost}",
            cells,
            prose.reason(rec),
            free,
        )
    h, current = rec.habits, rec.current
    power = f" ({current['power_source']})." if current["power_source"] != "unknown" else "."
    captions += [
        "Renting: " + prose.rent_advice(rec),
        f"With: {h.runs_per_week:g} runs a week, an hour of waiting worth ${h.hour_value:,.0f}, ${h.kwh_price:.2f} "
        f"per kWh, hardware kept {h.lifetime_years:g} years (change them in the sidebar; an hour worth $0 counts the "
        "energy alone).",
        f"Current: {prose.option_name(current)} ({current['precision']}), {fmt_seconds(current['seconds'])} per "
        f"training run; power {fmt_watts(current['power_watts'])}{power}",
        *("Note: " + note for note in prose.notes(rec, other_workloads=False)),  # the workload menu lists the others
    ]
    return Headline(head.label, head.value, head.delta, head.cells, head.said, head.free, captions)


def cost_caption(rec: Any) -> str:
    """What the cost chart counts, over how many runs."""
    habits, horizon = rec.habits, rec.horizon_runs
    unknown = (
        ""
        if rec.current["power_watts"] == rec.current["power_watts"]
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
LADDER_COLUMNS = [("step", prose.describe_result), *render_compare.LADDER_COLUMNS[1:]]  # the app names options
LADDER_CAPTION = metrics.definition("marginal_usd_per_hour_saved_per_week")
DEVICES_TITLE = "What each added device or machine buys"


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
