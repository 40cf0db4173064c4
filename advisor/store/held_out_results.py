"""The published training results kept out of every fit (``advisor/data/held_out_training.yaml``, a published
collection): read as a results frame, so they pass the same validation and expansion as ``profiles/``, and never
through a folder's index (nothing is written beside the package's data). ``advisor crossval --held-out`` predicts
them (:mod:`advisor.perf.held_out`)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

from advisor.store.folder import load_file
from advisor.store.results import results_frame

HELD_OUT_FILE = "held_out_training.yaml"


def held_out_frame() -> pd.DataFrame:
    """The held-out results frame (one row per result, as :func:`results.results_frame` builds it)."""
    path = Path(str(resources.files("advisor").joinpath("data", HELD_OUT_FILE)))
    profiles, _ = load_file(path)
    return results_frame(profiles)
