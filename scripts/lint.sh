#!/usr/bin/env bash
# `make lint`: clang-format (every tracked C++ file must be formatted as
# .clang-format says) and clang-tidy (.clang-tidy's checks on every C++ source
# under lib/, with the compile commands of the build directory given).
# Usage: scripts/lint.sh BUILD_DIR [JOBS]
set -euo pipefail
build=${1:?usage: scripts/lint.sh BUILD_DIR [JOBS]}
jobs=${2:-2}
cd "$(dirname "$0")/.."

start=$SECONDS
mapfile -t cxx < <(git ls-files '*.cpp' '*.hpp' '*.h')
if ! clang-format-14 --dry-run --Werror "${cxx[@]}"; then
  echo "lint: clang-format: the files above are not formatted (run: clang-format-14 -i <file>)"
  exit 1
fi
echo "lint: clang-format: ${#cxx[@]} files formatted"

mapfile -t sources < <(git ls-files 'lib/*.cpp')
log="$build/clang-tidy.log"
# One process per source; a failing one does not stop the others, so the log
# holds every finding.
if ! printf '%s\n' "${sources[@]}" |
     xargs -P "$jobs" -n 1 clang-tidy-14 -p "$build" --quiet >"$log" 2>&1; then
  grep -E '(error|warning):' "$log" | sort -u
  echo "lint: clang-tidy: findings above (whole log: $log)"
  exit 1
fi
echo "lint: clang-tidy: ${#sources[@]} sources clean in $((SECONDS - start)) s"
