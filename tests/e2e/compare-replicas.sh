#!/usr/bin/env bash
# Seed 000 (multi-replica) for one scheduler, in the control plane of
# control-plane.sh (started by run-compare.sh with kube-scheduler alone,
# which schedules none of these pods): two replicas, each a (kube-scheduler,
# extender) pair as the charts deploy them — kube-scheduler's leader election
# on (the Lease kube-system/kube-scheduler), the extender following that
# Lease (HAMi: --leader-elect with the Lease's name; devshare: --leader
# follow) — each pair under a host name of its own (replica-a, replica-b,
# through a UTS namespace: both schedulers take the holder from the host
# name) and its extender under a client certificate of its own, so that the
# audit log attributes every request to a replica.
#
#   compare-replicas.sh devshare|hami NODES PODS QPS BURST [TIMEOUT_S]
#
# replica-a starts first and leads; then replica-b, and for COMPARE_OBSERVE_S
# (60) seconds more nothing is scheduled: node writes per minute by each
# replica from replica-a's start until then (seed 000: both replicas
# handshaking; a scheduler's first registration pass included). Then a Filter call sent straight to
# the follower's extender (HTTP status, "+error" when the reply's Error
# field is set, and after how long; "none" when curl gave up after 15 s), PODS / 2 pods bound by the leader, the leader pair killed
# (SIGKILL), PODS / 2 more pods created at once: the time from the kill to
# the first of them bound, and every pod bound with no device over its
# memory or slots. Prints one line "compare: result scenario=replicas ...".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
need_binaries
scheduler=$1 nodes=$2 pods=$3 qps=$4 burst=$5 limit=${6:-600}
log() { echo "compare: replicas/$scheduler: $*"; }
fail() { echo "compare: replicas/$scheduler: FAILED: $*"; exit 1; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

# identity NAME: a client certificate of its own (system:masters) and a
# kubeconfig for it, $E2E_DIR/NAME.kubeconfig.
identity() {
  local d=$E2E_DIR/pki
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/$1.key" 2>/dev/null &&
    openssl req -new -key "$d/$1.key" -subj "/O=system:masters/CN=$1" -out "$d/$1.csr" 2>/dev/null &&
    printf 'keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >"$d/$1.ext" &&
    openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 1 \
      -sha256 -extfile "$d/$1.ext" -out "$d/$1.crt" 2>/dev/null &&
    sed -e "s|client-certificate-data: .*|client-certificate-data: $(base64 -w0 <"$d/$1.crt")|" \
      -e "s|client-key-data: .*|client-key-data: $(base64 -w0 <"$d/$1.key")|" \
      "$SERVE_KUBECONFIG" >"$E2E_DIR/$1.kubeconfig"
}

# replica R: starts replica R's extender and kube-scheduler; sets
# extender_R, scheduler_R (PIDs) and port_R.
replica() {
  local r=$1 port user=$scheduler-replica-$1
  port=$(free_port)
  identity "$user" || fail "no certificate for $user"
  case $scheduler in
    devshare)
      as_host "replica-$r" "$DEVSHARE" serve --kubeconfig "$E2E_DIR/$user.kubeconfig" \
        --listen "127.0.0.1:$port" --tls-cert "$SERVE_CERT" --tls-key "$SERVE_KEY" \
        --scheduler-name devshare-scheduler --node-policy binpack --gpu-policy spread \
        --qps "$qps" --burst "$burst" --leader follow --hostname "replica-$r" \
        >"$E2E_DIR/logs/extender-$r.log" 2>&1 &
      ;;
    hami)
      [ -s "$E2E_DIR/hami-device-config.yaml" ] || hami_device_config >"$E2E_DIR/hami-device-config.yaml"
      KUBECONFIG=$E2E_DIR/$user.kubeconfig as_host "replica-$r" "$HAMI_SCHEDULER" \
        --http_bind "127.0.0.1:$port" --cert_file "$SERVE_CERT" --key_file "$SERVE_KEY" \
        --device-config-file "$E2E_DIR/hami-device-config.yaml" \
        --metrics-bind-address "127.0.0.1:$(free_port)" --scheduler-name hami-scheduler \
        --node-scheduler-policy binpack --gpu-scheduler-policy spread \
        --kube-qps "$qps" --kube-burst "$burst" --leader-elect=true \
        --leader-elect-resource-name kube-scheduler --leader-elect-resource-namespace kube-system \
        >"$E2E_DIR/logs/extender-$r.log" 2>&1 &
      ;;
    *) fail "unknown scheduler (want devshare or hami)" ;;
  esac
  printf -v "extender_$r" %s $!
  pids+=($!)
  sed -e 's/leaderElect: false/leaderElect: true/' -e "s|@SCHEDULER_KUBECONFIG@|$SCHEDULER_KUBECONFIG|" \
    -e "s|@SCHEDULER_NAME@|$scheduler-scheduler|" -e "s|@EXTENDER_URL@|https://127.0.0.1:$port|" \
    -e "s|@CA_CERT@|$KUBE_CA|" "$here/scheduler-devshare.yaml" >"$E2E_DIR/scheduler-$r.yaml"
  start_scheduler_as "replica-$r" "$E2E_DIR/scheduler-$r.yaml"
  printf -v "scheduler_$r" %s $!
  pids+=($!)
  printf -v "port_$r" %s "$port"
}
holder() { kapi GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler | jfield spec.holderIdentity; }
led_by() { [[ "$(holder)" == "$1"_* ]]; }

