#!/usr/bin/env bash
# The main job: set up, then open the advisor app on the shipped profiles (http://localhost:8501).
set -euo pipefail
cd "$(dirname "$0")/.."
ADVISOR_SKIP_CHROMIUM=1 bash scripts/setup.sh
exec python3 -m streamlit run streamlit_app.py "$@"
