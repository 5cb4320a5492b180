#!/usr/bin/env bash
# `make lint`: the include direction between the libraries and the core's
# layers and the size of lib/'s sources (scripts/check_layers.py), clang-format
# (every tracked C++ file must be formatted as .clang-format says) and clang-tidy (.clang-tidy's checks on every C++ source
# under lib/, with the compile commands of the build directory given; a source
# found clean is not checked again until its preprocessed text, its flags,
# .clang-tidy or clang-tidy change: scripts/clang_tidy_cached.py).
# Usage: scripts/lint.sh BUILD_DIR [JOBS]
#
# LINT_ANALYZER (shallow or deep) is the mode of the clang static analyzer's
# checks (clang-analyzer-*). shallow, the default, inlines only small callees
# and explores fewer paths per function: it still follows a null pointer or a
# leak through a short helper, at about a twentieth of deep's cost, which is
# most of clang-tidy's time on these sources. deep is clang's own default.
set -euo pipefail
build=${1:?usage: scripts/lint.sh BUILD_DIR [JOBS]}
jobs=${2:-2}
analyzer=${LINT_ANALYZER:-shallow}
case $analyzer in
  shallow | deep) ;;
  *) echo "lint: LINT_ANALYZER must be shallow or deep, not '$analyzer'" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."

start=$SECONDS
if ! python3 scripts/check_layers.py; then
  echo "lint: an include against the layers, or a source too long (above; scripts/check_layers.py)"
  exit 1
fi

mapfile -t cxx < <(git ls-files '*.cpp' '*.hpp' '*.h')
if ! clang-format-14 --dry-run --Werror "${cxx[@]}"; then
  echo "lint: clang-format: the files above are not formatted (run: clang-format-14 -i <file>)"
  exit 1
fi
echo "lint: clang-format: ${#cxx[@]} files formatted"

mapfile -t sources < <(git ls-files 'lib/*.cpp')
# One clang-tidy per source, JOBS at a time, each clean result cached by a key
# of everything it depends on (scripts/clang_tidy_cached.py); a failing source
# does not stop the others, so the log holds every finding.
log="$build/clang-tidy.log"
if ! python3 scripts/clang_tidy_cached.py "$build" "$jobs" "$analyzer" "$log" "${sources[@]}"; then
  grep -E '(error|warning):' "$log" | sort -u
  echo "lint: clang-tidy: findings above (whole log: $log)"
  exit 1
fi
echo "lint: clang-tidy (analyzer: $analyzer) took $((SECONDS - start)) s"
