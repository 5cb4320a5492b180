#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time.
#
#   tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]
#
# BUILD_DIR is a meson build configured with -Dfuzz=enabled (see
# `make test-fuzz`); SECONDS is the time per target; TARGETs are names like
# node_json (default: all). Each target runs on a temporary copy of
# tests/fuzz/corpus/<target> (the repository's corpus is never written).
# Crash, leak, timeout and OOM inputs go to tests/fuzz/artifacts/<run>/
# (git-ignored; override the root with FUZZ_ARTIFACTS). Exits 1 if any
# target fails; the last line is "fuzz: N passed, M failed".
set -euo pipefail

usage() {
  echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
build_dir=$1
seconds=$2
shift 2
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: SECONDS must be a positive integer" >&2; usage; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Every target the build made (tests/fuzz/meson.build is the one list).
all_targets=()
for exe in "$build_dir"/tests/fuzz/fuzz_*; do
  [ -f "$exe" ] && [ -x "$exe" ] && all_targets+=("${exe##*/fuzz_}")
done
[ ${#all_targets[@]} -gt 0 ] || { echo "run.sh: no fuzz targets in $build_dir/tests/fuzz" >&2; exit 1; }
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi

# Extra libFuzzer flags per target.
extra_flags() {
  case $1 in
    device_config | scenario) echo "-max_len=4096" ;;  # yaml-cpp is slow on large documents
    *) echo "-max_len=8192" ;;
  esac
}

# Sanitizers: stop at the first report (UBSan would otherwise continue, and
# libFuzzer would not see the finding) and print stacks.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}

work=$(mktemp -d "${TMPDIR:-/tmp}/devshare-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts_root=${FUZZ_ARTIFACTS:-$here/artifacts}
mkdir -p "$artifacts_root"
run_dir=$(mktemp -d "$artifacts_root/run-$(date +%Y%m%d-%H%M%S)-XXXX")

stat_value() {  # stat_value NAME LOG -> the value of "stat::NAME: v", or "?"
  local v
  v=$(sed -n "s/^stat::$1: *\([0-9][0-9]*\).*/\1/p" "$2" | tail -n 1)
  echo "${v:-?}"
}

hex_dump() {  # at most 512 bytes
  if command -v xxd >/dev/null 2>&1; then
    head -c 512 "$1" | xxd
  else
    head -c 512 "$1" | od -An -tx1 -v
  fi
  local n
  n=$(wc -c <"$1")
  if [ "$n" -gt 512 ]; then echo "  ... ($n bytes)"; fi
}

passed=0
failed=0
for name in "${targets[@]}"; do
  exe="$build_dir/tests/fuzz/fuzz_$name"
  if [ ! -x "$exe" ]; then
    printf '%-22s %12s  FAILED (no executable %s)\n' "fuzz_$name" "-" "$exe"
    failed=$((failed + 1))
    continue
  fi
  corpus="$work/corpus-$name"
  mkdir -p "$corpus"
  if [ -d "$here/corpus/$name" ]; then
    cp -R "$here/corpus/$name/." "$corpus/"
  fi
  artifacts="$run_dir/$name"
  mkdir -p "$artifacts"
  log="$work/$name.log"
  rc=0
  # shellcheck disable=SC2046  # extra_flags is a list of words
  "$exe" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" $(extra_flags "$name") \
    >"$log" 2>&1 || rc=$?

  runs=$(stat_value number_of_executed_units "$log")
  rate=$(stat_value average_exec_per_sec "$log")
  units=$(find "$corpus" -type f | wc -l)
  mapfile -t found < <(find "$artifacts" -type f | sort)
  if [ "$rc" -eq 0 ] && [ ${#found[@]} -eq 0 ]; then
    printf '%-22s %12s runs %9s/s %6s corpus  ok\n' "fuzz_$name" "$runs" "$rate" "$units"
    passed=$((passed + 1))
    rmdir "$artifacts"
    continue
  fi

  failed=$((failed + 1))
  printf '%-22s %12s runs %9s/s %6s corpus  FAILED (exit %s)\n' \
    "fuzz_$name" "$runs" "$rate" "$units" "$rc"
  cp "$log" "$artifacts/fuzz_$name.log"
  echo "  log: $artifacts/fuzz_$name.log"
  # The report: a property violation ("<name>: ...", printed by the target)
  # or the sanitizer/libFuzzer error with the top of its stack, and a summary.
  first=$(grep -n -m 1 -E "^$name: |==[0-9]+==ERROR|runtime error:|^ALARM|out-of-memory" "$log" \
    | cut -d: -f1 || true)
  if [ -n "$first" ]; then
    sed -n "${first},$((first + 30))p" "$log" | sed 's/^/  | /'
    { grep -E '^SUMMARY:' "$log" || true; } | sed 's/^/  | /'
  else
    tail -n 30 "$log" | sed 's/^/  | /'
  fi
  for f in "${found[@]}"; do
    [[ $f == *.log ]] && continue
    echo "  input: $f"
    echo "  reproduce: UBSAN_OPTIONS=$UBSAN_OPTIONS $exe $f"
    hex_dump "$f" | sed 's/^/    /'
  done
done

# Keep the run directory only when it holds findings.
rmdir "$run_dir" 2>/dev/null && rmdir "$artifacts_root" 2>/dev/null || true
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
