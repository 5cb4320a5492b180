#!/usr/bin/env bash
# The end-to-end run of `make e2e`: provides the binaries
# (scripts/k8s-binaries.sh, cached), then starts a control plane for each
# suite and stops it after:
#   smoke.sh           kube-scheduler alone binds pods to a HAMi-registered node
#   dra-upstream.sh    kube-scheduler's own DRA allocation of shared GPUs (HAMi's
#                      DRA driver's slices, pods from ResourceClaimTemplates)
#                      against devshare's `upstream` prediction
#   dra-serve.sh       devshare serve allocating the claims of the DeviceClass it
#                      serves: gate, binpack, no-fit, refusal, a kill between two
#                      claims (both DRA suites with kube-controller-manager's
#                      resourceclaim controller)
#   smoke-extender.sh  kube-scheduler with an extender and the API server with a
#                      mutating webhook, both served by fake_serve.py
#   devshare.sh        devshare serve itself: two replicas, webhook, placements,
#                      reasons, failover (DEVSHARE names the executable)
#   quota.sh           device ResourceQuotas with devshare serve: the quota
#                      reason, the tightest of two, a raise, the API server's
#                      requests.nvidia.com/gpu, metrics and top, a "1.5" limit
#   preemption.sh      preemption on shared GPUs with devshare serve: the
#                      fewest victims through the Eviction API and their
#                      grace period, equal priority, preemptionPolicy Never,
#                      a PodDisruptionBudget, two pods for one slice
#   pairs.sh           two (kube-scheduler, devshare) pairs following the
#                      Lease: the extender's routes on loopback only, the
#                      leading kube-scheduler killed and the other pair binding
#   chart.sh           the Helm chart: lint, template, applied to the API server,
#                      one pod of its Deployment run here as a kubelet would
#   hami-smoke.sh      HAMi's own scheduler (shared tree) against the same kind
#                      of control plane: ready, and its /filter as devshare's
#   run-compare.sh     `make compare` small (50 nodes, 100 pods at once; 10
#                      pods one at a time, then 4 that run out of a gpumem
#                      quota): devshare and HAMi each bind every pod (or
#                      leave it pending for the quota), no device over its
#                      memory, every placement as devshare explain says or a
#                      documented difference, the same outcome per pod; then
#                      in each agreement run's control plane the waiting pod
#                      (one round, 10 s at most) and a high-priority pod on a
#                      full cluster (devshare binds it evicting only explain's
#                      victims; HAMi's stays pending 10 s, evicting nothing)
#   soak.sh            beside the suites above, from the start: the soak and
#                      fault test, bounded: 4 minutes of pod churn
#                      on 100 nodes (seed 1) with a watch cut, 429/500 answers,
#                      the leader killed mid-bind and a node re-created, DRA
#                      pods in the churn beside the annotation pods
#                      (E2E_SOAK_DRA=0 leaves them out)
#   dra-failover.sh    DRA under leader kills: two replicas, the leader SIGKILLed
#                      between one pod's claims, then 60 pods from templates
#                      with one kill at a random moment (seed 1); no device
#                      over its capacity, every pod that fits bound (1,000 pods
#                      and 5 kills: run.sh dra-failover, make dra-failover)
# `run.sh soak` runs the soak suite alone with SOAK_MINUTES, SOAK_NODES,
# SOAK_SEED and SOAK_FAULTS as given (make soak); `run.sh dra-failover` runs
# dra-failover.sh alone with DRA_FAILOVER_PODS, _KILLS, _KILL_MAX and _SEED as
# given (make dra-failover: 1,000 pods, 5 kills).
# Prints the time of each step and "e2e-cluster: N passed, N failed" last.
# If the binaries cannot be provided it says so and reports the run as
# skipped (never as passed).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${DEVSHARE:?set DEVSHARE to the devshare executable (make e2e does)}"
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
out=${E2E_BUILD:-$root/build-e2e}
mkdir -p "$out"

t0=$SECONDS
if ! bash "$root/scripts/k8s-binaries.sh" >"$out/k8s-binaries.env"; then
  echo "e2e-cluster: SKIPPED: the Kubernetes binaries could not be built or installed on this machine (see above);"
  echo "e2e-cluster: nothing was tested against a real control plane"
  echo "e2e-cluster: 0 passed, 0 failed, 1 skipped"
  exit 0
