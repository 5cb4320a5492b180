#!/usr/bin/env bash
# Preemption on shared GPUs with devshare serve against a real kube-apiserver
# and kube-scheduler v1.37 (the control plane of control-plane.sh, started
# with scheduler-devshare.yaml and E2E_EXTENDER_URL=https://127.0.0.1:$PREEMPT_PORT):
# one devshare serve (extender), two GPU nodes of one 16000 MiB GPU each,
# PriorityClasses low (100), high (1000) and high-never (1000,
# preemptionPolicy Never), plugin_standin.py for the device plugin's part.
# kube-scheduler itself cannot preempt for a GPU it does not see (the device
# resources are ignoredByScheduler: no victims on a GPU-full node); devshare
# does. Checks:
#   a. gpu-a full of low pods (l1 8000 MiB, l2 and l3 4000 each; l3 with a
#      30 s grace period): a high pod of 8000 MiB evicts l2 and l3 only (l1
#      alone would do too, but it is the more important: kube-scheduler's
#      reprieve order), through the Eviction API: l3 terminates with its own
#      grace period, and the high pod waits for it, then binds on gpu-a;
#      Preempted events on the victims, a Preempting event on the pod; the
#      metrics count the preemption, its 2 victims, its placement;
#   b. a pod of equal priority evicts nobody and waits;
#   c. a pod with preemptionPolicy Never evicts nobody and waits;
#   d. a PodDisruptionBudget allowing no disruption protects l1: a high pod
#      that would need it gone waits, l1 stays; once the budget is deleted,
#      l1 is evicted and the pod binds;
#   e. gpu-b holds m1 (low) and m2 (high), 8000 MiB each; two high pods of
#      8000 MiB created at once: one eviction (m1), one of them binds, the
#      other waits without a second eviction for the same slice.
# kube-scheduler tries a pod an extender refused again at the next pod or
# node event; a deletion reaches kube-scheduler and devshare's watch at the
# same time, so a pod that must bind gets PREEMPT_RETRY_WAIT seconds (default
# 3) of kube-scheduler's own retries, then is annotated (an event on it), and
# the test prints which it took. A pod that must keep waiting is annotated
# and checked once devshare has answered one more unschedulable Filter (it
# is then the only pod waiting).
# Prints "e2e-preemption: N passed, N failed" last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run}"
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"
: "${PREEMPT_PORT:?set PREEMPT_PORT to the port of E2E_EXTENDER_URL}"

passed=0 failed=0
ns=/api/v1/namespaces/default
serve=https://127.0.0.1:$PREEMPT_PORT
retry_wait=${PREEMPT_RETRY_WAIT:-3}
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

priority_class() {  # priority_class NAME VALUE [POLICY]
  printf '{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"%s"},"value":%s,"preemptionPolicy":"%s"}' \
    "$1" "$2" "${3:-PreemptLowerPriority}"
}
check "create node gpu-a (1 GPU, 16000 MiB)" create_node "$(gpu_node_json gpu-a 1 10 16000)"
check "create node gpu-b (1 GPU, 16000 MiB)" create_node "$(gpu_node_json gpu-b 1 10 16000)"
check "PriorityClass low (100)" kapi POST /apis/scheduling.k8s.io/v1/priorityclasses "$(priority_class low 100)"
check "PriorityClass high (1000)" kapi POST /apis/scheduling.k8s.io/v1/priorityclasses "$(priority_class high 1000)"
check "PriorityClass high-never (1000, preemptionPolicy Never)" \
  kapi POST /apis/scheduling.k8s.io/v1/priorityclasses "$(priority_class high-never 1000 Never)"
start_extender devshare "$PREEMPT_PORT" "$SERVE_KUBECONFIG" 50 100 "$E2E_DIR/logs/devshare.log"
pids+=($!)
start_plugin_standin 0
pids+=($!)
check "devshare serve is ready" wait_until 60 curl -sf --cacert "$KUBE_CA" "$serve/readyz"

