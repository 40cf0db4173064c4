"""An independent plain Keras script of the post's job, for the fidelity benchmark.

It shares no code with advisor: its own data, model and timing callback. Prints one JSON line with
its per-epoch wall times. Usage: python benchmarks/plain_keras.py EPOCHS [UNITS]
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras
import numpy as np
import tensorflow as tf

epochs = int(sys.argv[1])
units = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
samples, timesteps, batch = 937, 100, 100

rng = np.random.default_rng(0)
x = rng.normal(size=(samples, timesteps, 1)).astype("float32")
y = rng.integers(0, 2, size=(samples, 1)).astype("float32")
dataset = (
    tf.data.Dataset.from_tensor_slices((x, y))
    .cache()
    .shuffle(samples, seed=0, reshuffle_each_iteration=True)
    .batch(batch)
    .repeat()
    .prefetch(tf.data.AUTOTUNE)
)

model = keras.Sequential(
    [keras.Input((timesteps, 1)), keras.layers.LSTM(units), keras.layers.Dense(1, activation="sigmoid")]
)
model.compile(loss="binary_crossentropy", optimizer=keras.optimizers.Adam(0.001), metrics=["accuracy"])


class Timer(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.times = []

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self.start)


timer = Timer()
model.fit(dataset, epochs=epochs, steps_per_epoch=-(-samples // batch), verbose=0, callbacks=[timer])
print(json.dumps({"epoch_seconds": timer.times}))
