#!/usr/bin/env bash
# Shows that the control plane works on its own, without devshare: a Node with
# HAMi's register annotation and nvidia.com/gpu allocatable is created and made
# Ready, and kube-scheduler binds pods to it, or leaves one Pending that asks for
# more GPUs than the node has. Run inside the cluster's environment:
#   tests/e2e/control-plane.sh run -- tests/e2e/smoke.sh
# Prints "e2e-smoke: N passed, N failed" last; exits non-zero on any failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run, or source its env file}"

passed=0 failed=0

node=smoke-gpu-1
ns=/api/v1/namespaces/default

node_has() {  # node_has FIELD VALUE
  [ "$(kapi GET /api/v1/nodes/$node | jfield "$1")" = "$2" ]
}
bound_to() {  # bound_to POD NODE
  [ "$(kapi GET "$ns/pods/$1" | jfield spec.nodeName)" = "$2" ]
}
unschedulable() {  # unschedulable POD: PodScheduled=False with reason Unschedulable
  local pod
  pod=$(kapi GET "$ns/pods/$1") || return 1
  [ -z "$(jfield spec.nodeName <<<"$pod")" ] &&
    python3 -c '
import json, sys
c = [c for c in json.load(sys.stdin)["status"].get("conditions", []) if c["type"] == "PodScheduled"]
sys.exit(not (c and c[0]["status"] == "False" and c[0].get("reason") == "Unschedulable"))' <<<"$pod"
}

t0=$SECONDS
check "namespace default exists" wait_until 30 kapi GET /api/v1/namespaces/default
check "create a GPU node (2 GPUs x 4 slots) and make it Ready" \
  create_node "$(gpu_node_json $node 2 4 40960)"
check "node allocatable nvidia.com/gpu is 8" node_has 'status.allocatable["nvidia.com/gpu"]' 8
check "node condition Ready=True" node_has 'status.conditions[0].status' True
check "node has no taints left" node_has spec.taints ""
check "node carries the HAMi register annotation" \
  node_has 'metadata.annotations["hami.io/node-nvidia-register"]' \
  "$(gpu_node_json $node 2 4 40960 | jfield 'metadata.annotations["hami.io/node-nvidia-register"]')"

t_bind=$SECONDS
check "create a plain pod" kapi POST "$ns/pods" "$(pod_json smoke-plain)"
check "kube-scheduler binds the plain pod to $node" wait_until 60 bound_to smoke-plain $node
echo "bound after $((SECONDS - t_bind))s"
check "create a pod asking for 2 nvidia.com/gpu" \
  kapi POST "$ns/pods" "$(pod_json smoke-gpu '{"cpu":"100m","nvidia.com/gpu":"2"}')"
check "kube-scheduler binds the GPU pod to $node" wait_until 60 bound_to smoke-gpu $node
check "create a pod asking for 9 nvidia.com/gpu (the node has 8)" \
  kapi POST "$ns/pods" "$(pod_json smoke-too-big '{"cpu":"100m","nvidia.com/gpu":"9"}')"
check "kube-scheduler leaves it Pending as Unschedulable" wait_until 60 unschedulable smoke-too-big

for p in smoke-plain smoke-gpu smoke-too-big; do
  kapi DELETE "$ns/pods/$p?gracePeriodSeconds=0" >/dev/null || true
done
kapi DELETE /api/v1/nodes/$node >/dev/null || true

echo "smoke test took $((SECONDS - t0))s"
echo "e2e-smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
