#!/usr/bin/env bash
# Runs the libFuzzer targets, repeatably (a fixed input count from a fixed
# seed) or exploring (random seed, bounded in time).
#
#   tests/fuzz/run.sh BUILD_DIR --runs N [--runs-for TARGET=N]... [--seed S] [--jobs J] [TARGET...]
#   tests/fuzz/run.sh BUILD_DIR --seconds N [--jobs J] [TARGET...]
#
# BUILD_DIR is a meson build configured with -Dfuzz=enabled (see
# `make test-fuzz`); TARGETs are names like node_json (default: all).
#
# --runs: every committed input of tests/fuzz/corpus/<target> is run first
#   (in name order), then libFuzzer mutates from seed S (default 1) until N
#   inputs have run in all, with address-space randomisation off. The same
#   commit runs the same inputs on every machine, so a pass or a failure
#   repeats. This is what `make test` runs.
# --runs-for TARGET=N: N inputs for TARGET instead of --runs' (a slow
#   target's count, repeatable).
# --seconds: libFuzzer picks a random seed and runs for N seconds from the
#   committed corpus: exploration (`make fuzz`). The seed is printed, so a
#   finding can be replayed.
# --jobs: targets run J at a time (default 1); each target is one process.
#
# Each target writes new inputs to a temporary directory (the repository's
# corpus is never written). Crash, leak, timeout and OOM inputs go to
# tests/fuzz/artifacts/<run>/ (git-ignored; override the root with
# FUZZ_ARTIFACTS). One line per target (inputs run, inputs per second of
# wall time, corpus size, seed, result); exits 1 if any target fails; the last line is
# "fuzz: N passed, M failed".
set -euo pipefail

