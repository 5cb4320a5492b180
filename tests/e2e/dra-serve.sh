#!/usr/bin/env bash
# devshare serve allocating DRA claims on the real control plane, with
# kube-controller-manager's resourceclaim controller making the claims of
# pods from ResourceClaimTemplates:
#   - two nodes whose GPUs are published as HAMi's DRA driver publishes them,
#     devshare serving the DeviceClass hami-gpu by binpack, its webhook on
#     the pods with DRA claims;
#   - pods from a template asking 30 % of a GPU are gated at creation,
#     allocated by devshare (binpack: three on one GPU, the fourth beside
#     them), ungated, and bound by kube-scheduler where the allocation says;
#   - a pod naming one of their claims is reserved in it by kube-scheduler
#     and bound on its node (the allocation carries its allocationTimestamp);
#   - a pod no node has room for stays gated with an Event and a metric, and
#     is placed when room frees;
#   - a pod whose claim's selector devshare cannot evaluate is refused at
#     creation with the reason;
#   - devshare killed between two claims of one pod (an admission policy
#     holds the second claim's write back) and restarted: the first claim's
#     allocation is kept, the second goes to its node, the pod is bound;
#   - a pod of higher priority whose claim fits nowhere evicts the one pod
#     whose claim frees a GPU, and is allocated it once the claim is
#     released; a pod whose preemptionPolicy is Never waits;
#   - no device is ever allocated beyond its capacity.
# devshare runs as a user of its own with only the chart's ClusterRole (the
# Helm chart with devshare.dra.deviceClasses), so the RBAC the chart ships is
# what these writes need. Run inside the cluster's environment:
#   tests/e2e/control-plane.sh run --controller-manager -- tests/e2e/dra-serve.sh
# Needs DEVSHARE and E2E_BIN_ENV (helm). Prints "e2e-dra-serve: N passed, N failed" last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
need_binaries
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"
root=$(cd "$here/../.." && pwd)

passed=0 failed=0
ns=/api/v1/namespaces/default
resource=/apis/resource.k8s.io/v1
gate=devshare.dev/dra-allocation
port=$(free_port)
serve_pid=
work=$(mktemp -d)
trap '[ -n "$serve_pid" ] && kill_serve; rm -rf "$work"' EXIT

start_serve() {
  "$DEVSHARE" serve --kubeconfig "$E2E_DIR/devshare-dra.kubeconfig" --listen "127.0.0.1:$port" \
    --tls-cert "$SERVE_CERT" --tls-key "$SERVE_KEY" --dra-device-class hami-gpu \
    --dra-policy binpack --qps 50 --burst 100 >>"$E2E_DIR/logs/devshare-dra.log" 2>&1 &
  serve_pid=$!
  disown "$serve_pid"  # killed on purpose: no job message
}
kill_serve() {
  kill -9 "$serve_pid" 2>/dev/null
  while kill -0 "$serve_pid" 2>/dev/null; do sleep 0.1; done
  serve_pid=
}
serve_ready() {
  curl -sfk "https://127.0.0.1:$port/readyz" >/dev/null &&
    curl -sfk "https://127.0.0.1:$port/readyz/admission" >/dev/null
}
metric() {  # metric SERIES: its value on /metrics
  curl -sfk "https://127.0.0.1:$port/metrics" | awk -v s="$1" '$1 == s {print $2}'
}
metric_is() { [ "$(metric "$1")" = "$2" ]; }

has_event() {  # has_event POD REASON
  kapi GET "$ns/events?fieldSelector=involvedObject.name=$1" | grep -Eq "\"reason\": *\"$2\""
}

t0=$SECONDS
for node in dra-a dra-b; do
  check "create node $node" create_node "$(dra_node_json "$node")"
  check "publish $node's 2 GPUs as HAMi's DRA driver does" \
    kapi POST "$resource/resourceslices" "$(hami_dra_slice_json "$node" 40Gi 40Gi)"
done
check "create the DeviceClass hami-gpu" kapi POST "$resource/deviceclasses" "$(hami_dra_class_json hami-gpu)"
check "create the template share-30 (30 cores, 10Gi)" kapi POST "$resource/namespaces/default/resourceclaimtemplates" \
  "$(dra_template_json share-30 '{"cores":"30","memory":"10Gi"}')"
check "create the template share-80 (80 cores, 30Gi)" kapi POST "$resource/namespaces/default/resourceclaimtemplates" \
  "$(dra_template_json share-80 '{"cores":"80","memory":"30Gi"}')"
check "create the template odd (a selector with a map literal)" \
  kapi POST "$resource/namespaces/default/resourceclaimtemplates" \
  "$(dra_template_json odd '{"cores":"10","memory":"1Gi"}' "size({'a': 1}) == 1")"

