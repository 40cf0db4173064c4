#!/usr/bin/env bash
# Soak: run the slow tests (several machines, the browser, real training: pytest -m slow) N times in a row on a clean
# clone of this checkout's HEAD, and report each round's failures. A test that depends on timing or on the
# machine's state fails some rounds and not others.
#
#   bash scripts/soak.sh [N] [PYTEST ARGS...]     e.g.  bash scripts/soak.sh 5
#                                                       bash scripts/soak.sh 20 tests/test_multiworker.py -k different
# Installs nothing: run scripts/setup.sh (or scripts/test.sh) once first, in the environment it runs in.
set -euo pipefail
rounds="${1:-5}"
shift || true
[ "$#" -gt 0 ] || set -- -m slow
here="$(cd "$(dirname "$0")/.." && pwd)"
clone="$(mktemp -d "${TMPDIR:-/tmp}/advisor-soak.XXXXXX")"
trap 'rm -rf "$clone"' EXIT
git clone --quiet "$here" "$clone/advisor"
cd "$clone/advisor"
failed=0
for round in $(seq 1 "$rounds"); do
    log="$clone/round-$round.log"
    start=$(date +%s)
    if python3 -m pytest -q -p no:cacheprovider "$@" >"$log" 2>&1; then
        verdict="passed"
    else
        verdict="FAILED"
        failed=$((failed + 1))
    fi
    summary="$(tail -n 1 "$log")"
    echo "round $round/$rounds: $verdict in $(( $(date +%s) - start )) s: $summary"
    grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/    /' || true
done
echo "soak: $failed of $rounds round(s) failed"
[ "$failed" -eq 0 ]
