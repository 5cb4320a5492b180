#!/usr/bin/env bash
# HAMi's own scheduler (cmd/scheduler of the shared v2.10.0 tree, built by
# scripts/k8s-binaries.sh) against this control plane, with the flags its Helm
# chart gives it (charts/hami in the shared tree: binpack nodes, spread GPUs,
# its device configuration, HTTPS) as kube-scheduler's extender behind the
# same settings as devshare's (scheduler-devshare.yaml with
# E2E_SCHEDULER_NAME=hami-scheduler and E2E_EXTENDER_URL at HAMI_PORT): the
# start of running HAMi beside devshare serve on the same components. Checks:
#   - it becomes healthy and ready;
#   - its /filter keeps, for a one-GPU pod, the node `devshare explain` picks,
#     and writes HAMi's annotations on the pod through the API server;
#   - kube-scheduler binds pods through it (filter and bind, node lock
#     released by plugin_standin.py), each where `devshare explain` predicts.
# Prints "e2e-hami: N passed, N failed" last; without HAMi's source tree it
# says so and reports nothing run; with the tree but no binary, it fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
need_binaries
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"
: "${HAMI_PORT:?set HAMI_PORT to the port of E2E_EXTENDER_URL}"
if [ -z "${HAMI_SCHEDULER:-}" ] && [ ! -d "$E2E_HAMI_CHART" ]; then
  echo "e2e-hami: SKIPPED: no shared HAMi source tree, so no HAMi scheduler"
  echo "e2e-hami: 0 passed, 0 failed"
  exit 0
elif [ -z "${HAMI_SCHEDULER:-}" ]; then
  echo "FAILED: HAMi's scheduler did not build from the shared tree (scripts/k8s-binaries.sh's output says why)"
  echo "e2e-hami: 0 passed, 1 failed"
  exit 1
fi

passed=0 failed=0
ns=/api/v1/namespaces/default
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT
hami=https://127.0.0.1:$HAMI_PORT

check "create node gpu-a (2 GPUs, 40960 MiB)" create_node "$(gpu_node_json gpu-a 2 10 40960)"
check "create node gpu-b (1 GPU, 16384 MiB)" create_node "$(gpu_node_json gpu-b 1 10 16384)"

# The device configuration HAMi's chart gives it (its default values).
hami_device_config >"$E2E_DIR/hami-device-config.yaml"
check "HAMi's chart renders its device configuration" grep -q '^nvidia:' "$E2E_DIR/hami-device-config.yaml"

# As the chart runs it with its webhook's certificate (here the one
# control-plane.sh makes for 127.0.0.1), under an identity of its own
# (hami-scheduler), so that the audit log attributes its requests.
start_extender hami "$HAMI_PORT" "$HAMI_KUBECONFIG" 5 10 "$E2E_DIR/logs/hami-scheduler.log" \
  --force-overwrite-default-scheduler=true --leader-elect=false
pids+=($!)
check "HAMi's scheduler answers /healthz" wait_until 60 curl -sf --cacert "$KUBE_CA" "$hami/healthz"
check "HAMi's scheduler is ready (its node cache synced)" \
  wait_until 60 curl -sf --cacert "$KUBE_CA" "$hami/readyz"

# --- its /filter, called as kube-scheduler calls it ---------------------------------------
gpu_pod() {  # gpu_pod NAME MIB SCHEDULER: a one-GPU pod
  pod_json "$1" "{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"$2\"}" |
    python3 -c 'import json, sys; p = json.load(sys.stdin); p["spec"]["schedulerName"] = sys.argv[1]; print(json.dumps(p))' "$3"
}
check "create pod hami-filter (1 GPU, 4000 MiB), left to no scheduler" \
  kapi POST "$ns/pods" "$(gpu_pod hami-filter 4000 nobody)"
created=$(kapi GET "$ns/pods/hami-filter")
expected=$(predict "$created")
check "devshare explain names a node for it ($expected)" test -n "$expected"
args=$(python3 -c 'import json, sys; print(json.dumps({"Pod": json.loads(sys.argv[1]), "Nodes": None, "NodeNames": ["gpu-a", "gpu-b"]}))' "$created")
filter_keeps() {
  curl -sf --cacert "$KUBE_CA" -X POST -H 'Content-Type: application/json' --data-binary "$args" \
    "$hami/filter" >"$E2E_DIR/hami-filter.json" &&
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if r.get("NodeNames") == [sys.argv[2]] else 1)' \
      "$E2E_DIR/hami-filter.json" "$1"
}
check "HAMi's /filter keeps $expected, as devshare decides" wait_until 60 filter_keeps "$expected"
annotated() {  # annotated POD NODE: HAMi's reservation names NODE and a device of it
  kapi GET "$ns/pods/$1" | python3 -c '
import json, sys
a = json.load(sys.stdin)["metadata"].get("annotations", {})
node, devices = a.get("hami.io/vgpu-node"), a.get("hami.io/vgpu-devices-allocated", "")
sys.exit(0 if node == sys.argv[1] and "GPU-" + sys.argv[1] + "-" in devices else 1)' "$2"
}
check "HAMi wrote hami.io/vgpu-node and a device of $expected on the pod" annotated hami-filter "$expected"
check "delete pod hami-filter (its reservation with it)" kapi DELETE "$ns/pods/hami-filter"

# --- kube-scheduler with HAMi as its extender ------------------------------------------------
# HAMI_ALLOCATE_DELAY: seconds the stand-in device plugin takes to complete
# Allocate (default 0), for trying slower plugins by hand.
start_plugin_standin "${HAMI_ALLOCATE_DELAY:-0}"
pids+=($!)
bound_to() { [ "$(kapi GET "$ns/pods/$1" | jfield spec.nodeName)" = "$2" ]; }
for spec in "hami-1 20000" "hami-2 20000" "hami-3 12000"; do
  set -- $spec
  body=$(gpu_pod "$1" "$2" hami-scheduler)
  want=$(predict "$body")
  check "$1 (1 GPU x $2 MiB): created, devshare explain predicts ${want:-nothing}" kapi POST "$ns/pods" "$body"
  check "$1 bound by kube-scheduler through HAMi, to $want" wait_until 60 bound_to "$1" "$want"
  check "$1 carries HAMi's allocation on a device of $want" annotated "$1" "$want"
done

# The API server's own count of HAMi's requests (its audit log, written in
# batches: waited for).
binds_audited() {
  python3 "$here/audit_count.py" "$AUDIT_LOG" hami-scheduler >"$E2E_DIR/hami-requests.txt" &&
    awk '$2 == "create" && $3 == "pods/binding" { n = $4 } END { exit !(n >= 3) }' "$E2E_DIR/hami-requests.txt"
}
check "the audit log attributes HAMi's three bindings to its own identity" wait_until 30 binds_audited
echo "HAMi's requests, as the API server counted them (user verb resource count):"
sed 's/^/  /' "$E2E_DIR/hami-requests.txt"

echo "e2e-hami: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
