"""The command line's words for a language-model training job (``estimate --model-config ...``): one table of
options, read by :func:`add_job_arguments` and :func:`job_from_args`."""

from __future__ import annotations

import argparse

from advisor.llm.config import resolve
from advisor.llm.job import (
    DEFAULT_RANK,
    Checkpointing,
    JobRequest,
    Method,
    TrainingJob,
    job_from_options,
    parse_tokens,
)
from advisor.perf.workload import positive_int  # the one parser of whole-number options (NumPy only)


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """--model-config and the job's options (the optimizer is --optimizer, shared with --model)."""
    job = parser.add_argument_group("a language model instead (full fine-tuning, LoRA, QLoRA)")
    job.add_argument("--model-config", metavar="NAME|config.json",
                     help="a preset (`advisor models` lists them, e.g. llama-3.1-8b) or a Hugging Face config.json")
    job.add_argument("--method", choices=[m.value for m in Method], default=Method.LORA.value,
                     help="full fine-tuning, LoRA, or QLoRA on a 4-bit base (lora)")
    job.add_argument("--seq-len", type=positive_int, default=2048, metavar="N", help="tokens per sequence (2048)")
    job.add_argument("--batch", type=positive_int, default=1, metavar="N", help="sequences per micro-batch (1)")
    job.add_argument("--grad-accum", type=positive_int, default=1, metavar="N", help="micro-batches per step (1)")
    job.add_argument("--tokens", type=parse_tokens, default=0.0, metavar="N",
                     help="tokens of the whole run: 20M, 1.5e9, or examples x length x epochs as 10000x2048x1")
    job.add_argument("--checkpointing", choices=[c.value for c in Checkpointing], default=Checkpointing.AUTO.value,
                     help="activation checkpointing; auto (default): only on a GPU the job does not fit without it")
    job.add_argument("--lora-rank", type=positive_int, default=DEFAULT_RANK, metavar="R", help=f"({DEFAULT_RANK})")
    job.add_argument("--lora-targets", default="all-linear", metavar="NAMES",
                     help="comma-separated linear layers (q_proj,v_proj...) or all-linear (default)")
    job.add_argument("--fsdp", action="store_true",
                     help="with --devices N: shard the weights, gradients and optimizer state over the N GPUs "
                     "(FSDP / DeepSpeed ZeRO-3) instead of a whole copy on each (DDP)")
    job.add_argument("--pure-bf16", action="store_true",
                     help="weights, gradients and optimizer state in bf16 (LitGPT's bf16-true), no fp32 master copy")


def job_from_args(args: argparse.Namespace) -> TrainingJob:
    """The job the options describe (``--optimizer`` defaults to adamw here; the job checks every value)."""
    return job_from_options(resolve(args.model_config), args.method, args.seq_len, args.batch, args.grad_accum,
                            args.tokens, args.optimizer or "adamw", lora_rank=args.lora_rank,
                            lora_targets=args.lora_targets)  # fmt: skip


def request_from_args(args: argparse.Namespace, gpu_ids: tuple[str, ...] | None = None) -> JobRequest:
    """The job and how it runs, as the options say (``gpu_ids``: --gpu, found in the catalog by the command)."""
    return JobRequest(job_from_args(args), Checkpointing(args.checkpointing), max(1, args.devices), args.fsdp,
                      args.pure_bf16, gpu_ids)  # fmt: skip
