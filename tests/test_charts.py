"""The charts are Vega-Lite specifications: every layer names a dataset the spec carries, the rest is plain JSON."""

import json

import numpy as np
import pandas as pd
import pytest

from advisor.decision import analysis
from advisor.render import charts

OPTIONS = pd.DataFrame(
    {
        "name": ["slow GPU", "fast GPU", "middle GPU"],
        "precision": ["float32"] * 3,
        "speedup_vs_current": [1.5, 9.0, 3.0],
        "seconds": [100.0, 16.7, 50.0],
        "low": [np.nan, 12.0, 40.0],
        "high": [np.nan, 20.0, 60.0],
        "source": ["measured", "estimated", "quoted"],
        "price_usd": [300.0, 2500.0, np.nan],
        "dollars_per_speedup_vs_current": [200.0, 277.8, np.nan],
    }
)


def layers(spec: dict) -> list[dict]:
    return spec.get("layer", [spec])


@pytest.mark.parametrize(
    "make",
    [
        lambda: charts.speedup_chart(OPTIONS),
        lambda: charts.price_time_chart(analysis.price_time_points(OPTIONS, 300)),
        lambda: charts.dollars_per_speedup_chart(OPTIONS),
        lambda: charts.cumulative_cost_chart(
            pd.DataFrame(
                {"runs": [0, 10], "usd": [0.0, 5.0], "kind": ["keep"] * 2, "option": [""] * 2, "estimated": [False] * 2}
            ),
            pd.DataFrame({"runs": [4], "usd": [2.0], "first": ["keep"], "second": ["buy"]}),
        ),
    ],
)
def test_every_layer_names_a_dataset_the_spec_carries(make):
    spec = make()
    datasets = spec.pop("datasets")
    assert all(isinstance(frame, pd.DataFrame) for frame in datasets.values())
    for layer in layers(spec):
        name = layer["data"]["name"]
        assert name in datasets
        fields = {c["field"] for c in layer["encoding"].values() if isinstance(c, dict) and "field" in c}
        assert fields <= set(datasets[name].columns), (name, fields)
    json.dumps(spec)  # the rest is JSON, as Streamlit sends it


def test_speedup_bars_are_fastest_first_in_every_layer():
    spec = charts.speedup_chart(OPTIONS)
    orders = [layer["encoding"]["y"]["sort"] for layer in layers(spec) if "y" in layer["encoding"]]
    assert orders[0] == ["fast GPU (estimated) · float32", "middle GPU · float32", "slow GPU · float32"]
    assert all(order == orders[0] for order in orders)
    assert len(spec["datasets"]["ranges"]) == 2  # the measured row has no range to draw
