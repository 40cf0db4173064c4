"""Three small example models, built here rather than shipped as binary files: ``python -m advisor examples``.

- ``small-cnn``: a small CNN on 32 x 32 colour images (10 classes);
- ``gru-text``: a GRU text classifier on 100-token sequences, with an embedding of 5,000 words;
- ``transformer-block``: one Transformer encoder block on 64 steps of 128 features.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def small_cnn():
    import keras

    inputs = keras.Input((32, 32, 3), name="image")
    x = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(inputs)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(128, activation="relu")(x)
    outputs = keras.layers.Dense(10, activation="softmax")(x)
    model = keras.Model(inputs, outputs, name="small_cnn")
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def gru_text():
    import keras

    inputs = keras.Input((100,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(5000, 64)(inputs)
    x = keras.layers.GRU(64)(x)
    outputs = keras.layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs, outputs, name="gru_text")
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy", metrics=["accuracy"])
    return model


def transformer_block():
    import keras

    inputs = keras.Input((64, 128), name="sequence")
    attention = keras.layers.MultiHeadAttention(num_heads=4, key_dim=32)(inputs, inputs)
    x = keras.layers.LayerNormalization()(keras.layers.Add()([inputs, attention]))
    feed = keras.layers.Dense(256, activation="relu")(x)
    feed = keras.layers.Dense(128)(feed)
    x = keras.layers.LayerNormalization()(keras.layers.Add()([x, feed]))
    x = keras.layers.GlobalAveragePooling1D()(x)
    outputs = keras.layers.Dense(1)(x)
    model = keras.Model(inputs, outputs, name="transformer_block")
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    return model


EXAMPLES: dict[str, Callable[[], Any]] = {
    "small-cnn": small_cnn,
    "gru-text": gru_text,
    "transformer-block": transformer_block,
}


def write_examples(folder: str | Path, names: list[str] | None = None) -> list[Path]:
    """Build the examples and save them as ``<name>.keras`` in the folder (created if needed)."""
    import keras

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names or list(EXAMPLES):
        keras.utils.set_random_seed(0)
        path = folder / f"{name}.keras"
        EXAMPLES[name]().save(path)
        paths.append(path)
    return paths