fi
echo "e2e-cluster: binaries ready in $((SECONDS - t0))s"
bash "$root/scripts/stage.sh" add e2e/binaries "$((SECONDS - t0))" ok
export E2E_BIN_ENV=$out/k8s-binaries.env

passed=0 failed=0
step() {  # step NAME START EXIT: the suite's time in the stage table (scripts/stage.sh)
  local status=ok
  [ "$3" -eq 0 ] || status="FAILED (exit $3)"
  bash "$root/scripts/stage.sh" add "e2e/$1" "$((SECONDS - $2))" "$status"
}
tally() {  # tally LOG EXIT: adds LOG's last "e2e-...: N passed, N failed" line to the totals
  local line p f
  line=$(grep -E '^e2e-[a-z-]+: [0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)
  if [ -n "$line" ]; then
    p=$(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$line")
  else
    p=0 f=1
  fi
  [ "$2" -ne 0 ] && [ "$f" -eq 0 ] && f=1
  passed=$((passed + p)) failed=$((failed + f))
}
suite() {  # suite NAME LOG CONTROL-PLANE-ARGS...
  local name=$1 logf=$2 t=$SECONDS rc; shift 2
  E2E_DIR=$out/$name bash "$here/control-plane.sh" run "$@" 2>&1 | tee "$logf"
  rc=${PIPESTATUS[0]}
  tally "$logf" "$rc"
  echo "e2e-cluster: $name took $((SECONDS - t))s (exit $rc)"
  step "$name" "$t" "$rc"
}

# suite_start NAME LOG CONTROL-PLANE-ARGS...: the same in the background, its
# output to LOG alone; suite_finish NAME prints LOG and counts it as suite does.
suite_start() {
  local name=$1 logf=$2; shift 2
  ( t=$SECONDS
    E2E_DIR=$out/$name bash "$here/control-plane.sh" run "$@" >"$logf" 2>&1
    echo "$? $((SECONDS - t)) $logf" >"$out/$name.exit" ) &
  eval "started_$name=$!"
}
suite_finish() {
  local name=$1 pid rc took logf
  pid=started_$name
  wait "${!pid}"
  read -r rc took logf <"$out/$name.exit"
  cat "$logf"
  tally "$logf" "$rc"
  echo "e2e-cluster: $name took ${took}s (exit $rc), beside the suites before it"
  step "$name" "$((SECONDS - took))" "$rc"
}

soak_suite() {  # soak_suite run|start MINUTES NODES: soak.sh in a control plane of its own
  local how=suite soak_port cm=()
  [ "$1" = start ] && how=suite_start
  soak_port=$(free_port)
  [ "${SOAK_DRA:-1}" != 0 ] && cm=(--controller-manager)  # DRA pods in the churn: the claims' controller
  E2E_EXTENDER_URL=https://127.0.0.1:$soak_port DEVSHARE_PROXY_PORT=$soak_port DEVSHARE=$DEVSHARE \
    SOAK_MINUTES=$2 SOAK_NODES=$3 SOAK_JSON=${SOAK_JSON:-$out/soak.json} \
    "$how" soak "$out/soak.log" --scheduler-config "$here/scheduler-devshare.yaml" "${cm[@]}" -- bash "$here/soak.sh"
}
if [ "${1:-}" = dra-failover ]; then  # make dra-failover: DRA_FAILOVER_PODS as given
  DEVSHARE=$DEVSHARE suite dra-failover "$out/dra-failover.log" --controller-manager -- bash "$here/dra-failover.sh"
  echo "e2e-cluster: all done in $((SECONDS - t0))s"
  echo "e2e-cluster: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi
if [ "${1:-}" = soak ]; then
  soak_suite run "${SOAK_MINUTES:-120}" "${SOAK_NODES:-300}"
  echo "e2e-cluster: all done in $((SECONDS - t0))s"
  echo "e2e-cluster: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi

# The bounded soak (about 4.5 minutes: fixed seed, the four faults a short
# soak injects, DRA pods in the churn; E2E_SOAK_DRA=0 leaves them out) runs
# beside the suites below in a control plane of its own: it mostly waits on
# its churn and its faults.
SOAK_SEED=${SOAK_SEED:-1} SOAK_FAULTS=${E2E_SOAK_FAULTS:-} SOAK_DRA=${E2E_SOAK_DRA:-1} \
  soak_suite start "${E2E_SOAK_MINUTES:-4}" "${E2E_SOAK_NODES:-100}"

suite smoke "$out/smoke.log" -- bash "$here/smoke.sh"

DEVSHARE=$DEVSHARE suite dra "$out/dra.log" --controller-manager -- bash "$here/dra-upstream.sh"
DEVSHARE=$DEVSHARE suite dra-serve "$out/dra-serve.log" --controller-manager -- bash "$here/dra-serve.sh"
DEVSHARE=$DEVSHARE DRA_FAILOVER_PODS=60 DRA_FAILOVER_KILLS=1 DRA_FAILOVER_KILL_MAX=3 DRA_FAILOVER_SEED=1 \
  suite dra-failover "$out/dra-failover.log" --controller-manager -- bash "$here/dra-failover.sh"

ext_port=$(free_port)
E2E_EXTENDER_URL=http://127.0.0.1:$ext_port FAKE_EXTENDER_PORT=$ext_port \
  suite extender "$out/extender.log" --scheduler-config "$here/scheduler-extender.yaml" -- bash "$here/smoke-extender.sh"

proxy_port=$(free_port)
E2E_EXTENDER_URL=https://127.0.0.1:$proxy_port DEVSHARE_PROXY_PORT=$proxy_port DEVSHARE=$DEVSHARE \
  suite devshare "$out/devshare.log" --scheduler-config "$here/scheduler-devshare.yaml" -- bash "$here/devshare.sh"

quota_port=$(free_port)
E2E_EXTENDER_URL=https://127.0.0.1:$quota_port QUOTA_PORT=$quota_port DEVSHARE=$DEVSHARE \
  suite quota "$out/quota.log" --scheduler-config "$here/scheduler-devshare.yaml" -- bash "$here/quota.sh"

preempt_port=$(free_port)
E2E_EXTENDER_URL=https://127.0.0.1:$preempt_port PREEMPT_PORT=$preempt_port DEVSHARE=$DEVSHARE \
  suite preemption "$out/preemption.log" --scheduler-config "$here/scheduler-devshare.yaml" -- bash "$here/preemption.sh"

DEVSHARE=$DEVSHARE suite pairs "$out/pairs.log" -- bash "$here/pairs.sh"

DEVSHARE=$DEVSHARE suite chart "$out/chart.log" -- bash "$here/chart.sh"

hami_port=$(free_port)
E2E_EXTENDER_URL=https://127.0.0.1:$hami_port E2E_SCHEDULER_NAME=hami-scheduler HAMI_PORT=$hami_port \
  DEVSHARE=$DEVSHARE suite hami "$out/hami.log" --scheduler-config "$here/scheduler-devshare.yaml" \
  -- bash "$here/hami-smoke.sh"

t=$SECONDS
compare_runs=(throughput/devshare throughput/hami agreement/devshare agreement/hami)
# shellcheck disable=SC1090
. "$E2E_BIN_ENV"
if [ -z "${HAMI_SCHEDULER:-}" ] && [ ! -d "$E2E_HAMI_CHART" ]; then
  echo "e2e-cluster: no shared HAMi source tree: the small compare runs devshare alone"
  compare_runs=(throughput/devshare agreement/devshare)
fi
E2E_BUILD=$out COMPARE_AGREEMENT_PODS=10 COMPARE_WAITING_ROUNDS=1 COMPARE_WAITING_LIMIT=10 \
  COMPARE_PREEMPT_WAIT=10 DEVSHARE=$DEVSHARE bash "$here/run-compare.sh" --check 50 100 50 100 \
  "${compare_runs[@]}" 2>&1 | tee "$out/compare.log"
rc=${PIPESTATUS[0]}
tally "$out/compare.log" "$rc"
echo "e2e-cluster: compare took $((SECONDS - t))s (exit $rc)"
step compare "$t" "$rc"

suite_finish soak

echo "e2e-cluster: all done in $((SECONDS - t0))s"
echo "e2e-cluster: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
