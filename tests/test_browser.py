"""The real app in headless Chromium: ``streamlit run`` on a loopback port, driven by Playwright."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from advisor.decision.pipeline import Advisor
from advisor.render import compare as render_compare
from advisor.render import text_width
from advisor.store.catalog import load_catalog
from advisor.store.results import load_frame
from helpers import ROOT, SHIPPED, post_workload_profile, write_yaml

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytest.importorskip("playwright")
if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (scripts/setup.sh installs it)", allow_module_level=True)

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

pytestmark = pytest.mark.slow  # a real streamlit server and headless Chromium

# Screenshots go to the temporary folder (never into the checkout), or where ADVISOR_ARTIFACTS says (a CI's upload)
ARTIFACTS = Path(os.environ.get("ADVISOR_ARTIFACTS") or Path(tempfile.gettempdir()) / "advisor-artifacts")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    folder = tmp_path_factory.mktemp("profiles")
    for path in SHIPPED.glob("*.yaml"):
        shutil.copy(path, folder)
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "streamlit_app.py"),
            "--server.headless",
            "true",
            "--server.address",
            "127.0.0.1",
            "--server.port",
            str(port),
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=ROOT,
        env={**os.environ, "ADVISOR_PROFILES": str(folder)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail("streamlit did not become healthy:\n" + (process.stdout.read() if process.stdout else ""))
        time.sleep(0.3)
    yield url
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield chromium
        chromium.close()


def default_table() -> pd.DataFrame:
    """The options table the app shows at first (the post's CPU, the catalog's estimates, no price typed): the
    pipeline's answer in the report's words, without the columns behind "More columns"."""
    advisor = Advisor(load_frame(SHIPPED).frame, load_catalog(), include_estimates=True)
    rec = advisor.recommend("post-cpu-only")
    table = render_compare.options_display(rec.option_rows.head(200)).drop(columns=list(render_compare.MORE_COLUMNS))
    table.insert(4, "your price", "")
    return table


SCROLLER = "[data-testid=stDataFrame] .dvn-scroller"  # the grid's own scroller, drawn after the grid's box


def wait_for_grid(page) -> None:
    """Wait until the first grid has drawn its scroller and given it a width: reading it before then finds null (the
    box is in the page before the grid draws into it, which a loaded machine makes visible)."""
    page.wait_for_function(
        "sel => { const s = document.querySelector(sel); return s !== null && s.clientWidth > 0; }",
        arg=SCROLLER,
        timeout=60_000,
    )


def widths_available(page) -> float:
    wait_for_grid(page)
    return page.evaluate("sel => document.querySelector(sel).clientWidth", SCROLLER)


def best_upgrade(page) -> str:
    """The headline metric's delta, e.g. '153.09x faster, $16.33 per 1x'."""
    return page.get_by_test_id("stMetricDelta").first.inner_text()


def open_expander(page, header: str, inside: Any) -> None:
    """Open the expander ``header`` until ``inside`` (a locator in it) shows: a click that lands while the app is
    still drawing its first run can be lost (the expander drawn again, closed), so the header is clicked again only
    while what it should show is still hidden (a second click on an open expander would close it)."""
    for _ in range(4):
        if inside.is_visible():
            return
        page.get_by_text(header).click()
        with contextlib.suppress(PlaywrightTimeoutError):
            inside.wait_for(state="visible", timeout=15_000)
    expect(inside).to_be_visible()


