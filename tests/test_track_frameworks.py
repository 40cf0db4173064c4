"""advisor.track in the frameworks' own loops, real training on the CPU: Lightning's Trainer, Hugging Face's Trainer
on a tiny model built from a local config (nothing downloaded), and Keras fit (with steps_per_execution)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from advisor import store
from advisor.cli import main
from helpers import copy_small_shipped

pytestmark = pytest.mark.slow  # real Lightning, transformers and TensorFlow training


def load(path: Path) -> dict:
    profile, problems = store.load_profile(path)
    assert not problems, problems
    return profile.data


def estimated_and_recommended(capsys, tmp_path: Path, data: dict, path: Path) -> list[dict]:
    """The profile among the shipped ones: estimate on every GPU and recommend from it (both exit 0)."""
    capsys.readouterr()  # what the training printed
    folder = copy_small_shipped(tmp_path / "profiles")  # the large published collection plays no part here
    shutil.copy(path, folder / path.name)
    assert main(["estimate", "--profiles", str(folder), "--workload", data["workload"]["name"], "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert main(["recommend", "--profiles", str(folder), "--current", data["id"], "--estimates", "--json"]) == 0
    recommendation = json.loads(capsys.readouterr().out)
    assert recommendation["current"]["profile"] == data["id"] and recommendation["reason"]
    return rows


def test_lightning_trainer(tmp_path: Path, capsys):
    torch = pytest.importorskip("torch")
    lightning = pytest.importorskip("lightning")
    import advisor.track

    class Classifier(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))

        def training_step(self, batch, index):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.net(x), y)

        def validation_step(self, batch, index):
            x, y = batch
            self.log("val_loss", torch.nn.functional.cross_entropy(self.net(x), y))

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), 1e-3)

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(512, 16), torch.randint(0, 4, (512,)))
    loader = torch.utils.data.DataLoader(data, batch_size=16)
    callback = advisor.track.lightning(name="lightning classifier", out=tmp_path / "new")
    trainer = lightning.Trainer(
        max_epochs=2,
        accelerator="cpu",
        callbacks=[callback],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accumulate_grad_batches=2,
        limit_val_batches=4,
    )
    trainer.fit(Classifier(), loader, loader)
    profile = load(callback.path)
    workload, result = profile["workload"], profile["results"][0]
    assert workload["kind"] == "tracked" and workload["optimizer"] == "adamw"
    assert workload["steps"] == 32 and workload["batch_size"] == 32 and workload["gradient_accumulation"] == 2
    assert any(library.startswith("lightning ") for library in profile["software"]["libraries"])
    assert result["step"]["count"] >= 20 and "data_wait" in result
    rows = estimated_and_recommended(capsys, tmp_path, profile, callback.path)
    assert len(rows) > 40


def test_hugging_face_trainer_on_a_tiny_llama_from_a_local_config(tmp_path: Path, capsys):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    import advisor.track

    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)

    class Tokens(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 160

        def __getitem__(self, index: int) -> dict:
            ids = torch.randint(0, 128, (24,), generator=torch.Generator().manual_seed(index))
            return {"input_ids": ids, "labels": ids}

    arguments = transformers.TrainingArguments(
        output_dir=str(tmp_path / "trainer"),
        per_device_train_batch_size=8,
        gradient_accumulation_steps=2,
        num_train_epochs=2,
        report_to=[],
        logging_steps=4,
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    callback = advisor.track.huggingface(name="tiny llama", out=tmp_path / "new")
    transformers.Trainer(model=model, args=arguments, train_dataset=Tokens(), callbacks=[callback]).train()
    profile = load(callback.path)
    workload, result = profile["workload"], profile["results"][0]
    assert workload["model_class"] == "LlamaForCausalLM" and workload["steps"] == 20
    assert workload["batch_size"] == 16 and workload["gradient_accumulation"] == 2
    assert workload["tokens_per_sample"] == 24 and result["step"]["tokens_per_second"] > 0
    assert workload["optimizer"] == "adamw"  # accelerate's wrapper unwrapped
    parameters = sum(p.numel() for p in model.parameters())
    assert workload["parameters"] == parameters
    # a decoder's training FLOPs are about 6 x parameters x tokens (plus attention): the count is in that range
    flops = sum(p["flops_per_sample"] for p in workload["phases"])
    assert 4 * parameters * 24 < flops < 12 * parameters * 24
    assert workload["output_values_per_sample"] == 24 * 128  # the logits of every position, held at the loss
    estimated_and_recommended(capsys, tmp_path, profile, callback.path)


def test_keras_fit_with_steps_per_execution(tmp_path: Path, capsys):
    keras = pytest.importorskip("keras")
    import numpy as np

    import advisor.track

    rng = np.random.default_rng(0)
    x = rng.normal(size=(640, 20, 3)).astype("float32")
    y = (rng.random((640, 1)) > 0.5).astype("float32")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((20, 3)), keras.layers.LSTM(16), keras.layers.Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy", steps_per_execution=2)
    callback = advisor.track.keras(batch_size=32, name="keras lstm", out=tmp_path / "new")
    assert callback.async_safe
    model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[callback], validation_split=0.1)
    profile = load(callback.path)
    workload, result = profile["workload"], profile["results"][0]
    per_epoch = -(-576 // 32)  # the training split's batches
    assert workload["steps"] == 3 * per_epoch and workload["batch_size"] == 32
    assert result["checks"]["steps_per_execution"] == 2
    assert result["step"]["count"] % 2 == 0  # executions of two steps each
    recurrent = next(p for p in workload["phases"] if p["kind"] == "recurrent")
    assert recurrent["sequential_steps"] == 20
    assert "data_wait" not in result  # fit's input pipeline runs inside the step
    estimated_and_recommended(capsys, tmp_path, profile, callback.path)
    # a tracker used outside fit says so and writes nothing
    unused = advisor.track.keras(batch_size=32, out=tmp_path / "unused")
    model.evaluate(x, y, verbose=0, callbacks=[unused])
    assert "used outside fit" in capsys.readouterr().err and not list((tmp_path / "unused").iterdir())
