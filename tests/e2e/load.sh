#!/usr/bin/env bash
# Load test of `devshare serve`: POST /filter with a 5,000-node cache under
# concurrent requests (wrk), against the stand-in API server of
# fake_apiserver.py. Prints requests per second, the latency percentiles
# and the count of errors (non-2xx responses and socket errors), and fails
# if there is any error.
#
#   tests/e2e/load.sh DEVSHARE [NODES] [SECONDS] [CONNECTIONS]
set -euo pipefail
devshare=$1 nodes=${2:-5000} seconds=${3:-20} connections=${4:-16}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
api_port=18080 port=18443
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

if ! command -v wrk >/dev/null; then
  echo "load: installing wrk (Debian)"
  sudo_cmd=(); [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get install -y -qq wrk >/dev/null
fi

python3 "$here/fake_apiserver.py" --port $api_port --nodes "$nodes" &
pids+=($!)
cat >"$work/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
current-context: load
contexts: [{name: load, context: {cluster: load, user: load}}]
clusters: [{name: load, cluster: {server: "http://127.0.0.1:$api_port"}}]
users: [{name: load, user: {}}]
KUBECONFIG
"$devshare" serve --kubeconfig "$work/kubeconfig" --listen 127.0.0.1:$port --qps 100000 --burst 100000 \
  2>"$work/serve.log" &
pids+=($!)
for _ in $(seq 1 150); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { echo "load: devshare never became ready"; cat "$work/serve.log"; exit 1; }

# One pod asking a quarter of one GPU, every node a candidate.
python3 - "$nodes" >"$work/body.json" <<'PY'
import json, sys
n = int(sys.argv[1])
pod = {"metadata": {"name": "load", "namespace": "default", "uid": "load-uid"},
       "spec": {"containers": [{"name": "c", "resources": {"limits": {
           "nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "25", "nvidia.com/gpucores": "25"}}}]}}
print(json.dumps({"Pod": pod, "Nodes": None, "NodeNames": [f"node-{i:05d}" for i in range(n)]}))
PY
curl -sf -X POST --data-binary @"$work/body.json" "http://127.0.0.1:$port/filter" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert len(r["NodeNames"]) == 1 and not r["Error"], r
print("load: one Filter keeps", r["NodeNames"], "and lists", len(r["FailedNodes"]), "others in FailedNodes")'


cat >"$work/filter.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$work/body.json", "r")
wrk.body = f:read("*a")
f:close()
LUA
echo "load: wrk -t2 -c$connections -d${seconds}s POST /filter ($nodes nodes)"
wrk -t2 -c"$connections" -d"${seconds}s" --timeout 10s --latency -s "$work/filter.lua" "http://127.0.0.1:$port/filter" | tee "$work/wrk.txt"
if grep -qE 'Non-2xx|Socket errors' "$work/wrk.txt"; then
  echo "load: errors"
  exit 1
fi
echo "load: 0 errors"
