"""The command line's words for a language-model training job (``estimate --model-config ...``): one table of
options, read by :func:`add_job_arguments` and :func:`job_from_args`; the training stack's choices are flags made
from :data:`advisor.llm.stack.CHOICES` (each overrides the stack's default)."""

from __future__ import annotations

import argparse

from advisor.commands.arguments import parse_tokens, positive_int  # the one parser of whole-number options
from advisor.llm import stack
from advisor.llm.config import resolve
from advisor.llm.job import DEFAULT_RANK, Checkpointing, JobRequest, Method


def add_job_arguments(parser: argparse.ArgumentParser, shared: frozenset[str] = frozenset({"--optimizer"})) -> None:
    """--model-config and the job's options, the stack and its choices (``shared``: the flags the command already
    has for --model, e.g. --optimizer and --loss: the same flag, read by the mode in use)."""
    job = parser.add_argument_group("a language model instead (full fine-tuning, LoRA, QLoRA)")
    job.add_argument(
        "--model-config",
        metavar="NAME|config.json",
        help="a preset (`advisor models` lists them, e.g. llama-3.1-8b) or a Hugging Face config.json",
    )
    job.add_argument(
        "--method",
        choices=[m.value for m in Method],
        default=Method.LORA.value,
        help="full fine-tuning, LoRA, or QLoRA on a 4-bit base (lora)",
    )
    job.add_argument("--seq-len", type=positive_int, default=2048, metavar="N", help="tokens per sequence (2048)")
    job.add_argument("--batch", type=positive_int, default=1, metavar="N", help="sequences per micro-batch (1)")
    job.add_argument("--grad-accum", type=positive_int, default=1, metavar="N", help="micro-batches per step (1)")
    job.add_argument(
        "--tokens",
        type=parse_tokens,
        default=0.0,
        metavar="N",
        help="tokens of the whole run: 20M, 1.5e9, or examples x length x epochs as 10000x2048x1",
    )
    _add_stack_arguments(job, shared)
    job.add_argument("--lora-rank", type=positive_int, default=DEFAULT_RANK, metavar="R", help=f"({DEFAULT_RANK})")
    job.add_argument(
        "--lora-targets",
        default="all-linear",
        metavar="NAMES",
        help="comma-separated linear layers (q_proj,v_proj...) or all-linear (default)",
    )
    job.add_argument(
        "--fsdp",
        action="store_true",
        help="with --devices N: shard the weights, gradients and optimizer state over the N GPUs "
        "(FSDP / DeepSpeed ZeRO-3) instead of a whole copy on each (DDP)",
    )


def _add_stack_arguments(job: argparse._ArgumentGroup, shared: frozenset[str]) -> None:
    """--stack and each of its choices (default: the stack's), but those in ``shared``."""
    default, why, stacks = stack.load_stacks()
    job.add_argument(
        "--stack",
        metavar="NAME",
        default=None,
        help=f"the training stack, whose defaults decide memory and time: {', '.join(stacks)} "
        f"(default {default}: {why} `advisor stacks` lists each one's choices)",
    )
    job.add_argument(
        "--checkpointing",
        choices=[c.value for c in Checkpointing],
        default=None,
        help="activation checkpointing (default: the stack's); auto: only on a GPU the job does not fit without it",
    )
    for choice in stack.CHOICES:
        if choice.flag in shared or choice.name == "checkpointing":
            continue
        job.add_argument(
            choice.flag,
            choices=choice.words or None,
            default=None,
            metavar=None if choice.words else "NAME",
            help=f"{choice.help} (default: the stack's)",
        )


def request_from_args(args: argparse.Namespace, gpu_ids: tuple[str, ...] | None = None) -> JobRequest:
    """The job and how it runs, as the options say (``gpu_ids``: --gpu, found in the catalog by the command); the
    stack's choices each flag overrides (the job checks every value)."""
    shape = stack.JobShape(
        resolve(args.model_config),
        args.method,
        args.seq_len,
        args.batch,
        args.grad_accum,
        args.tokens,
        args.lora_rank,
        args.lora_targets,
    )
    overrides = {c.name: getattr(args, c.name, None) for c in stack.CHOICES if c.name != "checkpointing"}
    return stack.job_request(shape, args.stack, overrides, args.checkpointing, max(1, args.devices), args.fsdp, gpu_ids)
