#!/usr/bin/env bash
# Install everything advisor needs, idempotently: the package with all extras (the app and measure), and for the
# tests (ADVISOR_TEST_BACKENDS=1) the test tools, the other Keras backends, advisor.track's adapters and Debian's
# chromium. Safe to run again; fast when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${ADVISOR_TEST_BACKENDS:-0}" = 1 ] && ls /opt/wheels/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then
    # First PyTorch's CPU build, where this machine keeps its wheel: the test extra's Lightning and transformers
    # (advisor.track's adapters) need torch, and from PyPI it would be a CUDA build of several GB.
    python3 -m pip install --quiet --disable-pip-version-check torch==2.13.0
fi
if [ "${ADVISOR_TEST_BACKENDS:-0}" = 1 ]; then
    # The tests also run the JAX backend (a CPU build from PyPI) and advisor.track's Lightning and Hugging Face
    # adapters (the test extra pins them).
    python3 -m pip install --quiet --disable-pip-version-check -e '.[all,test,jax,serve]'
else
    python3 -m pip install --quiet --disable-pip-version-check -e '.[all]'
fi
# Debian's packages the tests need: chromium (Playwright drives it) and PostgreSQL's server (the collection
# service's tests start their own in a temporary folder; nothing is left running).
missing=()
if ! command -v chromium >/dev/null 2>&1 && [ "${ADVISOR_SKIP_CHROMIUM:-0}" != 1 ]; then
    missing+=(chromium)
fi
if [ "${ADVISOR_TEST_BACKENDS:-0}" = 1 ] && ! command -v initdb >/dev/null 2>&1 \
        && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    missing+=(postgresql)
fi
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "setup: ${missing[*]} missing (apt-get install ${missing[*]}); their tests will be skipped" >&2
    fi
fi
