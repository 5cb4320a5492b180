#!/usr/bin/env bash
# One throughput run of one scheduler behind kube-scheduler, in the control
# plane of control-plane.sh (started with scheduler-devshare.yaml,
# E2E_SCHEDULER_NAME=<the scheduler's name> and E2E_EXTENDER_URL at PORT):
# NODES GPU nodes (8 GPUs of 40 GiB, 10 slots), then PODS one-GPU pods of
# 4,000–20,000 MiB created as fast as the API server takes them, bound through
# the extender with the plugin stand-in completing Allocate. Prints one line
#   compare: result scheduler=... key=value ...
# with pods bound, pods/s (first creation to last binding), p50/p99 creation
# to binding, the extender's CPU seconds and peak RSS, and its API requests
# by verb as the API server's audit log counts them. make compare runs it
# per scheduler in fresh control planes and prints them side by side.
#
#   compare.sh devshare|hami PORT NODES PODS QPS BURST [TIMEOUT_S]
#
# DEVSHARE_SERVE_ARGS: more flags for devshare serve (say --lock-retry fixed
# or --bind lock-free), printed with its result.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run}"
: "${E2E_BIN_ENV:?set E2E_BIN_ENV to the output of scripts/k8s-binaries.sh}"
# shellcheck disable=SC1090
. "$E2E_BIN_ENV"
scheduler=$1 port=$2 nodes=$3 pods=$4 qps=$5 burst=$6 limit=${7:-600}
log() { echo "compare: $scheduler: $*"; }
fail() { echo "compare: $scheduler: FAILED: $*"; exit 1; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

# --- the extender ---------------------------------------------------------------------
case $scheduler in
  devshare)
    : "${DEVSHARE:?set DEVSHARE to the devshare executable}"
    user=devshare-serve
    "$DEVSHARE" serve --kubeconfig "$SERVE_KUBECONFIG" --listen "127.0.0.1:$port" \
      --tls-cert "$SERVE_CERT" --tls-key "$SERVE_KEY" --scheduler-name devshare-scheduler \
      --node-policy binpack --gpu-policy spread --qps "$qps" --burst "$burst" \
      ${DEVSHARE_SERVE_ARGS:-} >"$E2E_DIR/logs/compare-devshare.log" 2>&1 &
    ;;
  hami)
    [ -n "${HAMI_SCHEDULER:-}" ] || fail "HAMi's scheduler was not built"
    user=hami-scheduler
    hami_device_config >"$E2E_DIR/hami-device-config.yaml" || fail "HAMi's chart did not render"
    KUBECONFIG=$HAMI_KUBECONFIG "$HAMI_SCHEDULER" --http_bind "127.0.0.1:$port" \
      --cert_file "$SERVE_CERT" --key_file "$SERVE_KEY" \
      --device-config-file "$E2E_DIR/hami-device-config.yaml" \
      --metrics-bind-address "127.0.0.1:$(free_port)" \
      --scheduler-name hami-scheduler --node-scheduler-policy binpack --gpu-scheduler-policy spread \
      --leader-elect=false --kube-qps "$qps" --kube-burst "$burst" \
      >"$E2E_DIR/logs/compare-hami.log" 2>&1 &
    ;;
  *) fail "unknown scheduler (want devshare or hami)" ;;
esac
extender_pid=$!
pids+=("$extender_pid")

# --- nodes, then the pods all at once --------------------------------------------------------
t0=$SECONDS
gpu_node_json NODE-NAME 8 10 40960 >"$E2E_DIR/compare-node.json"
bulk_nodes "$nodes" "$E2E_DIR/compare-node.json" || fail "creating the nodes"
log "$nodes nodes created in $((SECONDS - t0)) s"
wait_until 120 curl -sf --cacert "$KUBE_CA" "https://127.0.0.1:$port/readyz" >/dev/null ||
  fail "the extender never became ready"
python3 "$here/plugin_standin.py" "$KUBE_SERVER" "$KUBE_CA" "$KUBE_CLIENT_CERT" "$KUBE_CLIENT_KEY" \
  >"$E2E_DIR/logs/plugin-standin.log" 2>&1 &
pids+=($!)
cpu0=$(proc_ticks "$extender_pid")
bulk_pods "$pods" "$scheduler-scheduler" || fail "creating the pods"
log "$pods pods created"
all_bound() {
  kapi GET "/api/v1/namespaces/default/pods" | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
sys.exit(0 if sum(1 for p in items if p["spec"].get("nodeName")) >= int(sys.argv[1]) else 1)' "$pods"
}
wait_until "$limit" all_bound || log "not every pod bound after $limit s"
cpu_s=$(awk -v t="$(( $(proc_ticks "$extender_pid") - cpu0 ))" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f", t / hz}')
rss=$(awk '$1=="VmHWM:"{printf "%.0f", $2/1024}' "/proc/$extender_pid/status")
sleep 2  # the audit log is written in batches
python3 - "$AUDIT_LOG" "$user" "$scheduler" "$nodes" "$pods" "$cpu_s" "$rss" "$qps" "$burst" <<'PY'
import collections, datetime, json, os, sys
log, user, scheduler, nodes, pods, cpu, rss, qps, burst = sys.argv[1:]
created, bound, verbs = {}, {}, collections.Counter()
stamp = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
for line in open(log, encoding="utf-8"):
    e = json.loads(line)
    if e.get("stage") != "ResponseComplete" or (e.get("responseStatus") or {}).get("code", 0) >= 300:
        continue
    ref = e.get("objectRef") or {}
    if ref.get("resource") == "pods" and ref.get("namespace") == "default" and ref.get("name", "").startswith("load-"):
        if e["verb"] == "create" and not ref.get("subresource"):
            created[ref["name"]] = stamp(e["requestReceivedTimestamp"])
        elif e["verb"] == "create" and ref.get("subresource") == "binding":
            bound[ref["name"]] = stamp(e["stageTimestamp"])
    if e.get("user", {}).get("username") == user:
        r = ref.get("resource", "?") + ("/" + ref["subresource"] if ref.get("subresource") else "")
        verbs[f"{e['verb']}-{r}"] += 1
lat = sorted(bound[n] - created[n] for n in bound if n in created)
pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")
span = (max(bound.values()) - min(created.values())) if bound and created else float("nan")
rate = len(bound) / span if bound and span > 0 else 0.0
requests = " ".join(f"{k}={v}" for k, v in sorted(verbs.items()))
extra = os.environ.get("DEVSHARE_SERVE_ARGS", "") if scheduler == "devshare" else ""
print(f"compare: result scheduler={scheduler} args={extra.replace(' ', ',') or '-'} nodes={nodes} pods={pods} qps={qps} burst={burst} "
      f"bound={len(bound)} pods_per_s={rate:.2f} p50_s={pct(0.5):.1f} p99_s={pct(0.99):.1f} "
      f"extender_cpu_s={cpu} extender_rss_mib={rss} api_requests={sum(verbs.values())} {requests}")
PY