# --- helpers ----------------------------------------------------------------------------
# gpu_pod NAME NODE CLASS MIB [GRACE]: a pod of PriorityClass CLASS for NODE
# asking one GPU and MIB of its memory, labelled app=NAME's first letter.
gpu_pod() {
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","labels":{"app":"%s"}},"spec":{"schedulerName":"devshare-scheduler","priorityClassName":"%s","nodeSelector":{"kubernetes.io/hostname":"%s"},"terminationGracePeriodSeconds":%s,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":"%s"}}}]}}' \
    "$1" "${1:0:1}" "$3" "$2" "${5:-0}" "$4"
}
create() { kapi POST "$ns/pods" "$(gpu_pod "$@")" >/dev/null; }
nudge() { kapi PATCH "$ns/pods/$1" "{\"metadata\":{\"annotations\":{\"e2e/retry\":\"$SECONDS\"}}}" application/merge-patch+json >/dev/null; }
node_of() { kapi GET "$ns/pods/$1" | jfield spec.nodeName; }
bound() { [ -n "$(node_of "$1")" ]; }
bound_on() { [ "$(node_of "$1")" = "$2" ]; }
pending() { [ -z "$(node_of "$1")" ]; }
exists() { kapi GET "$ns/pods/$1" >/dev/null 2>&1; }
gone() { ! exists "$1"; }
terminating_with_grace() {  # terminating_with_grace POD SECONDS: evicted with its own grace period
  local pod
  pod=$(kapi GET "$ns/pods/$1") || return 1
  [ -n "$(jfield metadata.deletionTimestamp <<<"$pod")" ] &&
    [ "$(jfield metadata.deletionGracePeriodSeconds <<<"$pod")" = "$2" ]
}
has_event() {  # has_event POD REASON TEXT
  kapi GET "$ns/events?fieldSelector=involvedObject.name=$1,reason=$2" | jfield items | grep -q "$3"
}
metric() { curl -sf --cacert "$KUBE_CA" "$serve/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }
wait_bound() { wait_bound_or_nudge preemption "$retry_wait" "$1" "$2"; }  # (PREEMPT_RETRY_WAIT)
# still_pending POD: POD waits a retry later too: nudged, devshare answers
# one more unschedulable Filter (kube-scheduler's retry after its backoff)
# and the pod is still not bound.
unschedulable_filters() {
  local n
  n=$(metric 'devshare_filter_duration_seconds_count{outcome="unschedulable"}')
  echo "${n:-0}"
}
filters_above() { [ "$(unschedulable_filters)" -gt "$1" ]; }
still_pending() {
  local before
  before=$(unschedulable_filters)
  nudge "$1" && wait_until 15 filters_above "$before" && sleep 0.5 && pending "$1"
}

# --- a. the fewest victims, through the Eviction API ---------------------------------------
check "l1 (low, 8000 MiB) created" create l1 gpu-a low 8000
check "l1 is bound" wait_until 30 bound_on l1 gpu-a
check "l2 (low, 4000 MiB) created" create l2 gpu-a low 4000
check "l2 is bound" wait_until 30 bound_on l2 gpu-a
check "l3 (low, 4000 MiB, 30 s grace period) created" create l3 gpu-a low 4000 30
check "l3 is bound: gpu-a is full" wait_until 30 bound_on l3 gpu-a
t=$(now)
check "h1 (high, 8000 MiB) created" create h1 gpu-a high 8000
check "l2 is evicted" wait_until 30 gone l2
check "l3 is evicted with its own grace period (terminating, 30 s)" wait_until 30 terminating_with_grace l3 30
check "l1 stays (reprieved: the more important)" exists l1
check "h1 waits while l3 terminates (the devices are not free yet)" still_pending h1
check "devshare_preemptions_in_progress is 1" metric_is devshare_preemptions_in_progress 1
check "the kubelet's part: l3 is deleted at the end of its grace" \
  kapi DELETE "$ns/pods/l3?gracePeriodSeconds=0"
check "h1 is bound on gpu-a" wait_bound h1 "l3's deletion"
check "h1 is on gpu-a" bound_on h1 gpu-a
echo "preemption: h1 bound $(since "$t") s after its creation" >&2
check "l1 is still bound" bound_on l1 gpu-a
check "l2 has a Preempted event naming h1" has_event l2 Preempted "Preempted by default/h1"
check "h1 has a Preempting event naming l2 and l3" has_event h1 Preempting "evicting default/l2 (priority 100), default/l3 (priority 100) on gpu-a"
check "devshare_preemptions_total is 1" metric_is devshare_preemptions_total 1
check "devshare_preemption_victims_total is 2" metric_is devshare_preemption_victims_total 2
check "devshare_preemptions_placed_total is 1" metric_is devshare_preemptions_placed_total 1
check "devshare_preemptions_in_progress is 0" metric_is devshare_preemptions_in_progress 0

# --- b. equal priority ---------------------------------------------------------------------
check "e1 (low, 8000 MiB: gpu-a holds l1 and h1) created" create e1 gpu-a low 8000
check "e1 waits: equal priority evicts nobody" still_pending e1
check "l1 is still bound" bound_on l1 gpu-a
check "devshare_preemption_victims_total is still 2" metric_is devshare_preemption_victims_total 2
check "delete e1 (the next pod waits alone: its retries are the only ones counted)" \
  kapi DELETE "$ns/pods/e1?gracePeriodSeconds=0"

# --- c. preemptionPolicy Never ---------------------------------------------------------------
check "n1 (high-never, 8000 MiB) created" create n1 gpu-a high-never 8000
check "n1 waits: preemptionPolicy Never" still_pending n1
check "l1 is still bound" bound_on l1 gpu-a
check "delete n1" kapi DELETE "$ns/pods/n1?gracePeriodSeconds=0"

# --- d. a PodDisruptionBudget ------------------------------------------------------------------
pdb='{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"train"},"spec":{"maxUnavailable":0,"selector":{"matchLabels":{"app":"l"}}}}'
check "PodDisruptionBudget train (app=l, maxUnavailable 0) created" \
  kapi POST /apis/policy/v1/namespaces/default/poddisruptionbudgets "$pdb"
# What kube-controller-manager's disruption controller writes (none runs here).
pdb_status() {
  local generation
  generation=$(kapi GET /apis/policy/v1/namespaces/default/poddisruptionbudgets/train | jfield metadata.generation)
  kapi PATCH /apis/policy/v1/namespaces/default/poddisruptionbudgets/train/status \
    "{\"status\":{\"observedGeneration\":$generation,\"disruptionsAllowed\":0,\"currentHealthy\":1,\"desiredHealthy\":1,\"expectedPods\":1}}" \
    application/merge-patch+json
}
check "its status is written as the disruption controller would (disruptionsAllowed 0)" pdb_status
check "h2 (high, 8000 MiB: only l1 is of lower priority on gpu-a) created" create h2 gpu-a high 8000
check "h2 waits: the budget protects l1" still_pending h2
check "l1 is still bound" bound_on l1 gpu-a
check "h2's FailedScheduling names the budget" \
  wait_until 15 has_event h2 FailedScheduling "PodDisruptionBudget forbids it"
check "delete the budget" kapi DELETE /apis/policy/v1/namespaces/default/poddisruptionbudgets/train
sleep 1
nudge h2
check "l1 is evicted" wait_until 30 gone l1
check "h2 is bound on gpu-a" wait_bound h2 "l1's eviction"

# --- e. two high pods at once: one slice, one eviction -------------------------------------------
check "m1 (low, 8000 MiB) created on gpu-b" create m1 gpu-b low 8000
check "m1 is bound" wait_until 30 bound_on m1 gpu-b
check "m2 (high, 8000 MiB) created on gpu-b" create m2 gpu-b high 8000
check "m2 is bound: gpu-b is full" wait_until 30 bound_on m2 gpu-b
victims_before=$(metric devshare_preemption_victims_total)
check "x1 and x2 (high, 8000 MiB each) created at once" \
  bash -c "$(declare -f kapi gpu_pod create); ns=$ns; create x1 gpu-b high 8000 & create x2 gpu-b high 8000; wait"
check "m1 is evicted" wait_until 30 gone m1
one_bound() {
  local n=0
  for p in x1 x2; do bound "$p" && n=$((n + 1)); done
  [ "$n" = 1 ]
}
check "one of x1 and x2 binds" wait_until 30 one_bound
waiting=x1
bound x1 && waiting=x2
check "the other ($waiting) still waits, a retry later" still_pending "$waiting"
check "one of them is bound still" one_bound
check "m2 is still bound" bound_on m2 gpu-b
check "one eviction only (devshare_preemption_victims_total +1)" \
  metric_is devshare_preemption_victims_total "$((victims_before + 1))"

echo "e2e-preemption: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