check "devshare's own identity, with only the chart's ClusterRole for DRA" dra_identity devshare-dra
start_serve
check "devshare serve (DeviceClass hami-gpu, binpack) is ready" wait_until 60 serve_ready
check "register the webhook (pods with DRA claims, failurePolicy Fail)" \
  kapi POST /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations \
  "$(dra_webhook_json "https://127.0.0.1:$port")"
gates_dry_run() {
  kapi POST "$ns/pods?dryRun=All" "$(pod_json_from probe gpu=share-30)" | jfield spec.schedulingGates |
    grep -q "\"$gate\""
}
check "the webhook gates a pod of hami-gpu" wait_until 30 gates_dry_run

# Binpack: three 30 % shares on one GPU, the fourth beside them on the same
# node. Which pod gets which GPU depends on when its claim is made.
for p in s1 s2 s3 s4; do
  check "create pod $p from share-30: gated at creation" create_gated "$p" gpu=share-30
done
for p in s1 s2 s3 s4; do
  check "devshare allocates $p's claim, reserves it, removes the gate; kube-scheduler binds it there" \
    wait_until 60 is_placed "$p" gpu
done
for p in s1 s2 s3 s4; do placed "$p" gpu; done | sort | uniq -c | awk '{print $1, $2, $3}' >"$work/binpack"
cat "$work/binpack"
check "binpack: three on dra-a's hami-gpu-0, one on its hami-gpu-1" \
  diff <(printf '3 dra-a dra-a/hami-gpu-0\n1 dra-a dra-a/hami-gpu-1\n') "$work/binpack"
check "metrics: 4 gates removed" metric_is devshare_dra_gates_removed_total 4
check "metrics: 10 cores left on dra-a's hami-gpu-0" metric_is \
  "devshare_dra_device_capacity_free{driver=\"$HAMI_DRA_DRIVER\",pool=\"dra-a\",device=\"hami-gpu-0\",capacity=\"cores\"}" 10

# A pod naming s1's claim (resourceClaimName): the claim is allocated, so
# kube-scheduler adds the pod to its reservedFor itself. v1.37 sets the
# allocation's allocationTimestamp when it writes a reservation onto an
# allocation without one, and the API server refuses that as a change of the
# allocation: devshare's allocations carry the time they were written.
s1_claim=$(claim_of s1 gpu)
shares_claim() {  # s5 bound on the node of s1's claim, reserved in it beside s1
  local pod
  pod=$(kapi GET "$ns/pods/s5") || return 1
  kapi GET "$DRA_API/namespaces/default/resourceclaims/$s1_claim" | python3 -c '
import json, sys
pod = json.loads(sys.argv[1]); status = json.load(sys.stdin).get("status", {})
terms = status.get("allocation", {}).get("nodeSelector", {}).get("nodeSelectorTerms", [])
node = terms[0]["matchFields"][0]["values"][0] if terms else ""
reserved = [r["uid"] for r in status.get("reservedFor", [])]
sys.exit(0 if pod["metadata"]["uid"] in reserved and len(reserved) == 2
         and node and pod["spec"].get("nodeName") == node else 1)' "$pod"
}
stamped() {  # the claim's allocation carries its allocationTimestamp
  kapi GET "$DRA_API/namespaces/default/resourceclaims/$s1_claim" |
    jfield status.allocation.allocationTimestamp | grep -q 'T.*Z'
}
check "s1's claim allocated with the time it was written" stamped
check "create pod s5 naming s1's claim" kapi POST "$ns/pods" "$(pod_json_from s5 "gpu@$s1_claim")"
check "kube-scheduler reserves s1's claim for s5 too and binds s5 on its node" wait_until 60 shares_claim
reserved_once() {  # s1's claim reserved for s1 alone again
  kapi GET "$DRA_API/namespaces/default/resourceclaims/$s1_claim" | python3 -c '
import json, sys
sys.exit(0 if len(json.load(sys.stdin).get("status", {}).get("reservedFor", [])) == 1 else 1)'
}
check "delete s5" kapi DELETE "$ns/pods/s5?gracePeriodSeconds=0"
check "the resourceclaim controller takes s5 out of s1's claim" wait_until 60 reserved_once

# 80 % shares: dra-b's two GPUs take two; the third waits, gated, until one
# of those pods goes and the resourceclaim controller frees its claim.
for p in big1 big2; do
  check "create pod $p from share-80" create_gated "$p" gpu=share-80
  check "$p is placed on dra-b" wait_until 60 placed_on dra-b "$p" gpu
