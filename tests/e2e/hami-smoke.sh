#!/usr/bin/env bash
# HAMi's own scheduler (cmd/scheduler of the shared v2.10.0 tree, built by
# scripts/k8s-binaries.sh) against this control plane, with the flags its Helm
# chart gives it (charts/hami in the shared tree: binpack nodes, spread GPUs,
# its scheduler name) and its own client identity: the start of running HAMi
# beside devshare serve on the same components. Checks:
#   - it becomes healthy and ready;
#   - its /filter keeps the GPU node for a one-GPU pod and writes HAMi's
#     annotations on the pod through the API server (hami.io/vgpu-node and
#     the allocation on a device of that node);
#   - `devshare explain` on the same objects picks the same node.
# Prints "e2e-hami: N passed, N failed" last; without HAMi's source tree it
# says so and reports nothing run; with the tree but no binary, it fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run}"
: "${E2E_BIN_ENV:?set E2E_BIN_ENV to the output of scripts/k8s-binaries.sh}"
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"
# shellcheck disable=SC1090
. "$E2E_BIN_ENV"
HAMI_CHART=$here/../../../shared/hami/v2.10.0/charts/hami
if [ -z "${HAMI_SCHEDULER:-}" ] && [ ! -d "$HAMI_CHART" ]; then
  echo "e2e-hami: SKIPPED: no shared HAMi source tree, so no HAMi scheduler"
  echo "e2e-hami: 0 passed, 0 failed"
  exit 0
elif [ -z "${HAMI_SCHEDULER:-}" ]; then
  echo "FAILED: HAMi's scheduler did not build from the shared tree (scripts/k8s-binaries.sh's output says why)"
  echo "e2e-hami: 0 passed, 1 failed"
  exit 1
fi

passed=0 failed=0
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http_port=$(port) metrics_port=$(port)
hami_pid=
trap '[ -z "$hami_pid" ] || kill "$hami_pid" 2>/dev/null' EXIT

check "create node gpu-a (2 GPUs, 40960 MiB)" create_node "$(gpu_node_json gpu-a 2 10 40960)"
check "create node gpu-b (1 GPU, 16384 MiB)" create_node "$(gpu_node_json gpu-b 1 10 16384)"

# The device configuration HAMi's chart gives it (its default values).
"$HELM" template hami "$HAMI_CHART" --show-only templates/scheduler/device-configmap.yaml |
  python3 -c '
import sys
lines, out, inside = sys.stdin.read().splitlines(), [], False
for line in lines:
    if inside:
        if line.strip() and not line.startswith("    "):
            break
        out.append(line[4:])
    elif line.strip() == "device-config.yaml: |-":
        inside = True
print("\n".join(out))' >"$E2E_DIR/hami-device-config.yaml"
check "HAMi's chart renders its device configuration" grep -q '^nvidia:' "$E2E_DIR/hami-device-config.yaml"

# As the chart runs it (its HTTP port without the webhook's TLS); the
# kubeconfig of the serve-client identity, which the RBAC of control-plane.sh
# lets read and write what an extender does.
KUBECONFIG=$SERVE_KUBECONFIG "$HAMI_SCHEDULER" --http_bind "127.0.0.1:$http_port" \
  --device-config-file "$E2E_DIR/hami-device-config.yaml" \
  --metrics-bind-address "127.0.0.1:$metrics_port" --scheduler-name hami-scheduler \
  --node-scheduler-policy binpack --gpu-scheduler-policy spread \
  --force-overwrite-default-scheduler=true --leader-elect=false \
  >"$E2E_DIR/logs/hami-scheduler.log" 2>&1 &
hami_pid=$!
check "HAMi's scheduler answers /healthz" wait_until 60 curl -sf "http://127.0.0.1:$http_port/healthz"
check "HAMi's scheduler is ready (its node cache synced)" \
  wait_until 60 curl -sf "http://127.0.0.1:$http_port/readyz"

pod=$(pod_json hami-smoke '{"nvidia.com/gpu":"1","nvidia.com/gpumem":"4000"}' |
  python3 -c 'import json, sys; p = json.load(sys.stdin); p["spec"]["schedulerName"] = "nobody"; print(json.dumps(p))')
check "create pod hami-smoke (1 GPU, 4000 MiB), left to no scheduler" \
  kapi POST /api/v1/namespaces/default/pods "$pod"
created=$(kapi GET /api/v1/namespaces/default/pods/hami-smoke)

# kube-scheduler's call: the pod as the API server has it, both nodes.
args=$(python3 -c 'import json, sys; print(json.dumps({"Pod": json.loads(sys.argv[1]), "Nodes": None, "NodeNames": ["gpu-a", "gpu-b"]}))' "$created")
# HAMi registers a node's devices in its periodic pass: retried until it does.
filter_keeps() {
  curl -sf -X POST -H 'Content-Type: application/json' --data-binary "$args" \
    "http://127.0.0.1:$http_port/filter" >"$E2E_DIR/hami-filter.json" &&
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if r.get("NodeNames") == [sys.argv[2]] else 1)' \
      "$E2E_DIR/hami-filter.json" "$1"
}
# What devshare decides on the same objects.
kapi GET /api/v1/nodes | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
for item in items:
    item.update(apiVersion="v1", kind="Node")
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))' >"$E2E_DIR/hami-cluster.json"
printf '%s' "$created" >"$E2E_DIR/hami-pod.json"
expected=$("$DEVSHARE" explain --json --node-policy binpack --gpu-policy spread \
  --cluster "$E2E_DIR/hami-cluster.json" --pod "$E2E_DIR/hami-pod.json" | jfield chosen)
check "devshare explain names a node for the pod ($expected)" test -n "$expected"
check "HAMi's /filter keeps $expected, as devshare decides" wait_until 60 filter_keeps "$expected"
annotated() {
  kapi GET /api/v1/namespaces/default/pods/hami-smoke | python3 -c '
import json, sys
a = json.load(sys.stdin)["metadata"].get("annotations", {})
node, devices = a.get("hami.io/vgpu-node"), a.get("hami.io/vgpu-devices-allocated", "")
sys.exit(0 if node == sys.argv[1] and "GPU-" + sys.argv[1] + "-" in devices else 1)' "$1"
}
check "HAMi wrote hami.io/vgpu-node and a device of $expected on the pod" annotated "$expected"

echo "e2e-hami: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
