"""Inference profiles for real: ``measure --inference`` times transformers' ``generate`` of a tiny Llama on this CPU
and writes a profile of ``job: inference``; ``validate`` checks that its figures follow from its timings; ``list``,
the folder's loader and the app show it apart from the training results; the collection service takes a real one and
refuses one faster than its GPU's physical bound; the shipped H200 generations sit beside their estimates."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from advisor.cli import main
from advisor.format import schema, typed
from advisor.store import load_profiles
from advisor.store.results import load_frame
from advisor.store.write import dump_profile
from helpers import SHIPPED, app_test, needs

TINY_LLAMA = {  # a Llama of 2 layers, grouped-query attention (2 heads, 1 key-value head): built with random weights
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "vocab_size": 96,
    "max_position_embeddings": 256,
    "tie_word_embeddings": False,
}
H200_8B = "nvidia-h200-llama-3-1-8b-transformers"
# 16 output tokens over 3 repeats: the 15 steps stand well above a loaded CPU's noise (4 over 2 once did not)
OUTPUT, REPEATS = 16, 3


def shipped(profile_id: str) -> dict:
    return yaml.safe_load((SHIPPED / f"{profile_id}.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """The profile ``measure --inference`` writes for the tiny Llama (a local folder without weights)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    model = tmp_path_factory.mktemp("tiny-llama")
    (model / "config.json").write_text(json.dumps(TINY_LLAMA), encoding="utf-8")
    out = tmp_path_factory.mktemp("profiles")
    argv = ["--profiles", str(out), "measure", "--inference", "--model-config", str(model), "--prompt", "8"]
    argv += ["--output", str(OUTPUT), "--users", "2,1", "--repeats", str(REPEATS), "--dtype", "float32"]
    argv += ["--price-usd", "300"]
    assert main(argv) == 0
    (path,) = out.glob("*.yaml")
    return path


@needs("torch")
@needs("transformers")
def test_measure_inference_writes_a_valid_profile_of_a_real_generation(measured):
    data = yaml.safe_load(measured.read_text(encoding="utf-8"))
    assert schema.validate(data, str(measured), expected_id=measured.stem) == ([], [])
    assert data["job"] == "inference" and data["schema_version"] == schema.SCHEMA_VERSION
    generation = data["generation"]
    assert generation["model"].startswith("tiny-llama")  # the folder's name, never its path
    assert generation["engine"] == "transformers" and generation["dtype"] == "float32"
    assert generation["config"]["num_key_value_heads"] == 1 and "_name_or_path" not in generation["config"]
    # the weights counted on the built model: embeddings, 2 layers of attention (q, o 32x32; k, v 32x16) and MLP
    # (3 of 32x64), their norms, the final norm and the output layer
    layer = 2 * 32 * 32 + 2 * 32 * 16 + 3 * 32 * 64 + 2 * 32
    assert generation["parameters"] == 96 * 32 + 2 * layer + 32 + 96 * 32
    results = data["generation_results"]
    assert [r["batch"] for r in results] == [1, 2]  # each batch once, in order
    for r in results:
        assert r["prefill"]["count"] == r["generate"]["count"] == REPEATS  # the warm-up is not among them
        step = (r["generate"]["median"] - r["prefill"]["median"]) / (OUTPUT - 1)
        assert r["time_per_output_token_s"] == pytest.approx(step, rel=0.01)
        assert r["decode_tokens_per_s"] == pytest.approx(r["batch"] / step, rel=0.01)
        assert r["prefill_tokens_per_s"] == pytest.approx(r["batch"] * 8 / r["prefill"]["median"], rel=0.01)
    assert data["device"]["kind"] == "cpu" and data["price"]["usd"] == 300
    assert data["provenance"]["method"] == "measured" and "--inference" in data["provenance"]["command"]


@needs("torch")
@needs("transformers")
def test_validate_names_a_figure_that_does_not_follow_from_its_timings(measured, tmp_path, capsys):
    data = yaml.safe_load(measured.read_text(encoding="utf-8"))
    data["generation_results"][1]["decode_tokens_per_s"] *= 3
    data["generation_results"][0]["generate"]["median"] = data["generation_results"][0]["generate"]["max"] * 2
    bad = tmp_path / f"{data['id']}.yaml"
    bad.write_text(dump_profile(data), encoding="utf-8")
    assert main(["validate", str(bad)]) == 1
    said = capsys.readouterr()
    assert "generation_results[1].decode_tokens_per_s" in said.out + said.err
    assert "does not follow from the timings" in said.out + said.err
    assert "generation_results[0].generate.median" in said.out + said.err
    assert "Traceback" not in said.out + said.err


def test_output_steps_lost_in_the_timing_noise_are_a_users_error_naming_what_to_raise():
    """Where generating the output took no longer than its first token (a tiny model on a busy CPU), the measurement
    says so with what to raise, rather than writing a profile validation refuses."""
    from advisor.errors import AdvisorError
    from advisor.measure.generation import GenerationResult

    noisy = GenerationResult(batch=1, prefill_seconds=[0.004, 0.005], generate_seconds=[0.004, 0.0045])
    with pytest.raises(AdvisorError, match=r"batch 1: generating 4 tokens took no longer .*--output or --repeats"):
        noisy.record(prompt_tokens=8, output_tokens=4)
    clear = GenerationResult(batch=1, prefill_seconds=[0.004, 0.004], generate_seconds=[0.010, 0.010])
    assert clear.record(prompt_tokens=8, output_tokens=4)["time_per_output_token_s"] == pytest.approx(0.002)


