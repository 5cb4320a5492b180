#!/usr/bin/env bash
# Device ResourceQuotas with devshare serve against a real kube-apiserver and
# kube-scheduler (the control plane of control-plane.sh, started with
# scheduler-devshare.yaml and E2E_EXTENDER_URL=https://127.0.0.1:$QUOTA_PORT):
# one devshare serve (extender and webhook, no election), two GPU nodes
# (gpu-a: 2 x 40960 MiB, gpu-b: 1 x 16384 MiB), plugin_standin.py for the
# device plugins' part after Allocate. Namespace `quota` holds the quotas
# devshare enforces (HAMi's keys, limits.nvidia.com/gpumem); `quota-req` one
# on requests.nvidia.com/gpu, which only the API server enforces. Checks:
#   a. under limits.nvidia.com/gpumem 20000, two pods of 10000 MiB bind, the
#      third waits with a FailedScheduling event naming ResourceQuotaNotFit,
#      a fourth is refused at creation by the webhook ("exceeding resource
#      quota"), and deleting a bound pod lets the waiting one bind;
#   b. a second, tighter quota on the same resource: the tightest is in
#      force (a pod the looser one admits waits, the webhook refuses one);
#      deleting it restores the looser one and the pod binds;
#   c. a quota raised while a whole-card pod (no gpumem: the webhook has no
#      memory to check; Filter counts the card's memory) waits: it binds;
#   d. requests.nvidia.com/gpu: the API server's own quota admission refuses
#      the pod beyond it at creation (403 "exceeded quota"); devshare does
#      not track that key;
#   e. /metrics' devshare_quota_limit and devshare_quota_used are the quota in
#      force and the memory the namespace's bound pods hold (from their
#      annotations); devshare top --kubeconfig shows the quota row;
#   f. the API server refuses a limit of "1.5" (422: must be an integer) but
#      takes 1e19, beyond int64: devshare logs it, devshare_quotas_undecodable
#      is 1, and the namespace's other quota still limits pods.
# kube-scheduler tries a pod an extender refused again at the next pod or
# node event (any: it cannot know what the extender looks at), or after its
# 5-minute unschedulable flush. It does not watch ResourceQuotas, so a quota
# deleted or raised (b, c) is no such event. A pod's deletion (a) is one, but
# it reaches kube-scheduler and devshare's watch at the same time, and the
# retry may come to devshare before its watch has the pod gone: refused again,
# the pod then waits for the next event. So after each change the test waits
# QUOTA_RETRY_WAIT seconds (default 2) for a retry of kube-scheduler's own,
# then annotates the waiting pod (an event on it), and prints which it took.
# Prints "e2e-quota: N passed, N failed" last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run}"
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"
: "${QUOTA_PORT:?set QUOTA_PORT to the port of E2E_EXTENDER_URL}"

passed=0 failed=0
ns=/api/v1/namespaces/quota
serve=https://127.0.0.1:$QUOTA_PORT
retry_wait=${QUOTA_RETRY_WAIT:-2}
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

for n in quota quota-req; do
  kapi POST /api/v1/namespaces "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$n\"}}" >/dev/null
done
check "create node gpu-a (2 GPUs, 40960 MiB)" create_node "$(gpu_node_json gpu-a 2 10 40960)"
check "create node gpu-b (1 GPU, 16384 MiB)" create_node "$(gpu_node_json gpu-b 1 10 16384)"
start_extender devshare "$QUOTA_PORT" "$SERVE_KUBECONFIG" 50 100 "$E2E_DIR/logs/devshare.log"
pids+=($!)
start_plugin_standin 0
pids+=($!)
check "devshare serve is ready" wait_until 60 curl -sf --cacert "$KUBE_CA" "$serve/readyz"
webhook=$(cat <<EOF
{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration",
 "metadata":{"name":"devshare"},
 "webhooks":[{"name":"pods.devshare.e2e","clientConfig":{"url":"$serve/webhook","caBundle":"$CA_BUNDLE"},
   "rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}],
   "namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"In","values":["quota","quota-req"]}]},
   "failurePolicy":"Fail","sideEffects":"None","admissionReviewVersions":["v1"],"timeoutSeconds":10}]}
EOF
)
check "register the webhook" kapi POST /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations "$webhook"

