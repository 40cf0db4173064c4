"""The typed rows between the layers: each stage's columns declared once (``advisor.store.result_row``,
``advisor.decision.rows``), checked where a row is made, and read as fields by render/ and the app."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from advisor.decision import analysis
from advisor.decision.costs import CurrentCosts
from advisor.decision.pipeline import Advisor
from advisor.decision.rows import ComparedRow, DecisionRow, OptionRow
from advisor.store.result_row import ResultRow
from advisor.store.results import FRAME_COLUMNS

ROOT = Path(__file__).resolve().parents[1]


def test_each_stage_declares_the_columns_it_adds(shipped_frame):
    assert FRAME_COLUMNS == ResultRow.columns() == tuple(shipped_frame.columns)
    assert DecisionRow.added_columns()[0] == "power_source"
    assert ComparedRow.added_columns() == ("speedup", "dollars_per_speedup", "runs_per_hour")
    assert OptionRow.columns() == ComparedRow.columns() + OptionRow.added_columns()
    assert len(set(OptionRow.columns())) == len(OptionRow.columns())  # no stage redeclares another's column


def test_a_recommendation_hands_on_typed_rows_and_its_frames_hold_the_declared_columns(shipped_frame, shipped_catalog):
    advisor = Advisor(shipped_frame, shipped_catalog, include_estimates=True)
    rec = advisor.recommend("post-gtx-1070-ti", goal="value")
    assert type(rec.current) is DecisionRow and rec.current.profile == "post-gtx-1070-ti"
    assert type(rec.best) is OptionRow and rec.best.faster and rec.best.rank == 1
    assert type(rec.best_rental) is OptionRow and not math.isnan(rec.best_rental.cloud_usd_per_run)
    assert rec.purchase is None or type(rec.purchase) is OptionRow
    assert type(rec.current_costs) is CurrentCosts
    itself = rec.current_figures
    assert type(itself) is ComparedRow and itself.speedup == 1.0 and itself.profile == rec.current.profile
    assert tuple(rec.options.columns) == OptionRow.columns()  # the options frame: the declared set, checked
    assert isinstance(rec.best.free_upgrade, bool)  # NumPy's scalars become Python's
    comparison = advisor.compare()
    assert type(comparison.baseline) is ResultRow
    assert tuple(comparison.table.columns) == ResultRow.columns() + ComparedRow.added_columns()


def test_a_row_without_its_stages_columns_or_with_one_undeclared_is_refused(shipped_frame, shipped_catalog):
    rec = analysis.recommend(shipped_frame, "post-cpu-only", catalog=shipped_catalog)
    row = rec.options.iloc[0]
    assert OptionRow.of(row).profile == row["profile"]
    with pytest.raises(ValueError, match=r"OptionRow .*missing rank"):
        OptionRow.of(row.drop("rank"))
    with pytest.raises(ValueError, match="not declared colour"):
        OptionRow.of(row.to_dict() | {"colour": "green"})
    with pytest.raises(ValueError, match="not declared power_source"):  # a later stage's row is not this stage's
        ResultRow.of(rec.current.as_dict())


# A decided row read by a string key (``best["device"]``) where a field says it (``best.device``).
SUBSCRIPTED_ROW = re.compile(r"\b(best|current|rental|purchase|example|base|baseline|best_rental)\[[\"']")


def test_render_and_the_app_read_the_decided_rows_fields():
    sources = [ROOT / "streamlit_app.py", *sorted((ROOT / "advisor" / "render").glob("*.py"))]
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if SUBSCRIPTED_ROW.search(line)
    ]
    assert not found, found
