#!/usr/bin/env bash
# The whole test suite N times in a row (default 5) under a parallel CPU load of 2 busy processes, as a loaded
# machine would run it: each run's result and time on one line, and the count of runs that passed at the end.
# Run it in a clean clone with the test environment active (scripts/setup.sh's). Its figures: benchmarks/README.md.
set -uo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
busy=()
for _ in 1 2; do
    python3 -c "while True: pass" &
    busy+=($!)
done
trap 'kill "${busy[@]}" 2>/dev/null' EXIT
passed=0
for run in $(seq 1 "$runs"); do
    start=$(date +%s)
    if python3 -m pytest -q -p no:cacheprovider > "/tmp/stress-run-$run.log" 2>&1; then
        passed=$((passed + 1)); verdict=passed
    else
        verdict="FAILED ($(grep -c '^FAILED' "/tmp/stress-run-$run.log") test(s); /tmp/stress-run-$run.log)"
    fi
    echo "run $run: $verdict in $(( $(date +%s) - start )) s: $(tail -1 "/tmp/stress-run-$run.log")"
done
echo "$passed of $runs runs passed under a load of 2 busy processes"
