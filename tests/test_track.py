"""advisor.track on real PyTorch training (CPU): the profile, its FLOPs, the data wait, misuse, Ctrl-C, advice."""

from __future__ import annotations

import itertools
import json
import math
import shutil
import statistics
import time
from pathlib import Path

import pytest

import advisor.track
from advisor import store
from advisor.cli import main
from advisor.format import schema
from advisor.track.session import MIN_STEADY_STEPS, TrackError
from helpers import copy_small_shipped, needs

pytestmark = needs("torch", "PyTorch is not installed (pip install torch==2.13.0)")
torch = None  # PyTorch imported when this file's tests run (3 s), not when it is collected


@pytest.fixture(autouse=True, scope="module")
def _torch():
    global torch
    import torch as module

    torch = module


def mlp(widths=(16, 64, 64, 4), seed: int = 0):
    torch.manual_seed(seed)
    layers = []
    for a, b in itertools.pairwise(widths):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def batches(count: int, batch: int = 32, features: int = 16, classes: int = 4, seed: int = 0) -> list:
    generator = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(batch, features, generator=generator), torch.randint(0, classes, (batch,), generator=generator))
        for _ in range(count)
    ]


class Sleepy:
    """A loader that sleeps ``delay`` seconds before each batch (its length known), and keeps how long each sleep
    really took (a busy machine oversleeps: the truth is what it slept, not what it asked for)."""

    def __init__(self, items: list, delay: float) -> None:
        self.items, self.delay, self.slept = items, delay, []

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        for item in self.items:
            start = time.perf_counter()
            time.sleep(self.delay)
            self.slept.append(time.perf_counter() - start)
            yield item


def train(run, model, optimizer, loader, epochs: int = 1, accumulate: int = 1) -> None:
    for _ in range(epochs):
        for number, (x, y) in enumerate(run.batches(loader)):
            loss = torch.nn.functional.cross_entropy(model(x), y) / accumulate
            loss.backward()
            if (number + 1) % accumulate == 0:
                optimizer.step()
                optimizer.zero_grad()
                run.step()


def load(path: Path) -> dict:
    profile, problems = store.load_profile(path)
    assert not problems, problems
    return profile.data


def test_a_pytorch_loop_writes_a_valid_tracked_profile(tmp_path: Path, capsys):
    model = mlp()
    optimizer = torch.optim.AdamW(model.parameters(), 1e-3)
    with advisor.track.torch(model, optimizer, name="my mlp", out=tmp_path, epochs=2) as run:
        train(run, model, optimizer, batches(20), epochs=2)
    assert run.path == tmp_path / "my-mlp.yaml"
    assert f"advisor.track: to contribute it: advisor submit {run.path}" in capsys.readouterr().err
    data = load(run.path)
    workload, result = data["workload"], data["results"][0]
    assert data["schema_version"] == schema.SCHEMA_VERSION
    assert workload["kind"] == "tracked" and workload["optimizer"] == "adamw"
    assert workload["steps"] == 40 and workload["epochs"] == 2 and workload["batch_size"] == 32
    assert workload["parameters"] == sum(p.numel() for p in model.parameters()) == workload["trainable_parameters"]
    assert result["precision"] == "float32"
    step = result["step"]
    # 40 steps: 3 warm-up, 1 counted, 1 crossing the epoch's end; the rest steady
    assert step["count"] == 35 and step["warmup"] == 3
    assert step["min"] <= step["median"] <= step["max"]
    assert result["total_seconds"] == pytest.approx(40 * step["mean"], rel=1e-6)
    assert step["samples_per_second"] == pytest.approx(32 / step["mean"], rel=1e-3)
    assert result["memory"]["peak_gb"] >= 0
    assert data["software"]["framework"] == "torch"
    assert data["provenance"]["method"] == "measured"


def test_counted_flops_of_a_linear_stack_are_the_matmuls(tmp_path: Path):
    widths, batch = (16, 64, 128, 8), 32
    model = mlp(widths)
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    with advisor.track.torch(model, optimizer, out=tmp_path, name="flops") as run:
        train(run, model, optimizer, batches(12, batch=batch, classes=8))
    weights = [a * b for a, b in itertools.pairwise(widths)]
    # 2 x weights x samples forward, twice that backward, less the first layer's input gradient (nothing needs it)
    expected = 2 * sum(weights) + 4 * sum(weights) - 2 * weights[0]
    data = load(run.path)
    matmul = next(p for p in data["workload"]["phases"] if p["kind"] == "matmul")
    assert matmul["flops_per_sample"] == pytest.approx(expected, rel=0.01)
    assert data["results"][0]["step"]["flops_per_step"] == pytest.approx(expected * batch, rel=0.01)