done
check "create pod big3 from share-80" create_gated big3 gpu=share-80
check "big3 stays gated with an Event DevshareNoFit" wait_until 30 has_event big3 DevshareNoFit
check "big3 is still gated" still_gated big3
check "metrics: one pod held for no fit" metric_is 'devshare_dra_pods_held{reason="no-fit"}' 1
check "delete big1" kapi DELETE "$ns/pods/big1?gracePeriodSeconds=0"
check "big3 is placed once big1's claim is freed" wait_until 60 is_placed big3 gpu

# A selector devshare cannot evaluate: refused at creation, with the reason.
refused() {  # the whole answer, which kapi would cut
  local code
  code=$(curl -sS -o "$work/odd.err" -w '%{http_code}' --cacert "$KUBE_CA" --cert "$KUBE_CLIENT_CERT" \
    --key "$KUBE_CLIENT_KEY" -H 'Content-Type: application/json' \
    --data-binary "$(pod_json_from odd1 gpu=odd)" "$KUBE_SERVER$ns/pods") &&
    [ "$code" = 403 ] &&
    grep -q "devshare cannot allocate this pod's DRA claims: claim gpu (ResourceClaimTemplate default/odd): request gpu: selector" "$work/odd.err" &&
    grep -q "rewrite the selector" "$work/odd.err"
}
check "a pod whose claim has a selector devshare cannot evaluate is refused with the reason" refused
jfield message <"$work/odd.err"

# devshare killed between the two claims of one pod: an admission policy
# refuses the status write of the claim named "held", so only "first" is
# allocated when devshare is killed.
check "an admission policy holds back the allocation of claims named held" hold_claim_policy
sleep 2  # the policy reaches the API server's admission chain
check "create pod m1 with claims first and held" create_gated m1 first=share-30 held=share-30
check "devshare allocates m1's first claim; the held one is refused" wait_until 60 first_allocated_only m1
sleep 2  # a retry or two of the held claim
check "m1 is still gated" still_gated m1
first=$(claim_of m1 first)
kapi GET "$resource/namespaces/default/resourceclaims/$first" | jfield status.allocation >"$work/first-before"
kill_serve
echo "devshare killed with m1's claim first allocated: $(cat "$work/first-before")"
check "remove the policy's binding" kapi DELETE /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/hold-claim
sleep 2
start_serve
check "devshare serve restarted and ready" wait_until 60 serve_ready
check "m1's held claim is allocated and m1 bound" wait_until 60 is_placed m1 held
check "m1's first claim kept its allocation" \
  diff "$work/first-before" <(kapi GET "$resource/namespaces/default/resourceclaims/$first" | jfield status.allocation)
m1_node=$(placed m1 held | cut -d' ' -f1)
check "m1's first claim is on m1's node ($m1_node) too" placed_on "$m1_node" m1 first

# Preemption. The cluster is full for an 80 % share (dra-a's GPUs hold the
# 30 % shares, dra-b's big2 and big3). A pod of a PriorityClass whose
# preemptionPolicy is Never waits; one that may preempt evicts the fewest
# lower-priority pods on the best node — big3 on dra-b (the pods are never
# started, so the later by name goes; dra-a would need two or three) — and
# is allocated what it freed once the resourceclaim controller has released
# big3's claim, with the evictions and nominations the chart's ClusterRole grants.
priority_class_json() {  # priority_class_json NAME VALUE PREEMPTION_POLICY
  printf '{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"%s"},"value":%s,"preemptionPolicy":"%s"}' "$@"
}
check "create the PriorityClass e2e-urgent (1000)" kapi POST /apis/scheduling.k8s.io/v1/priorityclasses \
  "$(priority_class_json e2e-urgent 1000 PreemptLowerPriority)"
check "create the PriorityClass e2e-patient (1000, preemptionPolicy Never)" \
  kapi POST /apis/scheduling.k8s.io/v1/priorityclasses "$(priority_class_json e2e-patient 1000 Never)"
sleep 2  # the classes reach the API server's admission
create_gated_in() {  # create_gated_in CLASS NAME CLAIM=TEMPLATE...: of that PriorityClass, gated
  local class=$1; shift
  kapi POST "$ns/pods" "$(pod_json_from "$@" | sed "s/\"spec\":{/\"spec\":{\"priorityClassName\":\"$class\",/")" |
    jfield spec.schedulingGates | grep -q "\"$gate\""
}
event_says() {  # event_says POD TEXT: an Event on the pod whose message has TEXT
  kapi GET "$ns/events?fieldSelector=involvedObject.name=$1" | grep -q "$2"
}
pod_gone() {
  local err
  err=$(kapi GET "$ns/pods/$1" 2>&1 >/dev/null)
  [[ $err == *"HTTP 404"* ]]
}
pods_left() {  # the pods left, by name
  kapi GET "$ns/pods" | python3 -c '
import json, sys
print(" ".join(sorted(p["metadata"]["name"] for p in json.load(sys.stdin)["items"])))'
}
check "create pod patient from share-80 (preemptionPolicy Never)" create_gated_in e2e-patient patient gpu=share-80
check "patient waits, saying it may not preempt" \
  wait_until 30 event_says patient "no preemption: its preemptionPolicy is Never"
