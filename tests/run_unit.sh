#!/usr/bin/env bash
# Runs the doctest unit-test runner of BUILD_DIR and prints its result as
# "LABEL: N passed, M failed"; appends "LABEL N M" to RESULTS when given.
# Extra environment (sanitizer options) passes through.
set -uo pipefail
build=$1 label=$2 results=${3:-}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build/tests/unit/unit_tests" --no-intro=true 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
line=$(grep -E '^\[doctest\] test cases:' "$out" | tail -1)
passed=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$line")
failed=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$line")
if [ -z "$line" ]; then passed=0 failed=1; fi
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi  # a crash
echo "$label: $passed passed, $failed failed"
[ -n "$results" ] && echo "$label $passed $failed" >>"$results"
exit "$status"
