"""The tuned FP8 stack: its speed fitted on NVIDIA's published FP8 runs and checked on MLPerf's Llama 2 70B LoRA logs
it never saw, and tensor parallelism splitting a model too big for one GPU."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pytest

from advisor.cli import main
from advisor.llm import fp8, memory
from advisor.llm.config import load_presets
from advisor.llm.stack import JobShape, job_request
from advisor.store.catalog import DEFAULT_CATALOG, load_catalog
from helpers import SHIPPED

CATALOG = load_catalog(DEFAULT_CATALOG)
MLPERF = ("estimate", "--model-config", "llama-2-70b", "--method", "lora", "--seq-len", "8192", "--batch", "1",
          "--stack", "nemo", "--devices", "8", "--tokens", "10M", "--json")  # fmt: skip


def _json(*args: str) -> list[dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--profiles", str(SHIPPED), *args]) == 0
    return json.loads(out.getvalue())


def test_the_fit_reads_only_the_published_runs_and_never_the_mlperf_logs():
    fitted, checks = fp8.load_runs()
    assert len(fitted) >= 20 and len(checks) == 3
    assert {r.gpu for r in checks} == {"h100-sxm", "h200-sxm", "b200"}
    assert all("mlcommons" not in r.source for r in fitted) and all("mlcommons" in r.source for r in checks)
    found = fp8.fit(CATALOG)
    assert found.runs == len(fitted) and found.architectures == {"Hopper", "Blackwell"}
    assert 0.5 < found.utilization < 1.0  # model FLOPs over the 16-bit peak: FP8 matmuls, but not all work is FP8


def test_the_range_is_the_leave_one_gpu_out_error_and_the_mlperf_steps_are_within_the_issue_target():
    found = fp8.fit(CATALOG)
    widths = [float(np.quantile([abs(math.log(r)) for _, r in fp8.left_out(fp8.load_runs()[0], CATALOG, by)],
                                fp8.QUANTILE)) for by in fp8.LEFT_OUT]  # fmt: skip
    assert found.half_width == pytest.approx(max(widths))
    ratios = [ratio for _, ratio in fp8.checked(CATALOG)]
    assert len(ratios) == 3 and all(1 / 1.3 < r < 1.3 for r in ratios), ratios


def test_the_fp8_row_is_the_fit_s_time_on_eight_gpus_and_says_where_it_comes_from():
    rows = {r["catalog_id"]: r for r in _json(*MLPERF, "--gpu", "h100-sxm") if r["devices"] == 8}
    row = rows["h100-sxm"]
    job = job_request(JobShape(load_presets()["llama-2-70b"], "lora", 8192, 1, tokens=10e6), "nemo").job
    per_gpu = fp8.tokens_per_second(job, CATALOG.by_id()["h100-sxm"], fp8.fit(CATALOG))
    assert row["precision"] == "fp8" and row["seconds_estimate"] == pytest.approx(10e6 / (8 * per_gpu))
    width = math.exp(fp8.fit(CATALOG).half_width)
    assert row["high"] / row["seconds_estimate"] == pytest.approx(width)
    assert "tuned FP8 stack" in row["basis"] and row["basis_parts"]["calibration"].startswith("the tuned FP8")


def test_fp8_on_a_gpu_the_fit_has_not_seen_keeps_the_16bit_time_and_says_so():
    row = _json(*MLPERF, "--gpu", "a100-80gb-sxm4")[0]
    assert row["precision"] != "fp8"
    assert any(c["kind"] == "fp8" and "Ampere" in c["words"] for c in row["basis_parts"]["clauses"])


def test_tensor_parallelism_splits_the_model_over_the_fewest_gpus_it_fits_on():
    """Llama 2 70B LoRA at 8,192 tokens: far beyond one H100, held by 8 of them split by tensor parallelism; each
    part is the whole job's over the degree, and a smaller degree would not fit."""
    row = next(r for r in _json(*MLPERF, "--gpu", "h100-sxm") if r["devices"] == 8)
    assert row["fits"] == "fits" and row["tensor_parallel"] in (2, 4, 8)
    assert f"each holding 1/{row['tensor_parallel']} of the weights" in row["basis"]
    job = job_request(JobShape(load_presets()["llama-2-70b"], "lora", 8192, 1), "nemo").job
    whole, split = memory.predict(job), memory.predict(job, tensor_parallel=row["tensor_parallel"])
    assert split.weights_gb == pytest.approx(whole.weights_gb / row["tensor_parallel"])
    assert split.activations_gb == pytest.approx(whole.activations_gb / row["tensor_parallel"])
    assert row["memory_gb"] == pytest.approx(split.total_gb, abs=0.01)
    if row["tensor_parallel"] > 2:
        fewer = memory.predict(job, tensor_parallel=row["tensor_parallel"] // 2)
        assert fewer.verdict(80) != memory.Fit.FITS
    held_whole = next(r for r in _json(*MLPERF, "--gpu", "h100-sxm", "--tensor-parallel", "off")
                      if r["devices"] == 8)  # fmt: skip
    assert held_whole["tensor_parallel"] == 1 and held_whole["fits"] == "does not fit"


def test_a_new_architecture_on_the_fp8_stack_is_within_the_issue_s_new_architecture_targets():
    """Every run of one architecture predicted from the other's alone (issue 35, item 5: median 1.2x, 90th
    percentile 1.6x): the FP8 stack's speed follows the 16-bit peak across Hopper and Blackwell."""
    found = fp8.architecture_left_out(fp8.load_runs()[0], CATALOG)
    assert set(found) == {"Hopper", "Blackwell"}
    for arch, ratios in found.items():
        errors = [abs(math.log(r)) for r in ratios]
        assert math.exp(float(np.median(errors))) < 1.2 and math.exp(float(np.quantile(errors, 0.9))) < 1.6, arch
