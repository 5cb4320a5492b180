#!/usr/bin/env bash
# `devshare serve` against a real kube-apiserver under load: every /filter
# that places the pod PATCHes it on the API server (etcd behind it; serve runs
# with API_LOAD_SERVE_ARGS, by default `--pod-writes hami`, HAMi's Filter-time
# PATCH: empty for a build before that flag), so the
# requests per second serve answers depend on how its API client reaches the
# server. Several serve binaries can be compared side by side in one run on
# one cluster (say one built before a change to the API client and one
# after): each in turn is started on the same NODES Node objects and the same
# pending pod, and driven by wrk with CONNECTIONS keep-alive connections for
# SECONDS.
#
#   tests/e2e/control-plane.sh run -- tests/e2e/api-load.sh NODES SECONDS CONNECTIONS LABEL=DEVSHARE...
#   make load-apiserver   (NODES=500 SECONDS=20 CONNECTIONS=50, the build's devshare)
#
# Per binary: requests per second and p50/p99 latency (wrk), the pod
# PATCHes serve made by status, the API connections it opened and reused
# (from its /metrics, where it has them), and the CPU time (user+sys) serve,
# kube-apiserver and etcd used, as a share of the wall time (100 % = one
# core). Fails on a wrk error, a Filter answered without a placement, or a
# PATCH not answered 200. Figures are printed, never asserted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run}"
[ $# -ge 4 ] || { echo "usage: $0 NODES SECONDS CONNECTIONS LABEL=DEVSHARE..." >&2; exit 2; }
nodes=$1 seconds=$2 connections=$3
shift 3
work=$(mktemp -d)
serve_pid=
cleanup() { [ -z "$serve_pid" ] || kill "$serve_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
log() { echo "api-load: $*"; }
fail() { echo "api-load: FAILED: $*"; exit 1; }
need_wrk

# --- the cluster: NODES GPU nodes (8 GPUs of 40 GiB, 10 slots) and one pod no scheduler takes
t0=$SECONDS
gpu_node_json NODE-NAME 8 10 40960 >"$work/node.json"
bulk_nodes "$nodes" "$work/node.json" || fail "creating the nodes"
pod=$(python3 -c '
import json
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "load", "namespace": "default"},
  "spec": {"schedulerName": "api-load-nobody", "terminationGracePeriodSeconds": 0,
           "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": {
               "nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "25", "nvidia.com/gpucores": "25"}}}]}}))')
uid=$(kapi POST /api/v1/namespaces/default/pods "$pod" | jfield metadata.uid)
[ -n "$uid" ] || fail "creating the pod"
log "$nodes nodes and pod default/load created in $((SECONDS - t0)) s"
python3 - "$nodes" "$uid" >"$work/body.json" <<'PY'
import json, sys
n, uid = int(sys.argv[1]), sys.argv[2]
pod = {"metadata": {"name": "load", "namespace": "default", "uid": uid},
       "spec": {"containers": [{"name": "c", "resources": {"limits": {
           "nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "25", "nvidia.com/gpucores": "25"}}}]}}
print(json.dumps({"Pod": pod, "Nodes": None, "NodeNames": [f"node-{i:05d}" for i in range(n)]}))
PY

# --- what each process used -------------------------------------------------------------------
hz=$(getconf CLK_TCK)
api_pid=$(cat "$E2E_DIR/run/kube-apiserver.pid") etcd_pid=$(cat "$E2E_DIR/run/etcd.pid")
# serve's counters: pod PATCHes by status, Filters by outcome, connections.
counters() {
  curl -sf "http://127.0.0.1:$port/metrics" | awk '
    /^devshare_api_requests_total\{verb="patch-pod"/ { split($1, a, "\""); print "patch_" a[4], $2 }
    /^devshare_filter_duration_seconds_count/ { split($1, a, "\""); print "filter_" a[2], $2 }
    /^devshare_api_connections_opened_total/ { print "opened", $2 }
    /^devshare_api_connection_reuses_total/ { print "reused", $2 }
    /^devshare_api_tls_resumptions_total/ { print "resumed", $2 }'
}
delta() { awk -v k="$1" 'NR == FNR { if ($1 == k) b = $2; next } $1 == k { a = $2 } END { print a - b }' \
  "$work/counters0" "$work/counters1"; }

errors=0
summary="api-load: summary nodes=$nodes seconds=$seconds connections=$connections"
for spec in "$@"; do
  label=${spec%%=*} devshare=${spec#*=}
  port=$(free_port)
  # shellcheck disable=SC2086 # the flags split as words
  "$devshare" serve --kubeconfig "$SERVE_KUBECONFIG" --listen "127.0.0.1:$port" --qps 100000 \
    --burst 100000 ${API_LOAD_SERVE_ARGS---pod-writes hami} >"$E2E_DIR/logs/api-load-$label.log" 2>&1 &
  serve_pid=$!
  wait_until 120 curl -sf "http://127.0.0.1:$port/readyz" >/dev/null ||
    { tail -5 "$E2E_DIR/logs/api-load-$label.log"; fail "$label: devshare serve never became ready"; }
  curl -sf -X POST --data-binary @"$work/body.json" "http://127.0.0.1:$port/filter" >"$work/first.json"
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if len(r["NodeNames"]) == 1 and not r["Error"] else 1)' \
    "$work/first.json" || fail "$label: the first Filter placed nothing: $(head -c 300 "$work/first.json")"
  counters >"$work/counters0"
  s0=$(proc_ticks "$serve_pid") a0=$(proc_ticks "$api_pid") e0=$(proc_ticks "$etcd_pid") w0=$(date +%s.%N)
  WRK_BODY=$work/body.json wrk -t2 -c"$connections" -d"${seconds}s" --timeout 10s \
    -s "$here/wrk-filter.lua" "http://127.0.0.1:$port/filter" >"$work/wrk.txt" ||
    fail "$label: wrk exited with status $?"
  s1=$(proc_ticks "$serve_pid") a1=$(proc_ticks "$api_pid") e1=$(proc_ticks "$etcd_pid") w1=$(date +%s.%N)
  counters >"$work/counters1"
  read -r _ requests us e_connect e_read e_write e_status e_timeout p50 _ p99 _ \
    < <(grep '^wrk-summary ' "$work/wrk.txt")
  wrk_errors=$((e_connect + e_read + e_write + e_status + e_timeout))
  rps=$(awk -v n="$requests" -v us="$us" 'BEGIN{printf "%.1f", n / (us / 1e6)}')
  cpu() { awk -v t="$1" -v hz="$hz" -v a="$w0" -v b="$w1" 'BEGIN{printf "%.0f", 100 * t / hz / (b - a)}'; }
  placed=$(delta filter_placed) patched=$(delta patch_200)
  not_placed=$(awk '/^filter_/ && $1 != "filter_placed" { print $1 }' "$work/counters1" |
    while read -r k; do delta "$k"; done | awk '{ n += $1 } END { print n + 0 }')
  not_200=$(awk '/^patch_/ && $1 != "patch_200" { print $1 }' "$work/counters1" |
    while read -r k; do delta "$k"; done | awk '{ n += $1 } END { print n + 0 }')
  log "$label: $requests Filters in ${seconds} s: $rps/s, p50 $p50 ms, p99 $p99 ms; $placed placed," \
      "$patched pod PATCHes answered 200"
  if grep -q '^opened' "$work/counters1"; then
    log "$label: API connections opened $(delta opened), requests on a kept connection $(delta reused)," \
        "TLS sessions resumed $(delta resumed)"
  else
    log "$label: API connections: not counted by this build"
  fi
  log "$label: CPU (100 % = one core): devshare serve $(cpu $((s1 - s0))) %," \
      "kube-apiserver $(cpu $((a1 - a0))) %, etcd $(cpu $((e1 - e0))) %"
  summary+=" ${label}_rps=$rps ${label}_p50_ms=$p50 ${label}_p99_ms=$p99"
  if [ "$wrk_errors" != 0 ] || [ "$not_placed" != 0 ] || [ "$not_200" != 0 ] || [ "$requests" = 0 ]; then
    log "$label: ERRORS: wrk $wrk_errors, Filters not placed $not_placed, PATCHes not 200 $not_200"
    errors=$((errors + 1))
  fi
  kill "$serve_pid"
  wait "$serve_pid" 2>/dev/null || true
  serve_pid=
done
echo "$summary"
[ "$errors" = 0 ] || fail "$errors binaries met errors"
log "0 errors"