usage() {
  echo "usage: $0 BUILD_DIR (--runs N [--runs-for TARGET=N]... [--seed S] | --seconds N) [--jobs J] [TARGET...]" >&2
  exit 2
}
positive() {  # positive NAME VALUE
  [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: $1 must be a positive integer, got '$2'" >&2; usage; }
}

[ $# -ge 1 ] || usage
build_dir=$1
shift
runs=""
seconds=""
seed=1
jobs=1
targets=()
declare -A runs_for=()
while [ $# -gt 0 ]; do
  case $1 in
    --runs) [ $# -ge 2 ] || usage; positive --runs "$2"; runs=$2; shift 2 ;;
    --seconds) [ $# -ge 2 ] || usage; positive --seconds "$2"; seconds=$2; shift 2 ;;
    --runs-for)
      [ $# -ge 2 ] && [[ $2 == *=* ]] || usage
      positive --runs-for "${2#*=}"; runs_for[${2%%=*}]=${2#*=}; shift 2 ;;
    --seed) [ $# -ge 2 ] || usage; positive --seed "$2"; seed=$2; shift 2 ;;
    --jobs) [ $# -ge 2 ] || usage; positive --jobs "$2"; jobs=$2; shift 2 ;;
    -*) echo "run.sh: unknown option $1" >&2; usage ;;
    *) targets+=("$1"); shift ;;
  esac
done
if { [ -n "$runs" ] && [ -n "$seconds" ]; } || { [ -z "$runs" ] && [ -z "$seconds" ]; }; then
  echo "run.sh: give exactly one of --runs and --seconds" >&2
  usage
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Every target the build made (tests/fuzz/meson.build is the one list).
all_targets=()
for exe in "$build_dir"/tests/fuzz/fuzz_*; do
  [ -f "$exe" ] && [ -x "$exe" ] && all_targets+=("${exe##*/fuzz_}")
done
[ ${#all_targets[@]} -gt 0 ] || { echo "run.sh: no fuzz targets in $build_dir/tests/fuzz" >&2; exit 1; }
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

# How to start a process without address-space randomisation (util-linux's
# setarch), for the repeatable mode.
no_aslr=()
if [ -n "$runs" ]; then
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    no_aslr=(setarch "$(uname -m)" -R)
  else
    echo "run.sh: setarch -R is not available: runs from one seed may differ between machines" >&2
  fi
fi

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

# Under /tmp whatever TMPDIR says: the targets run from here, and the length
# of this path must be the same on every machine (see run_target).
work=$(mktemp -d /tmp/devshare-fuzz.XXXXXX)
pids=()
cleanup() {
  [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
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

# Runs one target; writes its report to $work/<name>.report and "ok" or
# "failed" to $work/<name>.result.
run_target() {
  local name=$1
  local exe="$build_dir/tests/fuzz/fuzz_$name"
  local report="$work/$name.report"
  if [ ! -x "$exe" ]; then
    printf '%-22s %12s  FAILED (no executable %s)\n' "fuzz_$name" "-" "$exe" >"$report"
    echo failed >"$work/$name.result"
    return
  fi
  # The target runs as a copy in a directory of its own with short relative
  # paths, a fixed environment and, when repeatable, address-space
  # randomisation off: libFuzzer also mutates with the operands of recent
  # comparisons, some of them pointers (into the heap, and the stack, whose
  # addresses depend on the environment, the arguments and what the runtime
  # reads of the executable), so anything else would let two runs from one
  # seed drift apart.
  local dir="$work/$name.d"
  local corpus="$dir/corpus"
  local artifacts="$run_dir/$name"
  mkdir -p "$corpus" "$dir/seeds" "$artifacts"
  # A copy without debug information: what the runtime reads of it (the
  # checkout's path is in there) would otherwise move later heap blocks and
  # make two checkouts of one commit run different inputs. Reproduce a
  # finding with the original executable for line numbers.
  objcopy --strip-debug "$exe" "$dir/fuzz"
  ln -s "$artifacts" "$dir/artifacts"
  local mode_flags=() launcher=()
  if [ -n "$runs" ]; then
    launcher=("${no_aslr[@]}")
    # The committed inputs, in name order, are libFuzzer's seed inputs; new
    # inputs go to the empty corpus directory. No reload: nothing else
    # writes there, and a reload is driven by the clock.
    if [ -d "$here/corpus/$name" ]; then cp -R "$here/corpus/$name/." "$dir/seeds/"; fi
    (cd "$dir" && find seeds -type f | LC_ALL=C sort | paste -sd, >seeds.txt)
    [ -s "$dir/seeds.txt" ] && mode_flags+=("-seed_inputs=@seeds.txt")
    mode_flags+=("-runs=${runs_for[$name]:-$runs}" "-seed=$seed" "-reload=0")
  else
    if [ -d "$here/corpus/$name" ]; then cp -R "$here/corpus/$name/." "$corpus/"; fi
    mode_flags+=("-max_total_time=$seconds")
  fi
  local log="$work/$name.log"
  local rc=0 started
  started=$(date +%s%N)
  # shellcheck disable=SC2046  # extra_flags is a list of words
  (cd "$dir" && env -i PATH=/usr/lib/llvm-14/bin:/usr/bin:/bin ASAN_OPTIONS="$ASAN_OPTIONS" UBSAN_OPTIONS="$UBSAN_OPTIONS" \
    "${launcher[@]}" ./fuzz corpus "${mode_flags[@]}" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix=artifacts/ $(extra_flags "$name")) \
    >"$log" 2>&1 || rc=$?

  local executed rate units used_seed elapsed_ms
  elapsed_ms=$(( ($(date +%s%N) - started) / 1000000 ))
  executed=$(stat_value number_of_executed_units "$log")
  rate="?"
  [[ $executed =~ ^[0-9]+$ ]] && rate=$(( executed * 1000 / (elapsed_ms > 0 ? elapsed_ms : 1) ))
  units=$(find "$corpus" -type f | wc -l)
  used_seed=$(sed -n 's/^INFO: Seed: \([0-9]*\).*/\1/p' "$log" | head -n 1)
  local found
  mapfile -t found < <(find "$artifacts" -type f | sort)
  if [ "$rc" -eq 0 ] && [ ${#found[@]} -eq 0 ]; then
    printf '%-22s %12s runs %9s/s %6s corpus  seed %-10s ok\n' \
      "fuzz_$name" "$executed" "$rate" "$units" "${used_seed:-?}" >"$report"
    echo ok >"$work/$name.result"
    rmdir "$artifacts"
    return
  fi

  echo failed >"$work/$name.result"
  {
    printf '%-22s %12s runs %9s/s %6s corpus  seed %-10s FAILED (exit %s)\n' \
      "fuzz_$name" "$executed" "$rate" "$units" "${used_seed:-?}" "$rc"
    cp "$log" "$artifacts/fuzz_$name.log"
    echo "  log: $artifacts/fuzz_$name.log"
    # The report: a property violation ("<name>: ...", printed by the target)
    # or the sanitizer/libFuzzer error with the top of its stack, and a summary.
    local first
    first=$(grep -n -m 1 -E "^$name: |==[0-9]+==ERROR|runtime error:|^ALARM|out-of-memory" "$log" \
      | cut -d: -f1 || true)
    if [ -n "$first" ]; then
      sed -n "${first},$((first + 30))p" "$log" | sed 's/^/  | /'
      { grep -E '^SUMMARY:' "$log" || true; } | sed 's/^/  | /'
    else
      tail -n 30 "$log" | sed 's/^/  | /'
    fi
    local f
    for f in "${found[@]}"; do
      [[ $f == *.log ]] && continue
      echo "  input: $f"
      echo "  reproduce: UBSAN_OPTIONS=$UBSAN_OPTIONS $exe $f"
      hex_dump "$f" | sed 's/^/    /'
    done
  } >"$report"
}

# Starts the targets J at a time and prints each report as its target ends.
printed=()
print_finished() {
  local name
  for name in "${targets[@]}"; do
    [ -f "$work/$name.result" ] || continue
    [[ " ${printed[*]} " == *" $name "* ]] && continue
    cat "$work/$name.report"
    printed+=("$name")
  done
}
for name in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
    wait -n || true
    print_finished
  done
  run_target "$name" &
  pids+=($!)
done
wait || true
pids=()
print_finished

passed=$(cat "$work"/*.result 2>/dev/null | grep -cx ok || true)
failed=$((${#targets[@]} - passed))

# Keep the run directory only when it holds findings.
rmdir "$run_dir" 2>/dev/null && rmdir "$artifacts_root" 2>/dev/null || true
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
