#!/usr/bin/env bash
# The waiting pod (HAMi #1368) and preemption, for one scheduler, in the
# control plane of control-plane.sh with the extender compare.sh started
# (and its plugin stand-in running): compare.sh runs this as the scenario
# `preemption`, and after the agreement scenario in the same control plane
# (COMPARE_PREEMPTION=0: not), once that scenario's figures are printed.
#
#   compare-preemption.sh SCHEDULER POD_SCHEDULER
#
# It first removes every pod of the default namespace, every node and the
# quota an earlier scenario left, so that the cluster is only its own.
# Then a full cluster: two nodes of two 40 GiB GPUs (10 slots), filled with
# nine pods of PriorityClass compare-low (100), each pinned to its GPU by
# nvidia.com/use-gpuuuid so that both schedulers hold the same cluster:
#   node-01000 GPU 0: low-00 24,000 MiB  low-01 16,000 MiB
#   node-01000 GPU 1: low-02 24,000      low-03 16,000
#   node-01001 GPU 0: low-04 16,000      low-05 12,000  low-06 12,000
#   node-01001 GPU 1: low-07 24,000      low-08 16,000
# Pods keep the default grace period (30 s); a kubelet stand-in (here)
# deletes a terminating pod for good COMPARE_EXIT_S (1) seconds after it
# saw it terminating, as a kubelet does once the container has stopped.
#
# Waiting pod, COMPARE_WAITING_ROUNDS (3) rounds: `waiting-N` (compare-low,
# 24,000 MiB, not pinned) waits, with no room anywhere (a FailedScheduling
# event); the pod on node-01001's GPU 1 (low-07, then the previous round's
# waiting pod) is deleted, gracefully as `kubectl delete` does: the seconds
# from that DELETE to the Binding of `waiting-N`, which must be on the GPU
# the deleted pod freed. After COMPARE_WAITING_LIMIT (60) s without a
# binding it says so and annotates the pod (a pod update: kube-scheduler
# tries it again), so that the cluster is full for what follows. The
# binding races kube-scheduler's retry on the deletion event against the
# extender's own watch seeing the pod gone: when the retry is first and is
# refused, on a cluster where nothing else changes nothing makes
# kube-scheduler try the pod again before its 5-minute flush (HAMi #1368).
#
# Preemption: `high` (PriorityClass compare-high, 1000, 20,000 MiB) fits
# nowhere; `devshare explain` on the cluster just before names the node and
# the victims preempting would take (the fewest: one 24,000 MiB pod; a
# 16,000 MiB one or a 12,000 MiB one would not free enough). Waits
# COMPARE_PREEMPT_WAIT (60) s at most for its binding: the seconds from its
# creation to the Binding, the pods evicted (Eviction API, from the audit
# log) and the pods gone, the node; or "still pending", with the last
# FailedScheduling message kube-scheduler wrote on it.
#
# Prints
#   compare: preemption/SCHEDULER: high: FailedScheduling: MESSAGE  (the last, if any)
#   compare: result scenario=preemption scheduler=... key=value ...
# with waiting_s (each round's seconds, "-" for still pending after the
# limit), waiting_nudged (rounds annotated), waiting_on_freed (rounds bound
# on the freed GPU), preempt_s (or preempt_pending_s), preempt_node,
# evicted (the pods the extender evicted), gone (the pods deleted but those
# the rounds deleted), planned (explain's victims), planned_node,
# over_allocated.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
need_binaries
scheduler=$1 pod_scheduler=$2
waiting_limit=${COMPARE_WAITING_LIMIT:-60} preempt_wait=${COMPARE_PREEMPT_WAIT:-60}
rounds=${COMPARE_WAITING_ROUNDS:-3}
log() { echo "compare: preemption/$scheduler: $*"; }
fail() { echo "compare: preemption/$scheduler: FAILED: $*"; exit 1; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT
pods=/api/v1/namespaces/default/pods

# --- a cluster of its own ----------------------------------------------------------------
t0=$SECONDS
kapi DELETE "$pods?gracePeriodSeconds=0" >/dev/null &&
  kapi DELETE /api/v1/nodes >/dev/null &&
  kapi DELETE /api/v1/namespaces/default/resourcequotas >/dev/null || fail "clearing the cluster"
empty() { [ "$(kapi GET "$1" | jfield items)" = "[]" ]; }
wait_until 30 empty "$pods" && wait_until 30 empty /api/v1/nodes || fail "the cluster is not empty after 30 s"
for class in compare-low:100 compare-high:1000; do
  kapi POST /apis/scheduling.k8s.io/v1/priorityclasses \
    "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"${class%:*}\"},\"value\":${class#*:}}" \
    >/dev/null 2>&1 || kapi GET "/apis/scheduling.k8s.io/v1/priorityclasses/${class%:*}" >/dev/null ||
    fail "creating PriorityClass ${class%:*}"
done

# The kubelet's part: a terminating pod bound to a node is deleted for
# good once its container would have stopped.
python3 - "${COMPARE_EXIT_S:-1}" >>"$E2E_DIR/logs/kubelet-exit.log" 2>&1 <<'PY' &
import http.client, json, os, ssl, sys, time, urllib.parse
exit_s = float(sys.argv[1])
ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
ctx.load_cert_chain(os.environ["KUBE_CLIENT_CERT"], os.environ["KUBE_CLIENT_KEY"])
url = urllib.parse.urlparse(os.environ["KUBE_SERVER"])
conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx)
seen = {}
def call(method, path, body=None):
    conn.request(method, path, body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    return r.status, r.read()
while True:
    try:
        now = time.monotonic()
        for p in json.loads(call("GET", "/api/v1/namespaces/default/pods")[1])["items"]:
            m = p["metadata"]
            if m.get("deletionTimestamp") and p["spec"].get("nodeName") and \
                    now - seen.setdefault(m["uid"], now) >= exit_s:
                body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                        "preconditions": {"uid": m["uid"]}}
                status, _ = call("DELETE", f"/api/v1/namespaces/default/pods/{m['name']}", json.dumps(body))
                print(m["name"], "deleted:", status, flush=True)
    except (OSError, http.client.HTTPException, ValueError) as e:
        print("kubelet stand-in:", e, flush=True)
        conn.close()
    time.sleep(0.2)
