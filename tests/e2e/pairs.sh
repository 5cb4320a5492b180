#!/usr/bin/env bash
# Who may call what, on the real control plane (started by run.sh with
# kube-scheduler alone, which schedules none of these pods): two pairs of
# kube-scheduler and `devshare serve` as the chart deploys them — each
# kube-scheduler electing on the Lease kube-system/kube-scheduler and
# calling the extender of its own pair on loopback; each devshare serving
# the webhook, health and metrics on 0.0.0.0 (what a Service reaches) and
# the extender's routes on a loopback listener only, following its
# kube-scheduler's Lease (--leader follow) — each pair under a host name of
# its own (pair-a, pair-b: a UTS namespace, since kube-scheduler takes its
# Lease identity from the host name). Checks:
#   - the pair whose kube-scheduler leads is ready, the other is not;
#   - /filter, /bind, /prioritize and /debug/audit are refused (403) on the
#     listener the network reaches, and served on loopback;
#   - a pod is bound by the leading pair;
#   - the leading kube-scheduler is killed: the other takes the Lease, its
#     devshare turns ready (the orphaned devshare turns not ready), and a
#     new pod is bound by the new pair, no device over its memory.
# Prints "e2e-pairs: N passed, N failed" last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run}"
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"
need_binaries
passed=0 failed=0
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done' EXIT
ns=/api/v1/namespaces/default

# pair R: starts pair R's devshare and kube-scheduler; sets devshare_R,
# scheduler_R (PIDs), service_R and extender_R (ports).
pair() {
  local r=$1 service extender
  service=$(free_port) extender=$(free_port)
  as_host "pair-$r" "$DEVSHARE" serve --kubeconfig "$SERVE_KUBECONFIG" \
    --listen "0.0.0.0:$service" --extender-listen "127.0.0.1:$extender" \
    --scheduler-name devshare-scheduler --leader follow --hostname "pair-$r" \
    --qps 50 --burst 100 >"$E2E_DIR/logs/devshare-$r.log" 2>&1 &
  printf -v "devshare_$r" %s $!
  pids+=($!)
  sed -e 's/leaderElect: false/leaderElect: true/' -e "s|@SCHEDULER_KUBECONFIG@|$SCHEDULER_KUBECONFIG|" \
    -e "s|@SCHEDULER_NAME@|devshare-scheduler|" -e "s|@EXTENDER_URL@|http://127.0.0.1:$extender|" \
    -e '/enableHTTPS: true/d' -e '/tlsConfig:/d' "$here/scheduler-devshare.yaml" >"$E2E_DIR/scheduler-$r.yaml"
  start_scheduler_as "pair-$r" "$E2E_DIR/scheduler-$r.yaml"
  printf -v "scheduler_$r" %s $!
  pids+=($!)
  printf -v "service_$r" %s "$service"
  printf -v "extender_$r" %s "$extender"
}
holder() { kapi GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler | jfield spec.holderIdentity; }
led_by() { [[ "$(holder)" == "$1"_* ]]; }
ready() { curl -sf "http://127.0.0.1:$1/readyz" >/dev/null; }
not_ready() { ! ready "$1"; }
status_of() {  # status_of METHOD URL [BODY]: the HTTP status
  curl -s -o /dev/null -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data-binary "$3"} "$2"
}
gpu_pod() {  # gpu_pod NAME MEM_MIB
  pod_json "$1" "{\"cpu\":\"100m\",\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"$2\"}" |
    sed 's/"spec":{/"spec":{"schedulerName":"devshare-scheduler",/'
}
bound() { [ -n "$(kapi GET "$ns/pods/$1" | jfield spec.nodeName)" ]; }

for spec in "gpu-a 2 40960" "gpu-b 2 40960"; do
  set -- $spec
  check "create node $1 ($2 GPUs, $3 MiB)" create_node "$(gpu_node_json "$1" "$2" 10 "$3")"
done
start_plugin_standin 0
pids+=($!)

pair a
check "pair-a's kube-scheduler takes the Lease" wait_until 90 led_by pair-a
check "pair-a's devshare follows it and is ready" wait_until 60 ready "$extender_a"
pair b
check "pair-b's devshare answers, not ready: its kube-scheduler does not lead" \
  wait_until 60 bash -c "curl -s -o /dev/null http://127.0.0.1:$extender_b/healthz && ! curl -sf http://127.0.0.1:$extender_b/readyz"
review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"r1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"default","object":{"metadata":{"name":"w","namespace":"default"},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}}'
check "pair-b's devshare is ready for admission all the same (the webhook's Service routes to it)" \
  wait_until 30 curl -sf "http://127.0.0.1:$service_b/readyz/admission"
check "pair-b's devshare answers the webhook while pair-a leads" \
  bash -c "curl -sf -H 'Content-Type: application/json' --data-binary '$review' http://127.0.0.1:$service_b/webhook | grep -q '\"allowed\":true'"

args='{"Pod":{"metadata":{"name":"probe","namespace":"default","uid":"uid-probe"},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":"1000"}}}]}},"Nodes":null,"NodeNames":["gpu-a","gpu-b"]}'
bind='{"PodName":"probe","PodNamespace":"default","PodUID":"uid-probe","Node":"gpu-a"}'
for route in filter prioritize; do
  check "/$route on the listener the network reaches (0.0.0.0) is refused" \
    test "$(status_of POST "http://127.0.0.1:$service_a/$route" "$args")" = 403
done
check "/bind on the listener the network reaches is refused" \
  test "$(status_of POST "http://127.0.0.1:$service_a/bind" "$bind")" = 403
check "/debug/audit on the listener the network reaches is refused" \
  test "$(status_of GET "http://127.0.0.1:$service_a/debug/audit")" = 403
check "/readyz and /metrics are served there (the kubelet, Prometheus)" \
  bash -c "curl -sf http://127.0.0.1:$service_a/readyz >/dev/null && curl -sf http://127.0.0.1:$service_a/metrics | grep -q '^devshare_leader 1'"
check "/filter on the loopback extender listener is served" \
  test "$(status_of POST "http://127.0.0.1:$extender_a/filter" "$args")" = 200
check "/debug/audit on the loopback extender listener is served" \
  test "$(status_of GET "http://127.0.0.1:$extender_a/debug/audit")" = 200

check "create pod p1" kapi POST "$ns/pods" "$(gpu_pod p1 20000)"
check "the leading pair binds p1" wait_until 60 bound p1

kill -9 "$scheduler_a"
check "pair-a's kube-scheduler killed: pair-b's takes the Lease" wait_until 90 led_by pair-b
check "pair-b's devshare follows it and turns ready" wait_until 60 ready "$extender_b"
check "pair-a's devshare, its kube-scheduler gone, is not ready" wait_until 60 not_ready "$extender_a"
check "create pod p2" kapi POST "$ns/pods" "$(gpu_pod p2 20000)"
check "the new pair binds p2" wait_until 60 bound p2
check "no device over its memory or slots" test "$(over_allocated)" = 0
placed_by_b() { grep -q 'p2' "$E2E_DIR/logs/kube-scheduler-pair-b.log"; }
check "p2 went through pair-b's kube-scheduler" placed_by_b

echo "e2e-pairs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
