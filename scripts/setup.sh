#!/usr/bin/env bash
# Install everything advisor needs, idempotently: the package with all extras and the test tools,
# and (for the browser tests) Debian's chromium. Safe to run again; fast when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e '.[all,test]'
if [ "${ADVISOR_TEST_BACKENDS:-0}" = 1 ]; then
    # The tests also run the JAX backend (a CPU build from PyPI) and, where this machine keeps its CPU wheel,
    # the PyTorch one (from PyPI torch would be a CUDA build of several GB: then its test is skipped).
    python3 -m pip install --quiet --disable-pip-version-check -e '.[jax]'
    if ls /opt/wheels/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then
        python3 -m pip install --quiet --disable-pip-version-check torch==2.13.0
    fi
fi
if ! command -v chromium >/dev/null 2>&1 && [ "${ADVISOR_SKIP_CHROMIUM:-0}" != 1 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "setup: chromium is missing (apt-get install chromium); the browser test will be skipped" >&2
    fi
fi