PY
pids+=($!)

# pod NAME CLASS MIB [GPU-UUID]: the pod's JSON.
_pod_py='
import json
def pod(scheduler, name, priority_class, mib, uuid=None):
    meta = {"name": name}
    if uuid:
        meta["annotations"] = {"nvidia.com/use-gpuuuid": uuid}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"schedulerName": scheduler, "priorityClassName": priority_class,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"limits": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": mib}}}]}}
'
pod() { python3 -c "$_pod_py"'
import sys; print(json.dumps(pod(*sys.argv[1:])))' "$pod_scheduler" "$@"; }

# fill NAME:MIB:GPU-UUID...: creates pods NAME of compare-low, MIB MiB, on
# GPU-UUID, one after the other: each once the previous is bound, its
# bind-phase success and its node's lock released (as the next one's
# placement assumes); one process, polling every 0.1 s for 60 s a pod.
fill() {
  python3 - "$pod_scheduler" "$@" <<PY
$_pod_py
import http.client, os, ssl, sys, time, urllib.parse
ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
ctx.load_cert_chain(os.environ["KUBE_CLIENT_CERT"], os.environ["KUBE_CLIENT_KEY"])
url = urllib.parse.urlparse(os.environ["KUBE_SERVER"])
conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx)
def call(method, path, body=None):
    conn.request(method, path, body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"{method} {path}: HTTP {r.status}: {data[:300]!r}")
    return json.loads(data)
pods = "/api/v1/namespaces/default/pods"
for spec in sys.argv[2:]:
    name, mib, gpu = spec.split(":")
    call("POST", pods, json.dumps(pod(sys.argv[1], name, "compare-low", mib, gpu)))
    deadline = time.monotonic() + 60
    while True:
        p = call("GET", f"{pods}/{name}")
        node = p["spec"].get("nodeName")
        if (node and p["metadata"].get("annotations", {}).get("hami.io/bind-phase") == "success" and
                "hami.io/mutex.lock" not in call("GET", f"/api/v1/nodes/{node}")["metadata"].get("annotations", {})):
            break
        if time.monotonic() > deadline:
            sys.exit(f"{name} not bound and allocated after 60 s")
        time.sleep(0.1)
PY
}
node_of() { kapi GET "$pods/$1" | jfield spec.nodeName; }
bound() { [ -n "$(node_of "$1")" ]; }
# allocated NAME: bound, bind-phase success, its node's lock released.
allocated() {
  local node
  kapi GET "$pods/$1" >"$E2E_DIR/placed.json" &&
    [ "$(jfield 'metadata.annotations["hami.io/bind-phase"]' <"$E2E_DIR/placed.json")" = success ] &&
    node=$(jfield spec.nodeName <"$E2E_DIR/placed.json") &&
    [ -z "$(kapi GET "/api/v1/nodes/$node" | jfield 'metadata.annotations["hami.io/mutex.lock"]')" ]
}
devices_of() { kapi GET "$pods/$1" | jfield 'metadata.annotations["hami.io/vgpu-devices-allocated"]'; }