# --- helpers ----------------------------------------------------------------------------
# gpu_pod NAME NODE LIMITS_JSON [gated]: a pod for NODE (a nodeSelector, so
# that which card is free is known), held by a scheduling gate with "gated".
gpu_pod() {
  local gates=
  [ "${4:-}" = gated ] && gates='"schedulingGates":[{"name":"e2e.devshare/hold"}],'
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{%s"nodeSelector":{"kubernetes.io/hostname":"%s"},"terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"limits":%s}}]}}' \
    "$1" "$gates" "$2" "$3"
}
mib() { echo "{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"$1\"}"; }
create() { kapi POST "$ns/pods" "$(gpu_pod "$@")" >/dev/null; }
ungate() { kapi PATCH "$ns/pods/$1" '{"spec":{"schedulingGates":null}}' application/merge-patch+json >/dev/null; }
nudge() { kapi PATCH "$ns/pods/$1" "{\"metadata\":{\"annotations\":{\"e2e/retry\":\"$SECONDS\"}}}" application/merge-patch+json >/dev/null; }
node_of() { kapi GET "$ns/pods/$1" | jfield spec.nodeName; }
bound() { [ -n "$(node_of "$1")" ]; }
pending() { [ -z "$(node_of "$1")" ]; }
gone() { ! kapi GET "$ns/pods/$1" >/dev/null 2>&1; }
delete_pod() { kapi DELETE "$ns/pods/$1?gracePeriodSeconds=0" >/dev/null && wait_until 30 gone "$1"; }
quota_json() {  # quota_json NAME HARD_JSON
  printf '{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"%s"},"spec":{"hard":%s}}' "$1" "$2"
}
quota_refused() {  # quota_refused POD: its FailedScheduling event names ResourceQuotaNotFit
  kapi GET "$ns/events?fieldSelector=involvedObject.name=$1,reason=FailedScheduling" |
    jfield items | grep -q ResourceQuotaNotFit
}
refused() {  # refused PATH BODY CODE TEXT: the create is answered CODE with TEXT in its message
  local code
  code=$(curl -sS -o "$E2E_DIR/refused.json" -w '%{http_code}' --max-time 30 --cacert "$KUBE_CA" \
    --cert "$KUBE_CLIENT_CERT" --key "$KUBE_CLIENT_KEY" -H 'Content-Type: application/json' \
    -X POST --data-binary "$2" "$KUBE_SERVER$1")
  echo "quota: answer $code: $(jfield message <"$E2E_DIR/refused.json")" >&2
  [ "$code" = "$3" ] && grep -q "$4" "$E2E_DIR/refused.json"
}
metric() { curl -sf --cacert "$KUBE_CA" "$serve/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }
limit_is() { metric_is "devshare_quota_limit{namespace=\"quota\",resource=\"nvidia.com/gpumem\"}" "$1"; }
used_is() { metric_is "devshare_quota_used{namespace=\"quota\",resource=\"nvidia.com/gpumem\"}" "$1"; }
wait_bound() { wait_bound_or_nudge quota "$retry_wait" "$1" "$2"; }  # (QUOTA_RETRY_WAIT)

# --- a. limits.nvidia.com/gpumem ---------------------------------------------------------
check "the API server takes quota mem (limits.nvidia.com/gpumem: 20000)" \
  kapi POST "$ns/resourcequotas" "$(quota_json mem '{"limits.nvidia.com/gpumem":"20000"}')"
check "devshare has it in force (devshare_quota_limit 20000)" wait_until 15 limit_is 20000
# Gated at creation: the webhook admits each (nothing used yet); released
# one by one, each goes through Filter alone.
for p in a1 a2 a3; do check "$p (10000 MiB) created, held by a scheduling gate" create "$p" gpu-a "$(mib 10000)" gated; done
for p in a1 a2; do
  check "$p released" ungate "$p"
  check "$p is bound within the quota" wait_until 30 bound "$p"
done
check "a3 released" ungate a3
check "a3 (20000 + 10000 > 20000) waits: its FailedScheduling event names ResourceQuotaNotFit" \
  wait_until 30 quota_refused a3
check "a3 is not bound" pending a3
check "a4 (10000 MiB) is refused at creation by the webhook: exceeding resource quota" \
  refused "$ns/pods" "$(gpu_pod a4 gpu-a "$(mib 10000)")" 403 "exceeding resource quota"
check "delete a1" delete_pod a1
check "a3 is bound once a1 is gone" wait_bound a3 "a1's deletion"
check "devshare_quota_used is 20000 (a2 and a3)" wait_until 15 used_is 20000

# --- b. a second, tighter quota on the same resource -------------------------------------
check "delete a3 (a2 is left: 10000 MiB used)" delete_pod a3
check "b1 (8000 MiB) created under 20000, held by a gate" create b1 gpu-a "$(mib 8000)" gated
check "the API server takes quota mem-tight (limits.nvidia.com/gpumem: 15000)" \
  kapi POST "$ns/resourcequotas" "$(quota_json mem-tight '{"limits.nvidia.com/gpumem":"15000"}')"
check "the tightest is in force (devshare_quota_limit 15000)" wait_until 15 limit_is 15000
check "b1 released" ungate b1
check "b1 (10000 + 8000 > 15000) waits with ResourceQuotaNotFit" wait_until 30 quota_refused b1
check "b2 (6000 MiB, within 20000, not 15000) is refused at creation by the webhook" \
  refused "$ns/pods" "$(gpu_pod b2 gpu-a "$(mib 6000)")" 403 "exceeding resource quota"
check "delete mem-tight" kapi DELETE "$ns/resourcequotas/mem-tight"
check "the looser quota is in force again (devshare_quota_limit 20000)" wait_until 15 limit_is 20000
check "b1 is bound under it" wait_bound b1 "mem-tight's deletion"

# --- c. a quota raised while a pod waits ---------------------------------------------------
# c1 asks a whole GPU of gpu-b and no memory: the webhook has none to
# check, Filter counts the card's (16384 MiB).
check "c1 (a whole GPU, no gpumem) is admitted by the webhook" create c1 gpu-b '{"nvidia.com/gpu":"1"}'
check "c1 (18000 + 16384 > 20000) waits with ResourceQuotaNotFit" wait_until 30 quota_refused c1
check "raise mem to 40000" kapi PATCH "$ns/resourcequotas/mem" \
  '{"spec":{"hard":{"limits.nvidia.com/gpumem":"40000"}}}' application/merge-patch+json
check "devshare has the new limit (40000)" wait_until 15 limit_is 40000
check "c1 is bound" wait_bound c1 "the raise"

# --- d. requests.nvidia.com/gpu: the API server's quota admission ---------------------------
req=/api/v1/namespaces/quota-req
check "the API server takes quota gpus (requests.nvidia.com/gpu: 2)" \
  kapi POST "$req/resourcequotas" "$(quota_json gpus '{"requests.nvidia.com/gpu":"2"}')"
# What kube-controller-manager's resourcequota controller writes (none runs
# here): the API server enforces only the limits in status.hard.
check "its status is written as the quota controller would (hard 2, used 0)" \
  kapi PUT "$req/resourcequotas/gpus/status" \
  '{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"gpus"},"spec":{"hard":{"requests.nvidia.com/gpu":"2"}},"status":{"hard":{"requests.nvidia.com/gpu":"2"},"used":{"requests.nvidia.com/gpu":"0"}}}'
for p in d1 d2; do
  check "$p (1 GPU, gated) is created within it" kapi POST "$req/pods" "$(gpu_pod "$p" gpu-a '{"nvidia.com/gpu":"1"}' gated)"
done
check "d3 is refused at creation by the API server: 403 exceeded quota" \
  refused "$req/pods" "$(gpu_pod d3 gpu-a '{"nvidia.com/gpu":"1"}' gated)" 403 "exceeded quota: gpus"
gpus_used() { [ "$(kapi GET "$req/resourcequotas/gpus" | jfield 'status.used["requests.nvidia.com/gpu"]')" = 2 ]; }
check "the API server counts the two pods in the quota's status" gpus_used
check "devshare does not track requests.* keys (no devshare_quota_limit for quota-req)" \
  bash -c '! curl -sf --cacert "$1" "$2/metrics" | grep -q "namespace=\"quota-req\""' _ "$KUBE_CA" "$serve"

# --- e. /metrics and devshare top ----------------------------------------------------------
annotated_used() {  # the memory the bound pods of namespace quota hold, from their annotations
  kapi GET "$ns/pods" | python3 -c '
import json, sys
used = 0
for p in json.load(sys.stdin)["items"]:
    if not p["spec"].get("nodeName"):
        continue
    for c in p["metadata"].get("annotations", {}).get("hami.io/vgpu-devices-allocated", "").split(";"):
        used += sum(int(d.split(",")[2]) for d in c.split(":") if d)
print(used)'
}
want=$(annotated_used)
check "the bound pods hold 34384 MiB (a2 10000, b1 8000, c1 a whole 16384 card)" [ "$want" = 34384 ]
check "devshare_quota_used is $want" wait_until 15 used_is "$want"
check "devshare_quota_limit is 40000" limit_is 40000
check "devshare_quotas counts the quota objects (mem and quota-req's gpus)" metric_is devshare_quotas 2
top_row() {
  "$DEVSHARE" top --kubeconfig "$KUBECONFIG" >"$E2E_DIR/top.txt" &&
    grep -Eq "^quota +nvidia.com/gpumem +$want +40000 *$" "$E2E_DIR/top.txt"
}
check "devshare top on the live cluster shows the quota row (quota nvidia.com/gpumem $want 40000)" top_row
top_json() {
  "$DEVSHARE" top --json --kubeconfig "$KUBECONFIG" |
    jfield quotas | grep -qF "[{\"namespace\": \"quota\", \"resource\": \"nvidia.com/gpumem\", \"used\": $want, \"limit\": 40000}]"
}
check "devshare top --json lists the same quota" top_json

# --- f. a limit devshare cannot read ----------------------------------------------------------
# The API server refuses a device limit that is not a whole number ("1.5":
# 422, must be an integer, as for every extended resource); it takes whole
# numbers beyond int64 (its check is MilliValue() % 1000, which wraps), which
# neither HAMi (Quantity.AsInt64) nor devshare can read: 1e19, kept as 10e18.
check "the API server refuses limits.nvidia.com/gpumem 1.5 (422: must be an integer)" \
  refused "$ns/resourcequotas" "$(quota_json bad '{"limits.nvidia.com/gpumem":"1.5"}')" 422 "must be an integer"
check "the API server takes quota big (limits.nvidia.com/gpumem: 1e19, beyond int64)" \
  kapi POST "$ns/resourcequotas" "$(quota_json big '{"limits.nvidia.com/gpumem":"1e19"}')"
check "devshare_quotas_undecodable is 1" wait_until 15 metric_is devshare_quotas_undecodable 1
check "devshare logs it: quota/big, its limit left out" \
  grep -q 'quota/big.*limits.nvidia.com/gpumem is "10e18"' "$E2E_DIR/logs/devshare.log"
check "the limit in force is still mem's 40000" limit_is 40000
check "f1 (4000 MiB, within 40000) is created" create f1 gpu-a "$(mib 4000)"
check "f1 is bound" wait_until 30 bound f1
check "f2 (4000 MiB more, over 40000) is refused by the webhook: mem still limits" \
  refused "$ns/pods" "$(gpu_pod f2 gpu-a "$(mib 4000)")" 403 "exceeding resource quota"
check "delete big" kapi DELETE "$ns/resourcequotas/big"
check "devshare_quotas_undecodable is 0 again" wait_until 15 metric_is devshare_quotas_undecodable 0

echo "e2e-quota: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