before=$(pods_left)
check "create pod urgent from share-80 (priority 1000)" create_gated_in e2e-urgent urgent gpu=share-80
check "urgent preempts: its Event names big3 on dra-b" \
  wait_until 30 event_says urgent "evicting default/big3 (priority 0) on dra-b"
check "big3 is evicted" wait_until 30 pod_gone big3
check "urgent is allocated what big3 freed and bound on dra-b" wait_until 60 placed_on dra-b urgent gpu
placed urgent gpu
check "only big3 was evicted" \
  diff <({ tr ' ' '\n' <<<"$before" | grep -vx big3; echo urgent; } | LC_ALL=C sort) \
  <(pods_left | tr ' ' '\n' | LC_ALL=C sort)
check "patient is still gated" still_gated patient
check "no device is allocated beyond its capacity" within_capacity
# Extended resources backed by DRA: a pod asking
# deviceclass.resource.kubernetes.io/hami-gpu: 2 is given a claim of hami-gpu
# by the webhook, which devshare makes (owned by the pod) and allocates;
# kube-scheduler binds it. Room first: patient, urgent and big2 go, and with
# them dra-b's claims.
check "delete patient" kapi DELETE "$ns/pods/patient?gracePeriodSeconds=0"
check "delete urgent" kapi DELETE "$ns/pods/urgent?gracePeriodSeconds=0"
check "delete big2" kapi DELETE "$ns/pods/big2?gracePeriodSeconds=0"
extended_pod='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"extended"},"spec":{"terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m"},"limits":{"deviceclass.resource.kubernetes.io/hami-gpu":"2"}}}]}}'
converted() {  # the extended resource left the container; a claim of devshare's took its place
  kapi POST "$ns/pods" "$extended_pod" | python3 -c '
import json, sys
pod = json.load(sys.stdin); spec = pod["spec"]; c = spec["containers"][0]
claims = spec.get("resourceClaims", [])
sys.exit(not ("deviceclass.resource.kubernetes.io/hami-gpu" not in c["resources"].get("limits", {})
              and c["resources"].get("claims") == [{"name": "devshare-ext-0"}]
              and len(claims) == 1 and claims[0]["resourceClaimName"].startswith("devshare-ext-")
              and {"name": "'"$gate"'"} in spec.get("schedulingGates", [])
              and "devshare.dev/extended-resource-claims" in pod["metadata"]["annotations"]))'
}
check "a pod asking 2 of hami-gpu's extended resource gets a claim of hami-gpu in its place, gated" converted
extended_placed() {  # the claim made, owned by the pod, two devices of dra-b, the pod bound there
  local pod claim
  pod=$(kapi GET "$ns/pods/extended") || return 1
  claim=$(jfield "spec.resourceClaims[0].resourceClaimName" <<<"$pod")
  kapi GET "$resource/namespaces/default/resourceclaims/$claim" | python3 -c '
import json, sys
pod = json.loads(sys.argv[1]); claim = json.load(sys.stdin)
owners = claim["metadata"].get("ownerReferences", [])
status = claim.get("status", {})
results = status.get("allocation", {}).get("devices", {}).get("results", [])
sys.exit(not (owners and owners[0]["uid"] == pod["metadata"]["uid"] and owners[0].get("controller")
              and len(results) == 2 and {r["pool"] for r in results} == {"dra-b"}
              and pod["metadata"]["uid"] in [r["uid"] for r in status.get("reservedFor", [])]
              and pod["spec"].get("nodeName") == "dra-b"))' "$pod"
}
check "devshare makes the claim (owned by the pod), allocates dra-b's two GPUs, the pod is bound there" \
  wait_until 90 extended_placed
check "metrics: one claim made for an extended resource" metric_is devshare_dra_claims_created_total 1
check "no device is allocated beyond its capacity, the extended pod's included" within_capacity

audit_agrees() {  # a drift audit lists the claims and finds the cache as the API server has it
  curl -sfk "https://127.0.0.1:$port/debug/audit" >"$work/audit.json" &&
    python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
sys.exit(not (a["list"]["claims"] >= 9 and not a["differences"]))' "$work/audit.json"
}
check "a drift audit lists the claims and finds no difference" wait_until 30 audit_agrees

echo "dra-serve test took $((SECONDS - t0))s"
echo "e2e-dra-serve: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