# --- the full cluster ---------------------------------------------------------------------
gpu_node_json NODE-NAME 2 10 40960 >"$E2E_DIR/preemption-node.json"
bulk_nodes 2 "$E2E_DIR/preemption-node.json" 1000 || fail "creating the nodes"
sleep 1  # the extender's first look at the new nodes
fill low-00:24000:GPU-node-01000-0 low-01:16000:GPU-node-01000-0 \
  low-02:24000:GPU-node-01000-1 low-03:16000:GPU-node-01000-1 \
  low-04:16000:GPU-node-01001-0 low-05:12000:GPU-node-01001-0 low-06:12000:GPU-node-01001-0 \
  low-07:24000:GPU-node-01001-1 low-08:16000:GPU-node-01001-1 || fail "filling the cluster"
log "cluster cleared, 2 nodes and 4 GPUs full with 9 pods of priority 100 in $((SECONDS - t0)) s"

# --- the waiting pod, COMPARE_WAITING_ROUNDS times -------------------------------------------
failed_scheduling() {  # failed_scheduling POD: its last FailedScheduling message
  kapi GET "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=$1,reason=FailedScheduling" |
    python3 -c 'import json, sys; e = json.load(sys.stdin)["items"]
e.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
print(e[-1]["message"] if e else "")'
}
refused() { [ -n "$(failed_scheduling "$1")" ]; }
holder=low-07 on_freed=0 nudged=0
: >"$E2E_DIR/waiting-rounds.txt"
for ((round = 1; round <= rounds; round++)); do
  waiting=waiting-$round
  kapi POST "$pods" "$(pod "$waiting" compare-low 24000)" >/dev/null || fail "creating $waiting"
  wait_until 30 refused "$waiting" || fail "no FailedScheduling event for $waiting after 30 s"
  bound "$waiting" && fail "$waiting was bound on a full cluster"
  freed=$(devices_of "$holder" | cut -d, -f1)
  kapi DELETE "$pods/$holder" >/dev/null || fail "deleting $holder"
  nudge=0
  if ! wait_until "$waiting_limit" bound "$waiting"; then
    log "$waiting still pending ${waiting_limit} s after $holder's deletion; annotating it (a pod update)"
    nudged=$((nudged + 1)) nudge=1
    kapi PATCH "$pods/$waiting" '{"metadata":{"annotations":{"compare/nudge":"1"}}}' \
      application/merge-patch+json >/dev/null
    wait_until 30 bound "$waiting" || fail "$waiting not bound 30 s after the annotation"
  fi
  wait_until 30 allocated "$waiting" || fail "$waiting not allocated after 30 s"
  [ "$(devices_of "$waiting" | cut -d, -f1)" = "$freed" ] && on_freed=$((on_freed + 1))
  echo "$waiting $holder $nudge" >>"$E2E_DIR/waiting-rounds.txt"
  holder=$waiting
