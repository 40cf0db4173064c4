#!/usr/bin/env bash
# The test command: set up, lint, then run the whole test suite (real TensorFlow, AppTest, headless Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
ADVISOR_TEST_BACKENDS=1 bash scripts/setup.sh
python3 -m ruff check advisor streamlit_app.py tests benchmarks scripts
python3 -m ruff format --check --quiet .  # one formatter: a file it would change fails the run
python3 -m pytest -q "$@"
