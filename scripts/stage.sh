#!/usr/bin/env bash
# Times the stages of a run and prints them as a table.
#
#   scripts/stage.sh run NAME -- COMMAND...   runs COMMAND; appends "NAME SECONDS CPU
#                                             STATUS" to $DEVSHARE_STAGES (when set),
#                                             CPU being the CPU-seconds (user and
#                                             system) of COMMAND and every process it
#                                             waited for; exits with COMMAND's status
#   scripts/stage.sh add NAME SECONDS STATUS  appends a line measured elsewhere
#                                             (a step inside a stage, say one e2e
#                                             suite; its CPU not known: "-")
#   scripts/stage.sh make PARENT TARGET...    `make TARGET` for each TARGET in turn, each
#                                             timed as the step PARENT/TARGET (less a
#                                             "test-" prefix); stops at the first that
#                                             fails. Without $DEVSHARE_STAGES (a run of
#                                             its own, not CI's), prints their table last
#   scripts/stage.sh background NAME -- COMMAND...
#                                             `run` in the background, in a session of
#                                             its own at the lowest CPU priority (it
#                                             takes only what the other stages leave);
#                                             prints its PID; its output goes to
#                                             $DEVSHARE_STAGES.NAME.log
#   scripts/stage.sh wait PID NAME            waits for a background stage; prints
#                                             its log; exits with its status
#   scripts/stage.sh table                    prints $DEVSHARE_STAGES as a table
#
# A stage's NAME may hold a slash (e2e/smoke): such a line is a step of the
# stage before the slash, printed indented under it and left out of the
# total. Background stages are recorded as background/NAME, listed last and
# left out of the total too (they ran beside the others). With
# $DEVSHARE_STAGES_START (seconds since the epoch) the table ends with the
# wall time since then. STATUS is "ok" or "FAILED (exit N)".
set -uo pipefail

usage() {
  echo "usage: scripts/stage.sh run NAME -- COMMAND... | background NAME -- COMMAND... | wait PID NAME |" \
    "add NAME SECONDS STATUS | make PARENT TARGET... | table" >&2
  exit 2
}

record() {  # record NAME SECONDS CPU STATUS
  [ -n "${DEVSHARE_STAGES:-}" ] || return 0
  mkdir -p "$(dirname "$DEVSHARE_STAGES")"
  printf '%s %s %s %s\n' "$1" "$2" "$3" "$4" >>"$DEVSHARE_STAGES"
}

# cpu_of FILE: the CPU-seconds in FILE, the output of `times` (its second
# line, "XmY.YYYs XmY.YYYs": the user and system time of the processes the
# shell has waited for). `times` itself must run in the shell that waited,
# not in a subshell (a pipeline's or a $(...)'s), whose children are its own.
cpu_of() {
  awk 'NR == 2 {
    t = 0
    for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] }
    printf "%d\n", t + 0.5
  }' "$1"
}

case ${1:-} in
  run)
    [ $# -ge 4 ] && [ "$3" = -- ] || usage
    name=$2
    shift 3
    start=$SECONDS
    "$@"
    rc=$?
    if [ "$rc" -eq 0 ]; then status=ok; else status="FAILED (exit $rc)"; fi
    times_file=$(mktemp)
    times >"$times_file"
    record "$name" "$((SECONDS - start))" "$(cpu_of "$times_file")" "$status"
    rm -f "$times_file"
    exit "$rc"
    ;;
  background)
    [ $# -ge 4 ] && [ "$3" = -- ] && [ -n "${DEVSHARE_STAGES:-}" ] || usage
    name=$2
    shift 3
    log=$DEVSHARE_STAGES.$name.log
    # setsid: a session, so an autogroup, of its own, whose niceness is what
    # counts against the other sessions' where the kernel groups by session.
    setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' \
      bash bash "$0" run "background/$name" -- "$@" >"$log" 2>&1 </dev/null &
    echo $!
    ;;
  wait)
    [ $# -eq 3 ] || usage
    # Not a child of the caller (setsid): waited for by its PID, its status
    # read from its line.
    while kill -0 "$2" 2>/dev/null; do sleep 1; done
    status=$(awk -v n="background/$3" '$1 == n {s = $4} END {print s}' "$DEVSHARE_STAGES")
    echo "---- background stage $3 (log: $DEVSHARE_STAGES.$3.log)"
    cat "$DEVSHARE_STAGES.$3.log"
    [ "$status" = ok ]
    ;;
  add)
    [ $# -eq 4 ] && [[ $3 =~ ^[0-9]+$ ]] || usage
    record "$2" "$3" - "$4"
    ;;
  make)
    [ $# -ge 3 ] || usage
    parent=$2
    shift 2
    own=
    if [ -z "${DEVSHARE_STAGES:-}" ]; then
      own=$(mktemp)
      export DEVSHARE_STAGES=$own
      trap 'bash "$0" table; rm -f "$own"' EXIT
    fi
    for target in "$@"; do
      name=$target
      [ -n "$own" ] || name=$parent/${target#test-}
      bash "$0" run "$name" -- "${MAKE:-make}" --no-print-directory "$target" || exit
    done
    ;;
  table)
    [ $# -eq 1 ] || usage
    file=${DEVSHARE_STAGES:-}
    if [ -z "$file" ] || [ ! -s "$file" ]; then
      echo "stages: none recorded"
      exit 0
    fi
    # Steps are recorded before the stage that holds them ends: print each
    # stage, then its steps.
    awk '
      function flush_steps(parent,   i) {
        for (i = 1; i <= nsteps; i++)
          if (step_parent[i] == parent) {
            printf "    %-28s %6d s  %7s  %s\n", step_name[i], step_secs[i], step_cpu[i], step_status[i]
            step_parent[i] = ""
          }
      }
      {
        name = $1; secs = $2; cpu = $3 == "-" ? "" : $3 " s"; status = $4
        for (i = 5; i <= NF; i++) status = status " " $i
        slash = index(name, "/")
        if (slash > 0) {
          nsteps++
          step_parent[nsteps] = substr(name, 1, slash - 1)
          step_name[nsteps] = substr(name, slash + 1)
          step_secs[nsteps] = secs
          step_cpu[nsteps] = cpu
          step_status[nsteps] = status
          if (step_parent[nsteps] == "background" && cpu != "") cpu_background += $3
          next
        }
        printf "  %-30s %6d s  %7s  %s\n", name, secs, cpu, status
        flush_steps(name)
        total += secs
        if (cpu != "") cpu_total += $3
      }
      END {
        for (i = 1; i <= nsteps; i++)
          if (step_parent[i] != "")
            printf "  %-30s %6d s  %7s  %s\n", step_parent[i] "/" step_name[i], step_secs[i], step_cpu[i], step_status[i]
        printf "  %-30s %6d s  (%d min %d s)\n", "total", total, total / 60, total % 60
        printf "  %-30s %6d CPU-s, the background stages %d more\n", "cpu", cpu_total, cpu_background
        if (start > 0) {
          wall = now - start
          printf "  %-30s %6d s  (%d min %d s)\n", "wall", wall, wall / 60, wall % 60
        }
      }' start="${DEVSHARE_STAGES_START:-0}" now="$(date +%s)" "$file" | { echo "stages:"; cat; }
    ;;
  *) usage ;;
esac