def test_the_operations_a_step_launches_are_counted(tmp_path: Path):
    """One more Linear + ReLU adds 8 operations that launch a kernel: forward addmm and relu; backward the ReLU's
    gradient, two mm (input and weight gradients) and a sum (the bias's); SGD's add_ on each of its 2 parameters.
    Views (the weight's transpose) and allocations launch nothing and are not counted."""
    from advisor.track import torch_run

    counts = []
    for widths in ((16, 64, 4), (16, 64, 64, 4), (16, 64, 64, 64, 4)):
        model = mlp(widths)
        optimizer = torch.optim.SGD(model.parameters(), 0.01)
        with advisor.track.torch(model, optimizer, out=tmp_path, name=f"ops {len(widths)}") as run:
            train(run, model, optimizer, batches(12, classes=4))
        counts.append(load(run.path)["workload"]["operations_per_step"])
    assert counts[1] - counts[0] == counts[2] - counts[1] == 8
    aten = torch.ops.aten
    assert [torch_run._launches_kernel(op) for op in (aten.t, aten.view, aten.expand, aten.empty, aten.mm)] == [
        False,
        False,
        False,
        False,
        True,
    ]


def test_counted_flops_of_a_convolution_match_its_formula(tmp_path: Path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 4)
    )
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    items = [(torch.randn(16, 3, 8, 8), torch.randint(0, 4, (16,))) for _ in range(12)]
    with advisor.track.torch(model, optimizer, out=tmp_path, name="conv") as run:
        train(run, model, optimizer, items)
    conv_forward = 2 * 8 * 3 * 3 * 3 * 8 * 8  # 2 x out channels x (in channels x kernel) x output positions
    dense_forward = 2 * 8 * 8 * 8 * 4
    # the convolution is the first layer: forward and its weight gradient only; the dense layer: all three
    expected = 2 * conv_forward + 3 * dense_forward
    matmul = next(p for p in load(run.path)["workload"]["phases"] if p["kind"] == "matmul")
    assert matmul["flops_per_sample"] == pytest.approx(expected, rel=0.01)


