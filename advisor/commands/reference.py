"""The README's command table, made from the parsers themselves (every option a command takes, as argparse has it)
and each command module's ``SUMMARY`` (what it does); ``--json``'s keys from the code that writes them. A test keeps
the README's copy the same: ``python scripts/maintain.py command-table`` prints it.
"""

from __future__ import annotations

import argparse

COMMON_OPTIONS = {"-h", "--help", "--profiles", "--json", "--collection"}  # every command's: said once, above
JOB_GROUP = "a language model instead"  # the options of a language-model job: a row of their own
INFERENCE_GROUP = "running or serving the model"  # the options of an inference job: a row of their own
SPECIAL_GROUPS = (JOB_GROUP, INFERENCE_GROUP)


def _option(action: argparse.Action) -> str:
    """One option as the usage line writes it: ``--precision float32|mixed|any``, ``--gpu NAME``, ``--yes``."""
    name = max(action.option_strings, key=len)
    if action.nargs == 0:
        text = name
    elif action.choices:
        text = f"{name} {'|'.join(str(c) for c in action.choices)}"
    else:
        text = f"{name} {action.metavar or action.dest.upper()}"
    return text if action.required else f"[{text}]"


def _positional(action: argparse.Action) -> str:
    name = action.metavar or action.dest.upper()
    text = f"{name} ..." if action.nargs in ("+", "*") else name
    return f"[{text}]" if action.nargs in ("*", "?") else text


def _usage(name: str, parser: argparse.ArgumentParser, special: str | None) -> str:
    """``name`` and its options: those of one special group alone (``special``: a title's start), or all the
    others (None)."""
    job = special is not None
    parts = [name]
    for group in parser._action_groups:  # argparse keeps its groups here; it has no public way to walk them
        title = group.title or ""
        mine = title.startswith(special) if special else not title.startswith(SPECIAL_GROUPS)
        if not mine:
            continue
        for action in group._group_actions:
            if action.option_strings and not COMMON_OPTIONS & set(action.option_strings):
                parts.append(_option(action))
            elif not action.option_strings and not job:
                parts.append(_positional(action))
    return " ".join(parts)


def _json_keys(name: str) -> str:
    """What ``--json`` prints, for the commands whose keys a reader builds on."""
    if name == "compare":
        from advisor.decision.analysis import ESTIMATE_KEYS, ROW_KEYS

        return (
            f" `--json`: a list of objects with `{', '.join(ROW_KEYS)}` (estimated rows add "
            f"`{', '.join(ESTIMATE_KEYS)}`)"
        )
    if name == "recommend":
        from advisor.render.records import RECORD_KEYS

        return f" `--json`: `{{{', '.join(RECORD_KEYS)}}}`"
    if name == "estimate":
        from advisor.render.estimate import ESTIMATE_RECORD_KEYS

        return f" `--json`: rows of `{', '.join(ESTIMATE_RECORD_KEYS)}`"
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table(parser: argparse.ArgumentParser) -> str:
    """The command table of ``parser`` (the CLI's, :func:`advisor.cli.build_parser`): a row per command (and one
    more for a language-model job or an inference job, where a command takes one)."""
    from advisor.commands import COMMANDS

    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    lines = ["| command | what it does |", "|---|---|"]
    for module in COMMANDS:
        sub = commands[module.NAME]
        lines.append(
            f"| `{_cell(_usage(module.NAME, sub, None))}` | {_cell(module.SUMMARY + _json_keys(module.NAME))} |"
        )
        if hasattr(module, "SUMMARY_JOB"):
            usage = _usage(f"{module.NAME} --model-config NAME|config.json", sub, JOB_GROUP)
            usage = usage.replace(" [--model-config NAME|config.json]", "")
            lines.append(f"| `{_cell(usage)}` | {_cell(module.SUMMARY_JOB)} |")
        if hasattr(module, "SUMMARY_INFERENCE"):
            usage = _usage(f"{module.NAME} --model-config NAME|config.json --inference", sub, INFERENCE_GROUP)
            usage = usage.replace(" [--inference]", "")
            lines.append(f"| `{_cell(usage)}` | {_cell(module.SUMMARY_INFERENCE)} |")
    return "\n".join(lines)