def test_an_inference_profile_without_its_generation_or_with_a_training_workload_is_refused():
    data = shipped(H200_8B)
    del data["generation"]
    data["workload"] = shipped("post-titan-rtx")["workload"]
    problems, _ = schema.validate(data, "f.yaml")
    fields = {p.field for p in problems}
    assert {"generation", "workload"} <= fields
    assert any("job is inference" in p.message for p in problems)
    training = shipped("post-titan-rtx")
    training["generation_results"] = shipped(H200_8B)["generation_results"]
    problems, _ = schema.validate(training, "g.yaml")
    assert any(p.field == "generation_results" and "job is not inference" in p.message for p in problems)


@needs("torch")
@needs("transformers")
def test_list_and_the_folder_keep_inference_profiles_apart_from_the_training_results(measured, capsys):
    folder = measured.parent
    (folder / "post-titan-rtx.yaml").write_text((SHIPPED / "post-titan-rtx.yaml").read_text(encoding="utf-8"))
    assert main(["--profiles", str(folder), "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("post-titan-rtx:") and "inference" in lines[1] and "tok/s at 2" in lines[1]
    loaded = load_frame(folder)
    assert set(loaded.frame["profile"]) == {"post-titan-rtx"}  # a generation is not a training time
    assert [g.id for g in loaded.generations()] == [measured.stem]
    assert [g.id for g in load_frame(folder).generations()] == [measured.stem]  # again, from the index's snapshot
    assert main(["--profiles", str(folder), "--json", "list"]) == 0
    listed = {p["id"]: p for p in json.loads(capsys.readouterr().out)}
    assert listed[measured.stem]["job"] == "inference" and listed[measured.stem]["users"] == [1, 2]
    assert listed["post-titan-rtx"]["job"] == "training"


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ([], "--inference needs --model-config"),
        (["--model-config", "llama-3.1-8b", "--users", "0"], "--users: 1 or more"),
        (["--model-config", "llama-3.1-8b", "--users", "one"], "--users: whole numbers"),
        (["--model-config", "llama-3.1-8b", "--output", "1"], "--output: a generation's decode"),
        (["--model-config", "llama-3.1-8b", "--quick"], "--quick stops a training early"),
        (["--model-config", "no-such-model"], "no-such-model"),
        (["--model-config", "llama-3.1-8b", "--price-usd", "9", "--price-date", "2026-13-01"], "--price-date must"),
    ],
)
def test_bad_generation_options_get_one_line_and_time_nothing(tmp_path, capsys, extra, said):
    assert main(["--profiles", str(tmp_path), "measure", "--inference", *extra]) != 0
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and not list(tmp_path.iterdir())


def test_the_shipped_h200_generations_sit_beside_their_estimates_and_say_the_fit_saw_them():
    from advisor.infer.measured import comparisons
    from advisor.render.inference import measured_notes
    from advisor.store.catalog import load_catalog

    profiles = [p.typed for p in load_profiles(SHIPPED).profiles if p.typed.job == "inference"]
    rows = comparisons(profiles, load_catalog())
    assert len(profiles) == 4 and len(rows) == 9
    assert all(r.gpu_id == "h200-sxm" and r.seen_by_fit and r.why is None for r in rows)
    assert all(0.8 <= r.decode_ratio <= 1.25 for r in rows), [(r.model, r.batch, r.decode_ratio) for r in rows]
    assert all((r.estimated_time_to_first_token_s is not None) == (r.batch == 1) for r in rows)
    assert "not held out" in " ".join(measured_notes(rows))


def test_a_generation_faster_than_its_gpu_can_run_is_refused_by_the_physical_bound():
    from advisor.infer.measured import physical_bounds
    from advisor.store.catalog import load_catalog

    profile = typed.build(schema.normalise(shipped(H200_8B)))
    bounds = physical_bounds(profile, load_catalog().match("NVIDIA H200"))
    assert [b.batch for b in bounds] == [1, 8, 32]
    for bound, result in zip(bounds, profile.generation_results, strict=True):
        # one step reads the 16 GB of weights at 4.8 TB/s at least: about 3.3 ms; measured 27 ms and above
        assert 0.003 < bound.time_per_output_token_s < result.time_per_output_token_s
        assert bound.time_to_first_token_s < result.time_to_first_token_s
    # the same generation on a Mac (no published compute peak): its bandwidth alone bounds a step, the prompt none
    mac = typed.build(
        schema.normalise({**shipped(H200_8B), "device": {"kind": "gpu", "name": "Apple M3 Max (40-core GPU)"}})
    )
    [one, *_] = physical_bounds(mac, load_catalog().match(mac.device.name))
    assert one.time_to_first_token_s == 0 and 0.035 < one.time_per_output_token_s < 0.040  # 15 GB at 400 GB/s