def attention(width: int, heads: int):
    """One self-attention block: q, k, v and output projections around scaled dot-product attention."""

    class Attention(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = torch.nn.Linear(width, 3 * width, bias=False)
            self.out = torch.nn.Linear(width, width, bias=False)

        def forward(self, x):
            batch, length, _ = x.shape
            q, k, v = self.qkv(x).view(batch, length, 3, heads, width // heads).permute(2, 0, 3, 1, 4)
            mixed = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            return self.out(mixed.transpose(1, 2).reshape(batch, length, width))

    return Attention()


def test_counted_flops_of_an_attention_block_match_its_formula(tmp_path: Path):
    torch.manual_seed(0)
    width, heads, length, batch = 32, 4, 16, 8
    model = attention(width, heads)
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    with advisor.track.torch(model, optimizer, out=tmp_path, name="attention") as run:
        for _ in run.batches(range(12)):
            x = torch.randn(batch, length, width)
            model(x).pow(2).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
            run.step()
    projections = 2 * length * (3 * width * width + width * width)  # forward, per sample
    scores = 2 * 2 * length * length * width  # q k^T and the weights times v, over all heads
    # forward + weight gradients + input gradients (none for qkv's input: x needs no gradient); the fused attention's
    # backward does five matmuls to its forward's two (it recomputes the scores, as flash attention does)
    expected = projections + projections + 2 * length * width * width + scores + 2.5 * scores
    phases = load(run.path)["workload"]["phases"]
    counted = sum(p["flops_per_sample"] for p in phases)
    assert counted == pytest.approx(expected, rel=0.01)


def test_the_wait_for_data_is_measured_and_the_advice_says_so(tmp_path: Path):
    delay = 0.01
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    loader = Sleepy(batches(30), delay)
    with advisor.track.torch(model, optimizer, out=tmp_path, name="input bound") as run:
        train(run, model, optimizer, loader)
    data = load(run.path)
    result = data["results"][0]
    slept = statistics.fmean(loader.slept[5:])  # the steady steps' (past the warm-up and the counted step)
    true_share = slept / result["step"]["mean"]  # the share is of the whole steady time: a ratio of means
    assert result["data_wait"]["share"] == pytest.approx(true_share, abs=0.05)
    assert result["data_wait"]["seconds_per_step"] == pytest.approx(slept, rel=0.25)


@pytest.fixture
def folder_with(tmp_path: Path):
    """The shipped profiles (less the large published collection) plus the given tracked profile, in a writable
    folder."""

    def make(path: Path) -> Path:
        folder = tmp_path / "profiles"
        if not folder.exists():
            copy_small_shipped(folder)
        shutil.copy(path, folder / path.name)
        return folder

    return make


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_estimate_and_recommend_use_a_tracked_profile(tmp_path: Path, folder_with, capsys):
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    with advisor.track.torch(model, optimizer, out=tmp_path / "new", name="slow loader", price_usd=0) as run:
        train(run, model, optimizer, Sleepy(batches(24), 0.02))
    data = load(run.path)
    share, wait = data["results"][0]["data_wait"]["share"], data["results"][0]["data_wait"]["seconds_per_step"]
    folder = folder_with(run.path)
    code, out, _ = cli(capsys, "estimate", "--profiles", str(folder), "--workload", data["workload"]["name"], "--json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) > 40 and all(row["memory_gb"] > 0 for row in rows)
    waited = wait * data["workload"]["steps"]
    # every GPU keeps the wait: none is faster than it (Amdahl), and each basis says so
    assert all(row["seconds_estimate"] > waited and "waiting for data" in row["basis"] for row in rows)
    code, out, _ = cli(capsys, "recommend", "--profiles", str(folder), "--current", data["id"], "--estimates", "--json")
    assert code == 0
    recommendation = json.loads(out)
    assert f"waits for data {share:.0%}" in recommendation["reason"]
    assert "num_workers" in recommendation["reason"] and "pin_memory" in recommendation["reason"]
    # The GPU part of a step gets faster, the wait for data does not (Amdahl): no option, the best (if any) among
    # them, is as fast as 1 / share. (Whether one is faster enough to recommend depends on the measured share.)
    gpus = [o for o in recommendation["options"] if o["source"] == "estimated"]
    assert len(gpus) > 40 and all(o["speedup_vs_current"] < 1 / share for o in gpus)


def test_gradient_accumulation_counts_one_optimizer_step(tmp_path: Path):
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    with advisor.track.torch(model, optimizer, out=tmp_path, name="accumulated") as run:
        train(run, model, optimizer, batches(40, batch=8), accumulate=4)
    workload = load(run.path)["workload"]
    assert workload["steps"] == 10 and workload["batch_size"] == 32 and workload["gradient_accumulation"] == 4


def test_pause_leaves_an_evaluation_out(tmp_path: Path):
    # The evaluation lasts half a second, a thousand times a step of this model (about 0.5 ms): a step that
    # held it would last longer than it. (With 0.05 s, a shared host's stall of 0.1 s in one step once failed it.)
    evaluation = 0.5
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    with advisor.track.torch(model, optimizer, out=tmp_path, name="paused") as run:
        for number, (x, y) in enumerate(run.batches(batches(16))):
            torch.nn.functional.cross_entropy(model(x), y).backward()
            if number % 8 == 7:
                with run.pause(), torch.no_grad():
                    model.eval()
                    time.sleep(evaluation)
                    model(x)
                    model.train()
            optimizer.step()
            optimizer.zero_grad()
            run.step()
    step = load(run.path)["results"][0]["step"]
    assert step["max"] < evaluation  # no step holds the evaluation's time


def test_misuse_writes_nothing_and_says_why_in_one_line(tmp_path: Path, capsys):
    model = mlp()
    with advisor.track.torch(model, out=tmp_path):
        pass
    assert "no optimizer step was seen" in capsys.readouterr().err
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    with advisor.track.torch(model, out=tmp_path) as run, torch.no_grad():
        for x, _ in run.batches(batches(10)):
            model(x)
            run.step()
    assert "no training forward pass was seen" in capsys.readouterr().err
    with advisor.track.torch(model, optimizer, out=tmp_path) as run:
        train(run, model, optimizer, batches(MIN_STEADY_STEPS))
    assert "at least 5 steady steps" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_step_that_raises_propagates_and_writes_nothing(tmp_path: Path, capsys):
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    with pytest.raises(ValueError, match="broken"), advisor.track.torch(model, optimizer, out=tmp_path) as run:
        for number, (x, y) in enumerate(run.batches(batches(20))):
            if number == 12:
                raise ValueError("broken")
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            run.step()
    assert "the training raised ValueError: no profile written" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def interrupted(out: Path, at: int, **options):
    """A loop of 40 batches stopped by Ctrl-C before batch ``at``; the run."""
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    with pytest.raises(KeyboardInterrupt), advisor.track.torch(model, optimizer, out=out, **options) as run:
        for number, (x, y) in enumerate(run.batches(batches(40))):
            if number == at:
                raise KeyboardInterrupt
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            run.step()
    return run


def test_ctrl_c_writes_a_complete_profile_of_the_steps_done(tmp_path: Path):
    run = interrupted(tmp_path, 20, steps=100)
    data = load(run.path)
    assert data["provenance"]["interrupted"] is True
    assert data["workload"]["steps"] == 100  # the planned run, at the steady time of the 20 steps done
    assert [p.name for p in tmp_path.iterdir()] == [run.path.name]  # no temporary file left
    early = tmp_path / "early"
    run = interrupted(early, 4)
    assert run.path is None and list(early.iterdir()) == []


def test_models_it_cannot_time_are_refused_before_training(tmp_path: Path):
    with pytest.raises(TrackError, match="no parameters"):
        advisor.track.torch(torch.nn.ReLU(), out=tmp_path).__enter__()
    with pytest.raises(TrackError, match="meta device"):
        advisor.track.torch(torch.nn.Linear(2, 2, device="meta"), out=tmp_path).__enter__()
    split = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2, device="meta"))
    with pytest.raises(TrackError, match="several devices"):
        advisor.track.torch(split, out=tmp_path).__enter__()
    with pytest.raises(TrackError, match="warmup_steps"):
        advisor.track.torch(mlp(), out=tmp_path, warmup_steps=-1)


def test_an_existing_profile_is_never_overwritten(tmp_path: Path):
    paths = []
    for _ in range(2):
        model = mlp()
        optimizer = torch.optim.SGD(model.parameters(), 0.01)
        with advisor.track.torch(model, optimizer, out=tmp_path, name="same", quiet=True) as run:
            train(run, model, optimizer, batches(12))
        paths.append(run.path)
    assert [p.name for p in paths] == ["same.yaml", "same-2.yaml"]


def test_disabled_tracking_does_nothing(tmp_path: Path):
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), 0.01)
    items = batches(12)
    with advisor.track.torch(model, optimizer, out=tmp_path / "never", enabled=False) as run:
        seen = list(run.batches(items))
        run.step()
        with run.pause():
            pass
    assert seen == items and run.path is None and not (tmp_path / "never").exists()
    assert not model._forward_pre_hooks


def test_the_memory_prediction_covers_the_measured_peak(tmp_path: Path):
    """The counted parts (weights, gradients, optimizer states, the kept activations x the transient factor) explain
    what the CPU measured above the run's start, and with the CPU's own overhead they are never below it."""
    from advisor.perf import memory

    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.GELU()) for _ in range(6)])
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    items = [(torch.randn(512, 512), None) for _ in range(10)]
    with advisor.track.torch(model, optimizer, out=tmp_path, name="memory") as run:
        for x, _ in run.batches(items):
            model(x).square().mean().backward()
            optimizer.step()
            optimizer.zero_grad()
            run.step()
    data = load(run.path)
    predicted = memory.predict(data["workload"], "float32", "cpu")
    measured = data["results"][0]["memory"]["peak_gb"]
    assert predicted is not None and measured > 0 and not math.isnan(predicted.total_gb)
    assert predicted.total_gb >= measured
    counted = predicted.static_gb + predicted.activation_gb
    assert counted >= 0.7 * measured  # the counted parts are most of it: the bound is not the overhead's alone
