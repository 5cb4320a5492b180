#!/usr/bin/env bash
# What the drift auditor's LIST costs on a big cluster, on the real control
# plane (control-plane.sh run): NODES GPU nodes and 2 x NODES pods carrying
# HAMi's allocation annotations (as bound GPU pods do), `devshare serve`
# with --audit-period 0, then AUDITS audits through /debug/audit. Prints the
# audit's time, pages and bytes (metadata only), the bytes of the same LIST
# as full objects for comparison, and serve's CPU seconds for the audits.
#
#   audit-cost.sh NODES [AUDITS]
#
# Prints one line "audit-cost: nodes=... pods=... pages=... bytes=...
# full_bytes=... seconds_p50=... seconds_max=... cpu_s_per_audit=...
# differences=..." and exits non-zero if an audit failed or found a
# difference.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"
need_binaries
nodes=$1 audits=${2:-5}
pods=$((nodes * 2))
log() { echo "audit-cost: $*" >&2; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

t0=$SECONDS
gpu_node_json NODE-NAME 8 10 40960 >"$E2E_DIR/audit-node.json"
bulk_nodes "$nodes" "$E2E_DIR/audit-node.json" || { log "creating the nodes failed"; exit 1; }
log "$nodes nodes in $((SECONDS - t0)) s"
t0=$SECONDS
python3 - "$pods" <<'PY' || { log "creating the pods failed"; exit 1; }
import concurrent.futures, http.client, json, os, ssl, sys, urllib.parse
n = int(sys.argv[1])
ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
ctx.load_cert_chain(os.environ["KUBE_CLIENT_CERT"], os.environ["KUBE_CLIENT_KEY"])
url = urllib.parse.urlparse(os.environ["KUBE_SERVER"])
def pod(i):
    node = f"node-{i // 2:05d}"
    devices = f"GPU-{node}-{i % 2},NVIDIA,8000,0:;"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"held-{i:05d}", "annotations": {
                "hami.io/vgpu-node": node, "hami.io/vgpu-time": "1787300439",
                "hami.io/bind-phase": "success", "hami.io/bind-time": "1787300439",
                "hami.io/vgpu-devices-allocated": devices, "hami.io/vgpu-devices-to-allocate": devices}},
            "spec": {"schedulerName": "nobody", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"limits": {"nvidia.com/gpu": "1",
                                                              "nvidia.com/gpumem": "8000"}}}]}}
def create(stripe):
    conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx)
    for i in range(stripe, n, 4):
        conn.request("POST", "/api/v1/namespaces/default/pods", json.dumps(pod(i)),
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        if r.status >= 300:
            return f"held-{i:05d}: HTTP {r.status}: {data[:200]!r}"
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    errors = [e for e in pool.map(create, range(4)) if e]
sys.exit(errors[0] if errors else 0)
PY
log "$pods pods in $((SECONDS - t0)) s"

port=$(free_port)
"$DEVSHARE" serve --kubeconfig "$SERVE_KUBECONFIG" --listen "127.0.0.1:$port" --qps 50 --burst 100 \
  --audit-period 0 >"$E2E_DIR/logs/devshare-audit-cost.log" 2>&1 &
serve=$!
pids+=($serve)
wait_until 300 curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { log "serve never turned ready"; exit 1; }

full=$(python3 - <<'PY'
import http.client, os, ssl, urllib.parse
ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
ctx.load_cert_chain(os.environ["KUBE_CLIENT_CERT"], os.environ["KUBE_CLIENT_KEY"])
url = urllib.parse.urlparse(os.environ["KUBE_SERVER"])
conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx)
import json
total = 0
for path in ("/api/v1/nodes?limit=500",
             "/api/v1/pods?limit=500&fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"):
    token = ""
    while True:
        conn.request("GET", path + (f"&continue={urllib.parse.quote(token)}" if token else ""))
        data = conn.getresponse().read()
        total += len(data)
        token = json.loads(data)["metadata"].get("continue", "")
        if not token:
            break
print(total)
PY
)
ticks0=$(proc_ticks "$serve")
: >"$E2E_DIR/audit-cost.jsonl"
for _ in $(seq "$audits"); do
  curl -sf "http://127.0.0.1:$port/debug/audit" >>"$E2E_DIR/audit-cost.jsonl" || { log "an audit failed"; exit 1; }
  echo >>"$E2E_DIR/audit-cost.jsonl"
done
ticks1=$(proc_ticks "$serve")
python3 - "$E2E_DIR/audit-cost.jsonl" "$nodes" "$pods" "$full" "$((ticks1 - ticks0))" "$(getconf CLK_TCK)" "$audits" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
nodes, pods, full, ticks, hz, audits = sys.argv[2:8]
secs = sorted(r["duration_ms"] / 1000 for r in runs)
last = runs[-1]["list"]
differences = sum(len(r["differences"]) for r in runs)
print(f"audit-cost: nodes={nodes} pods={pods} listed_nodes={last['nodes']} listed_pods={last['pods']} "
      f"pages={last['pages']} bytes={last['bytes']} full_bytes={full} "
      f"seconds_p50={statistics.median(secs):.3f} seconds_max={secs[-1]:.3f} "
      f"cpu_s_per_audit={int(ticks) / int(hz) / int(audits):.3f} differences={differences}")
sys.exit(0 if differences == 0 and int(last["pods"]) == int(pods) else 1)
PY