def faster(data: dict, factor: float) -> dict:
    """The same profile with every time divided by ``factor`` and the figures worked out again (still valid)."""
    data = copy.deepcopy(data)
    for r in data["generation_results"]:
        for part in ("prefill", "generate"):
            r[part] = {k: (v / factor if k != "count" else v) for k, v in r[part].items()}
        r["time_to_first_token_s"] /= factor
        r["time_per_output_token_s"] /= factor
        r["prefill_tokens_per_s"] *= factor
        r["decode_tokens_per_s"] *= factor
    return data


@needs("fastapi")
@needs("uvicorn")
def test_the_service_takes_a_real_generation_and_refuses_an_impossible_one(
    tmp_path_factory, reference, monkeypatch, capsys
):
    from servers import Service, submit

    monkeypatch.setenv("ADVISOR_CACHE", str(tmp_path_factory.mktemp("cache")))
    running = Service(f"sqlite:///{tmp_path_factory.mktemp('db') / 'c.sqlite'}", reference).start()
    try:
        token = running.token()
        status, answer = submit(running.url, dump_profile(shipped(H200_8B)).encode(), token)
        assert status == 201 and answer["status"] == "listed", answer
        impossible = faster({**shipped(H200_8B), "id": "an-impossible-h200"}, 20.0)
        assert schema.validate(impossible, "x")[0] == []  # valid: only the bound refuses it
        status, answer = submit(running.url, dump_profile(impossible).encode(), token)
        assert (status, answer["rule"]) == (422, "physical_bound"), answer
        assert answer["field"].startswith("generation_results[0].") and "physical bound" in answer["message"]
        slow = faster({**shipped(H200_8B), "id": "a-slow-h200"}, 1 / 6)  # possible, 6x off the estimate: held
        status, answer = submit(running.url, dump_profile(slow).encode(), token)
        assert status == 201 and answer["status"] == "held" and "estimated" in answer["reason"], answer
        capsys.readouterr()
        assert main(["--collection", running.url, "list"]) == 0  # the collection's copy, as a reader gets it
        (line,) = [n for n in capsys.readouterr().out.splitlines() if "inference" in n]
        assert line.startswith(H200_8B) and "1,499.0 tok/s at 32" in line  # the one listed, not the impossible one
    finally:
        running.stop()


@needs("torch")
@needs("transformers")
def test_the_app_shows_the_measured_generations_beside_their_estimates(monkeypatch, measured):
    folder = measured.parent
    (folder / f"{H200_8B}.yaml").write_text((SHIPPED / f"{H200_8B}.yaml").read_text(encoding="utf-8"))
    at = app_test(monkeypatch, folder)
    assert not at.exception and not any("Measured here" in m.value for m in at.markdown)  # no model picked yet
    at.selectbox(key="run_model").set_value("llama-3.1-8b").run()
    assert not at.exception
    assert any("Measured here" in m.value for m in at.markdown)
    tables = [t.value for t in at.dataframe if "est. / measured" in t.value.columns]
    assert len(tables) == 1
    table = tables[0]
    cpu = yaml.safe_load(measured.read_text(encoding="utf-8"))["device"]["name"]
    assert set(table["measured on"]) == {"NVIDIA H200", cpu}
    estimated = "est. decode tok/s"
    assert set(table[table["measured on"] == cpu][estimated]) == {"-"}  # a CPU: no estimate, the caption says why
    assert "-" not in set(table[table["measured on"] == "NVIDIA H200"][estimated])
    assert any("the estimates are of GPUs" in c.value for c in at.caption)


def test_a_generation_goes_to_an_intel_gpu_where_pytorch_sees_one():
    """No Intel GPU here: stand-ins for torch say which device is visible (their names are PyTorch's: ``torch.cuda``,
    ``torch.xpu``, ``torch.backends.mps``); an Intel GPU is taken after CUDA, before Apple's, and its allocator's
    counters are ``torch.xpu``'s; Apple's and the CPU's have none."""
    from types import SimpleNamespace

    from advisor.measure.generation import GenerationPlan, _device_of
    from advisor.measure.peak_memory import torch_counters as _memory_counters

    def torch_with(cuda: bool, xpu: bool | None, mps: bool) -> SimpleNamespace:
        found = SimpleNamespace(
            cuda=SimpleNamespace(is_available=lambda: cuda),
            backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps)),
        )
        if xpu is not None:  # a torch built without xpu has no torch.xpu at all
            found.xpu = SimpleNamespace(is_available=lambda: xpu)
        return found

    plan = GenerationPlan()
    assert _device_of(plan, torch_with(True, True, False)) == "cuda:0"
    assert _device_of(plan, torch_with(False, True, True)) == "xpu:0"
    assert _device_of(plan, torch_with(False, None, True)) == "mps"
    assert _device_of(plan, torch_with(False, False, False)) == "cpu"
    torch = torch_with(False, True, False)
    assert _memory_counters(torch, "xpu:0") is torch.xpu and _memory_counters(torch, "mps") is None