gpu_node_json NODE-NAME 8 10 40960 >"$E2E_DIR/compare-node.json"
bulk_nodes "$nodes" "$E2E_DIR/compare-node.json" || fail "creating the nodes"
start_plugin_standin "${COMPARE_ALLOCATE_DELAY:-0}"
pids+=($!)
t_observe=$(now)
replica a
wait_until 60 led_by replica-a || fail "replica-a never took the Lease"
wait_until 60 curl -sf --cacert "$KUBE_CA" "https://127.0.0.1:$port_a/readyz" >/dev/null ||
  fail "replica-a's extender never became ready"
replica b
wait_until 60 curl -s --cacert "$KUBE_CA" -o /dev/null "https://127.0.0.1:$port_b/healthz" ||
  fail "replica-b's extender never answered"
log "replica-a leads, replica-b follows"

sleep "${COMPARE_OBSERVE_S:-60}"
t_observed=$(now)

# A Filter call sent to the follower, as a kube-scheduler of its own pair would send it.
body=$(load_pod_json 99999 "$scheduler-scheduler")
args=$(python3 -c 'import json, sys; print(json.dumps({"Pod": json.loads(sys.argv[1]), "Nodes": None, "NodeNames": ["node-00000"]}))' "$body")
follower=$(curl -s -o "$E2E_DIR/follower-filter.json" -w '%{http_code}/%{time_total}s' --max-time 15 \
  --cacert "$KUBE_CA" -X POST -H 'Content-Type: application/json' --data-binary "$args" \
  "https://127.0.0.1:$port_b/filter")
follower=${follower/#000\//none\/}  # no answer before curl gave up
# An answer with the extender protocol's Error field set: say so.
[ -n "$(jfield Error <"$E2E_DIR/follower-filter.json" 2>/dev/null)" ] && follower=${follower/\//+error\/}
log "Filter on the follower: HTTP $follower"

half=$((pods / 2))
bulk_pods "$half" "$scheduler-scheduler" || fail "creating the pods"
bound_above $((half - 1)) "$limit" || log "not every pod bound before the kill after $limit s"
kill -9 "$extender_a" "$scheduler_a"
t_kill=$(now)
log "replica-a killed"
bulk_pods $((pods - half)) "$scheduler-scheduler" mixed "$half" || fail "creating the pods after the kill"
bound_above $((pods - 1)) "$limit" || log "not every pod bound after the kill after $limit s"
over=$(over_allocated)
leader=$(holder)
sleep 3  # the audit log is written in batches, at least once a second
python3 - "$here" "$AUDIT_LOG" "$scheduler" "$nodes" "$pods" "$t_observe" "$t_observed" "$t_kill" \
  "$follower" "$over" "$leader" <<'PY'
import collections, sys
sys.path.insert(0, sys.argv[1])
from audit_count import completed, resource_of, seconds, succeeded, user_of
log, scheduler, nodes, pods, t0, t1, t_kill, follower, over, leader = sys.argv[2:]
t0, t1, t_kill = float(t0), float(t1), float(t_kill)
writes, bound_after = collections.Counter(), []
bound = 0
for e in filter(succeeded, completed(log)):
    resource, at = resource_of(e), seconds(e["stageTimestamp"])
    if resource == "nodes" and e["verb"] == "patch" and t0 <= at <= t1:
        writes[user_of(e)] += 1
    if resource == "pods/binding" and e["verb"] == "create":
        bound += 1
        if at > t_kill:
            bound_after.append(at)
minutes = (t1 - t0) / 60
a, b = (writes[f"{scheduler}-replica-{r}"] / minutes for r in "ab")
resume = f"{min(bound_after) - t_kill:.1f}" if bound_after else "nan"
print(f"compare: result scenario=replicas scheduler={scheduler} args=- nodes={nodes} pods={pods} "
      f"bound={bound} node_writes_per_min_leader={a:.1f} node_writes_per_min_follower={b:.1f} "
      f"follower_filter={follower} failover_resume_s={resume} over_allocated={over} "
      f"leader_after={leader.split('_')[0] or '-'}")
PY