done

# --- preemption ---------------------------------------------------------------------------
body=$(pod high compare-high 20000)
# explain reads spec.priority, which the API server's Priority admission
# sets from the PriorityClass: the pod as it will be stored.
explain_json "$(python3 -c 'import json, sys; p = json.loads(sys.argv[1]); p["spec"]["priority"] = 1000
print(json.dumps(p))' "$body")" >"$E2E_DIR/explain-high.json" || fail "devshare explain failed for the high-priority pod"
read -r planned_node planned < <(python3 -c '
import json, sys
plan = json.load(open(sys.argv[1])).get("preemption") or {}
c = (plan.get("candidates") or [{}])[0]
print(c.get("node", "-"), ",".join(sorted(v["pod"] for v in c.get("victims", []))) or "-")' "$E2E_DIR/explain-high.json")
log "explain: preempting would place high on $planned_node, evicting $planned"
kapi POST "$pods" "$body" >/dev/null || fail "creating the high-priority pod"
wait_until "$preempt_wait" bound high || log "high still pending after $preempt_wait s"
bound high && { wait_until 30 allocated high || log "high not allocated after 30 s"; }
sleep 1  # an eviction that would come late
message=$(failed_scheduling high)
[ -n "$message" ] && log "high: FailedScheduling: $message"
over=$(over_allocated)

sleep 3  # the audit log is written in batches, at least once a second
python3 - "$here" "$AUDIT_LOG" "$scheduler" "$waiting_limit" "$preempt_wait" "$on_freed" "$planned" \
  "$planned_node" "$(node_of high)" "$over" "$E2E_DIR/waiting-rounds.txt" "$nudged" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from audit_count import completed, resource_of, seconds, succeeded
(log, scheduler, waiting_limit, preempt_wait, on_freed, planned, planned_node, node, over, rounds_file,
 nudged) = sys.argv[2:]
rounds = [line.split() for line in open(rounds_file)]  # waiting pod, the pod deleted for it, annotated
holders = {holder for _, holder, _ in rounds}
created, deleted, bound, evicted, gone = None, {}, {}, set(), set()
for e in filter(succeeded, completed(log)):
    ref, resource, verb = e.get("objectRef") or {}, resource_of(e), e["verb"]
    name = ref.get("name", "")
    if ref.get("namespace") != "default":
        continue
    if verb == "delete" and resource == "pods" and name in holders and name not in deleted:
        deleted[name] = seconds(e["requestReceivedTimestamp"])
    elif verb == "create" and resource == "pods" and name == "high":
        created = seconds(e["requestReceivedTimestamp"])
    elif verb == "create" and resource == "pods/binding":
        bound[name] = seconds(e["stageTimestamp"])
    elif verb == "create" and resource == "pods/eviction":
        evicted.add(f"default/{name}")
    elif verb == "delete" and resource == "pods" and name.startswith(("low-", "waiting")) and name not in holders:
        gone.add(f"default/{name}")
# Each round's seconds from the deletion to the binding; "-" when still
# pending after the limit (bound once annotated).
waiting = ",".join(f"{bound[w] - deleted[h]:.2f}" if nudge == "0" and w in bound and h in deleted else "-"
                   for w, h, nudge in rounds)
preempt = (f"preempt_s={bound['high'] - created:.2f}" if "high" in bound and created
           else f"preempt_pending_s={preempt_wait}")
print(f"compare: result scenario=preemption scheduler={scheduler} nodes=2 gpus=4 pods=9 "
      f"waiting_rounds={len(rounds)} waiting_s={waiting} waiting_limit_s={waiting_limit} waiting_nudged={nudged} "
      f"waiting_on_freed={on_freed} {preempt} preempt_node={node or '-'} "
      f"evicted={','.join(sorted(evicted)) or 'none'} gone={','.join(sorted(gone)) or 'none'} "
      f"planned={planned} planned_node={planned_node} over_allocated={over}")
PY
log "took $((SECONDS - t0)) s"