def keep_screenshot(page, name: str) -> None:
    """Screenshots go to ARTIFACTS; ADVISOR_UPDATE_SCREENSHOT=1 also refreshes the README's docs/app.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=False)
    if name == "app.png" and os.environ.get("ADVISOR_UPDATE_SCREENSHOT") == "1":
        page.screenshot(path=str(ROOT / "docs" / "app.png"), full_page=False)


def test_the_first_screen_answers_should_i(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(app_url)
    expect(page.get_by_text("Best upgrade")).to_be_visible(timeout=60_000)
    # The plain answer: the best option (an estimate, so it says so), what it costs, saves and pays back.
    expect(page.get_by_test_id("stMetricValue").first).to_contain_text("(estimated)")
    for label in ("Upgrade cost", "Hours saved a week", "Pays for itself", "Cost per run"):
        expect(page.get_by_test_id("stMetricLabel").filter(has_text=label)).to_be_visible()
    expect(page.get_by_text("likely between").first).to_be_visible()
    expect(page.get_by_text("Renting: Renting").first).to_be_visible()
    # The cost chart is drawn (Vega renders into a canvas or an SVG).
    chart = page.get_by_test_id("stVegaLiteChart").first
    expect(chart).to_be_visible(timeout=30_000)
    expect(chart.locator("canvas, svg").first).to_be_attached()
    # The options table fits a 1,400-pixel window: no sideways scrolling.
    table = page.get_by_test_id("stDataFrame").first
    table.scroll_into_view_if_needed()
    wait_for_grid(page)
    widths = page.evaluate(
        "sel => { const s = document.querySelector(sel); return [s.scrollWidth, s.clientWidth]; }", SCROLLER
    )
    assert widths[0] <= widths[1], f"the table scrolls sideways: {widths}"
    # No head or cell is cut: each text of the table as the app shows it (the same pipeline, the same words),
    # measured in the page's own font, fits the width the app gives its column, with the grid's padding. The
    # grid draws on a canvas (its header cells in the DOM are empty boxes for screen readers), so the texts are
    # measured rather than read back. The default view shows the columns a buyer decides on.
    shown = default_table()
    page.wait_for_function(  # the grid has drawn its heads
        "n => [...document.querySelectorAll('[data-testid=stDataFrame] [role=columnheader]')]"
        ".filter(h => h.textContent).length >= n",
        arg=len(shown.columns),
        timeout=30_000,
    )
    heads = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stDataFrame] [role=columnheader]')].map(h => h.textContent)"
    )
    assert [h for h in heads if h] == list(shown.columns), heads
    texts = {name: [name, *shown[name].astype(str)] for name in shown.columns}
    measured = page.evaluate(
        "texts => { const c = document.createElement('canvas').getContext('2d');"
        " c.font = '14px ' + getComputedStyle(document.querySelector('[data-testid=stDataFrame]')).fontFamily;"
        " const out = {}; for (const [k, v] of Object.entries(texts)) out[k] = v.map(t => c.measureText(t).width);"
        " return out; }",
        texts,
    )
    widths = {
        name: (
            text_width.option_width(list(shown[name]))
            if name == "option"
            else text_width.column_px(texts[name], 18 if name == "your price" else 0)
        )
        for name in shown.columns
    }
    cut = [
        (name, text, round(w))
        for name in shown.columns
        for text, w in zip(texts[name], measured[name], strict=True)
        if w + 16 > widths[name]
    ]
    assert not cut, f"texts wider than their column: {cut[:10]}"
    assert sum(widths.values()) <= widths_available(page), widths
    # With the default inputs the first screen gives a payback in weeks.
    expect(page.get_by_test_id("stMetric").filter(has_text="Pays for itself")).to_contain_text("weeks")
    page.get_by_test_id("stMetric").first.scroll_into_view_if_needed()
    keep_screenshot(page, "app.png")
    assert page.get_by_test_id("stException").count() == 0
    page.close()


def test_the_page_recommends_and_reacts(app_url, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.goto(app_url)
    expect(page.get_by_text("Best upgrade")).to_be_visible(timeout=60_000)
    page.get_by_test_id("stSidebar").get_by_text("Include estimates").click()
    expect(page.get_by_test_id("stMetricValue").first).to_contain_text("Titan RTX", timeout=30_000)
    assert page.get_by_test_id("stException").count() == 0

    # Choose another current hardware: the recommendation changes.
    before = best_upgrade(page)
    page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Current hardware").click()
    page.get_by_role("option", name="Titan RTX (the post)").click()
    expect(page.get_by_test_id("stMetricDelta").first).not_to_have_text(before, timeout=30_000)
    expect(page.get_by_test_id("stMetricDelta").first).to_contain_text("2.13x faster, free")
    expect(page.get_by_test_id("stMetricValue").first).to_contain_text("mixed_float16")
    expect(page.get_by_text("Switch to mixed_float16").first).to_be_visible()

    # Upload a profile: it shows up in the options table, and nothing breaks.
    upload = post_workload_profile("my-laptop", seconds=9999.0, price=0)
    upload["name"] = "My laptop"
    path = write_yaml(tmp_path / "my-laptop.yaml", upload)
    page.get_by_test_id("stSidebar").locator("input[type=file]").set_input_files(str(path))
    table = page.get_by_test_id("stDataFrame").first
    expect(table).to_contain_text("My laptop (uploaded)", timeout=30_000)
    assert page.get_by_test_id("stException").count() == 0
    keep_screenshot(page, "app-after-upload.png")
    page.close()


def test_a_published_workload_can_be_chosen(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(app_url)
    expect(page.get_by_text("Best upgrade")).to_be_visible(timeout=60_000)
    page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Workload").click()
    page.get_by_role("option", name="ResNet-50 (published, PyTorch)").click()
    expect(page.get_by_test_id("stMetricLabel").first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("Lambda").first).to_be_visible(timeout=30_000)
    assert page.get_by_test_id("stException").count() == 0
    page.close()


def test_a_bad_upload_shows_its_errors_and_the_page_keeps_working(app_url, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(app_url)
    expect(page.get_by_text("Best upgrade")).to_be_visible(timeout=60_000)
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nid: !!python/object/apply:os.system ['echo pwned']\n")
    page.get_by_test_id("stSidebar").locator("input[type=file]").set_input_files(str(bad))
    expect(page.get_by_text("Your uploaded profile cannot be used")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("could not determine a constructor").first).to_be_visible()
    expect(page.get_by_test_id("stMetricValue").first).to_contain_text("(estimated)")
    assert page.get_by_test_id("stException").count() == 0
    page.close()


def test_an_uploaded_tracked_job_is_answered_with_its_wait_for_data(app_url, browser):
    """A profile advisor.track recorded (an input-bound PyTorch loop on a CPU), uploaded: its workload is the one
    shown, estimated on the catalog, and the answer puts the free input-pipeline fixes first."""
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(app_url)
    expect(page.get_by_text("Best upgrade")).to_be_visible(timeout=60_000)
    fixture = ROOT / "tests" / "fixtures" / "input-bound-mlp.yaml"
    page.get_by_test_id("stSidebar").locator("input[type=file]").set_input_files(str(fixture))
    expect(page.get_by_text("Your run waits for data").first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("num_workers").first).to_be_visible()
    assert page.get_by_test_id("stException").count() == 0
    keep_screenshot(page, "app-tracked-upload.png")
    page.close()


def test_a_language_model_job_is_answered_in_the_browser(app_url, browser):
    """The buyer's question in a real browser: a preset and LoRA picked, the answer per GPU and the cheapest
    rental that fits, in a 1,400-pixel window."""
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(app_url)
    expect(page.get_by_text("Best upgrade")).to_be_visible(timeout=60_000)
    model = page.get_by_test_id("stSelectbox").filter(has_text="Model").first
    open_expander(page, "What are you training? A language model", model)
    model.click()
    page.get_by_role("option", name="Llama 3.1 8B (8.03 B parameters)").click()
    expect(page.get_by_text("Cheapest rented:").first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Fastest that fits:").first).to_be_visible()
    table = page.get_by_test_id("stDataFrame").first
    expect(table).to_be_visible()
    box = table.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1400
    assert page.get_by_test_id("stException").count() == 0
    page.close()


def test_running_a_model_draws_its_answer_and_both_charts_in_the_browser(app_url, browser):
    """The run section in a real browser: a preset picked, the picks (owning against renting included), the table,
    and both charts drawn (throughput as users grow; speed against the cost of a million tokens), no error."""
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.goto(app_url)
    expect(page.get_by_text("Best upgrade")).to_be_visible(timeout=60_000)
    section = page.get_by_test_id("stExpander").filter(has_text="Running or serving a model?")
    model = section.get_by_test_id("stSelectbox").filter(has_text="Model").first
    open_expander(page, "Running or serving a model?", model)
    model.click()
    page.keyboard.type("Llama 3.1 8B")  # the menu is long: typed, it narrows to the preset
    page.get_by_role("option", name="Llama 3.1 8B", exact=True).click()
    expect(page.get_by_text("Fastest that fits:").first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Buying the ").first).to_be_visible()
    charts = page.get_by_test_id("stVegaLiteChart")
    expect(charts.filter(has_text="users at once").first).to_be_visible(timeout=30_000)
    expect(charts.filter(has_text="USD a million output tokens").first).to_be_visible(timeout=30_000)
    assert page.get_by_test_id("stException").count() == 0
    page.close()


def test_a_price_typed_in_the_table_drives_the_recommendation(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(app_url)
    expect(page.get_by_text("Best upgrade")).to_be_visible(timeout=60_000)
    shown = default_table()
    speedup = float(shown["speedup"].iloc[0].removesuffix("x"))  # the best option, first in the table
    widths = [text_width.option_width(list(shown["option"]))] + [
        text_width.column_px([name, *shown[name].astype(str)], 18 if name == "your price" else 0)
        for name in shown.columns[1:]
    ]
    grid = page.get_by_test_id("stDataFrame").first
    column = list(shown.columns).index("your price")
    for attempt in range(3):  # a page drawn again under a loaded machine may take the first double-click
        grid.scroll_into_view_if_needed()
        wait_for_grid(page)
        page.wait_for_timeout(1000)  # the grid settles where it was scrolled to
        box = grid.bounding_box()
        page.mouse.dblclick(box["x"] + sum(widths[:column]) + widths[column] / 2, box["y"] + 35 + 17)  # its first row
        try:
            page.locator("textarea.gdg-input").wait_for(timeout=20_000)  # the cell's editor is open
            break
        except PlaywrightTimeoutError:
            if attempt == 2:
                raise
    page.keyboard.insert_text("$300")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("stMetricDelta").first).to_contain_text(f"${300 / speedup:,.2f} per 1x", timeout=30_000)
    assert page.get_by_test_id("stException").count() == 0
    page.close()
