#!/usr/bin/env bash
# One run of one scenario with one scheduler behind kube-scheduler, in the
# control plane of control-plane.sh (started by run-compare.sh with the
# scheduler's KubeSchedulerConfiguration, E2E_SCHEDULER_NAME and
# E2E_EXTENDER_URL at PORT). GPU nodes have 8 GPUs of 40 GiB, 10 slots each;
# the plugin stand-in completes Allocate (releasing the node lock) after
# COMPARE_ALLOCATE_DELAY seconds (default 0: at its next pass, every 0.5 s).
#
#   compare.sh SCENARIO SCHEDULER PORT NODES PODS QPS BURST [TIMEOUT_S]
#
# SCENARIO
#   throughput  NODES GPU nodes; PODS one-GPU pods of 4,000–20,000 MiB created
#               at once.
#   storm       seed 002's node-lock storm: 2 GPU nodes and NODES - 2 whose
#               GPUs are too small (2 GiB); PODS pods of 4,000 MiB at once,
#               which fit only on the 2.
#   agreement   NODES GPU nodes; PODS pods created one at a time, each after
#               the previous one is bound: the node and devices the scheduler
#               chose against `devshare explain` on the cluster just before.
#               Then COMPARE_QUOTA_PODS (4; 0: none) more, of 8,000, 16,000,
#               4,000, 8,000 MiB (again from the start past 4), under a
#               ResourceQuota of the default namespace made before the
#               extender starts: limits.nvidia.com/gpumem the memory of the
#               PODS pods and 13,000 MiB, so that the tail runs out of it (the
#               first binds, the second waits, the smaller third binds, the
#               fourth waits). A pod explain places nowhere must stay unbound
#               with a FailedScheduling event naming ResourceQuotaNotFit. Each
#               pod's outcome is in agreement.txt, for run-compare.sh to set
#               the schedulers side by side. Then, in the same control plane
#               and with the same extender (COMPARE_PREEMPTION=0: not), what
#               the scenario preemption does.
#   preemption  compare-preemption.sh alone (NODES and PODS unused): on a
#               full cluster of low-priority pods, a pending pod and the
#               deletion of a bound one (HAMi #1368: seconds to its binding
#               on the freed GPU), then a high-priority pod (bound in N s and
#               the victims, or still pending and why).
#   dra         DRA (needs kube-controller-manager: run-compare.sh starts it):
#               NODES nodes whose 8 GPUs of 40 GiB are published as
#               ResourceSlices the way HAMi's DRA driver publishes them, the
#               DeviceClass hami-gpu, five ResourceClaimTemplates (shares of
#               10-50 % of a GPU's cores and memory); PODS pods at once,
#               each with a claim from one of them (dra_compare.py).
#   dra-fill    the same, an openb-like fill (dra_compare.py: shares of 15-80 %
#               of a GPU, whole GPUs, 2, 4 and 8 of them; 3 nodes in 5 of 8
#               GPUs, the others of 2): pods asking 130 % of the GPUs (PODS
#               unused) at once, then waiting until no pod was bound for
#               COMPARE_FILL_SETTLE (60) s; the GPUs the bound pods' claims
#               hold, against `devshare simulate` (DRA mode) on the same
#               nodes and pods in creation order.
# SCHEDULER
#   devshare, devshare-lock-free (devshare serve --bind lock-free), hami
#   (HAMi's scheduler with its chart's flags and device config), or
#   kube-scheduler (alone, no extender: the GPUs a plain extended resource,
#   the pods asking no memory; the ceiling). For dra and dra-fill:
#   kube-scheduler (its own DRA allocation, no devshare), devshare (devshare
#   serve serving hami-gpu by binpack: its webhook gates the pods, it
#   allocates their claims and removes the gate, kube-scheduler binds) or
#   devshare-fgd (the same by fgd).
#
# Prints one line
#   compare: result scenario=... scheduler=... key=value ...
# with pods bound, pods/s (first creation to last binding), p50/p99 creation
# to binding, binding errors and node-lock contentions as kube-scheduler
# logged them, devices over their memory or slots after the run, the
# extender's CPU seconds and peak RSS, its API requests by verb as the API
# server's audit log counts them (kube-scheduler alone: its requests but
# the lists and watches of its informers), and for agreement the pods placed
# as explain said, apart on a tie W10 allows, apart as `explain --hami-exact
# all` says (a row of docs/compatibility.md), left pending for the quota as
# explain said, and apart unexplained. For dra and dra-fill: devices over a
# capacity (the claims' consumed capacity against the slices), the CPU of
# kube-controller-manager and devshare too, the API requests by verb of
# kube-scheduler, kube-controller-manager and devshare each (every verb),
# the GPUs published and held by bound pods' claims, and for dra-fill the
# simulator's prediction (sim_allocated_pct: upstream's mean over seeds
# 0-9, with its range; binpack and fgd, the same under every seed, seed 0).
#
# DEVSHARE_SERVE_ARGS: more flags for devshare serve (printed with its result).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
need_binaries
scenario=$1 scheduler=$2 port=$3 nodes=$4 pods=$5 qps=$6 burst=$7 limit=${8:-900}
log() { echo "compare: $scenario/$scheduler: $*"; }
dra=
case $scenario in dra | dra-fill) dra=1 ;; esac
fail() { echo "compare: $scenario/$scheduler: FAILED: $*"; exit 1; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

# --- the quota (before the extender starts, so that it is in its first list) -------------
quota_pods=0 quota_mib=-
tail_mib=(8000 16000 4000 8000)
if [ "$scenario" = agreement ] && [ "${COMPARE_QUOTA_PODS:-4}" -gt 0 ]; then
  quota_pods=${COMPARE_QUOTA_PODS:-4} quota_mib=13000
  for ((i = 0; i < pods; i++)); do quota_mib=$((quota_mib + 4000 + (i * 7919) % 16001)); done
  kapi POST /api/v1/namespaces/default/resourcequotas \
    "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"gpumem\"},\"spec\":{\"hard\":{\"limits.nvidia.com/gpumem\":\"$quota_mib\"}}}" \
    >/dev/null || fail "creating the quota"
  log "quota limits.nvidia.com/gpumem=$quota_mib in namespace default"
fi

# --- the extender ---------------------------------------------------------------------
extra_args=-
extender_pid=
pod_scheduler=$scheduler-scheduler
case $scheduler in
  devshare | devshare-lock-free | devshare-fgd)
    user=devshare-serve pod_scheduler=devshare-scheduler
    args=(${DEVSHARE_SERVE_ARGS:-})
    [ "$scheduler" = devshare-lock-free ] && args+=(--bind lock-free)
    [ ${#args[@]} -gt 0 ] && extra_args=$(IFS=,; echo "${args[*]}")
    [ "$scheduler" = devshare-fgd ] && [ -z "$dra" ] && fail "devshare-fgd runs the dra scenarios only"
    if [ -n "$dra" ]; then
      # devshare serves the DeviceClass; the pods stay kube-scheduler's.
      pod_scheduler=default-scheduler policy=binpack
      [ "$scheduler" = devshare-fgd ] && policy=fgd
      args+=(--dra-device-class hami-gpu --dra-policy "$policy")
    fi
    start_extender devshare "$port" "$SERVE_KUBECONFIG" "$qps" "$burst" \
      "$E2E_DIR/logs/compare-devshare.log" "${args[@]}" || fail "devshare serve did not start"
    ;;
  hami)
    user=hami-scheduler
    start_extender hami "$port" "$HAMI_KUBECONFIG" "$qps" "$burst" "$E2E_DIR/logs/compare-hami.log" \
      --leader-elect=false || fail "HAMi's scheduler did not start"
    ;;
  kube-scheduler)
    [ "$scenario" != agreement ] && [ "$scenario" != preemption ] ||
      fail "$scenario needs an extender that places devices"
    user=system:kube-scheduler pod_scheduler=default-scheduler
    ;;
  *) fail "unknown scheduler (want devshare, devshare-lock-free, hami or kube-scheduler)" ;;
esac
if [ "$scheduler" != kube-scheduler ]; then
  extender_pid=$!
  pids+=("$extender_pid")
fi

# --- nodes --------------------------------------------------------------------------------
t0=$SECONDS
gpu_node_json NODE-NAME 8 10 40960 >"$E2E_DIR/compare-node.json"
if [ "$scenario" = storm ]; then
  if [ "$scheduler" = kube-scheduler ]; then
    gpu_node_json NODE-NAME 0 10 2048 >"$E2E_DIR/compare-small-node.json"
  else
    gpu_node_json NODE-NAME 8 10 2048 >"$E2E_DIR/compare-small-node.json"
  fi
  bulk_nodes 2 "$E2E_DIR/compare-node.json" &&
    bulk_nodes $((nodes - 2)) "$E2E_DIR/compare-small-node.json" 2 || fail "creating the nodes"
elif [ -n "$dra" ]; then
  # Each group's nodes and the ResourceSlice of their GPUs, the DeviceClass
  # and the scenario's templates.
  while read -r count first cpu mem gpus gpu_mib; do
    dra_node_json NODE-NAME "$cpu" "$mem" >"$E2E_DIR/compare-node.json"
    # shellcheck disable=SC2046
    hami_dra_slice_json NODE-NAME $(for ((g = 0; g < gpus; g++)); do echo "${gpu_mib}Mi"; done) \
      >"$E2E_DIR/compare-slice.json"
    bulk_nodes "$count" "$E2E_DIR/compare-node.json" "$first" "$E2E_DIR/compare-slice.json" ||
      fail "creating the nodes and their ResourceSlices"
  done < <(python3 "$here/dra_compare.py" nodes "$scenario" "$nodes")
  kapi POST /apis/resource.k8s.io/v1/deviceclasses "$(hami_dra_class_json hami-gpu)" >/dev/null ||
    fail "creating the DeviceClass"
  while read -r name capacity count; do
    kapi POST /apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates \
      "$(dra_template_json "$name" "$capacity" "" "$count")" >/dev/null || fail "creating the template $name"
  done < <(python3 "$here/dra_compare.py" templates "$scenario")
  pods=$(python3 "$here/dra_compare.py" pods "$scenario" "$nodes" "$pods")
elif [ "$scenario" != preemption ]; then
  bulk_nodes "$nodes" "$E2E_DIR/compare-node.json" || fail "creating the nodes"
fi
[ "$scenario" = preemption ] || log "$nodes nodes created in $((SECONDS - t0)) s"
if [ -n "$extender_pid" ]; then
  wait_until 120 curl -sf --cacert "$KUBE_CA" "https://127.0.0.1:$port/readyz" >/dev/null ||
    fail "the extender never became ready"
fi
if [ -n "$extender_pid" ] && [ -n "$dra" ]; then
  # The webhook, once devshare admits; then until a dry run comes back gated.
  wait_until 120 curl -sf --cacert "$KUBE_CA" "https://127.0.0.1:$port/readyz/admission" >/dev/null ||
    fail "devshare's webhook never became ready"
  kapi POST /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations \
    "$(dra_webhook_json "https://127.0.0.1:$port")" >/dev/null || fail "registering the webhook"
  gated() {
    kapi POST "/api/v1/namespaces/default/pods?dryRun=All" "$(load_pod_json 0 default-scheduler "$scenario")" |
      grep -q devshare.dev/dra-allocation
  }
  wait_until 30 gated || fail "the webhook does not gate the pods"
elif [ -n "$extender_pid" ]; then
  start_plugin_standin "${COMPARE_ALLOCATE_DELAY:-0}"
  pids+=($!)
  standin_pid=$!
fi
[ "$scenario" = preemption ] && { bash "$here/compare-preemption.sh" "$scheduler" "$pod_scheduler"; exit; }
# The CPU each process spends while the pods are scheduled: where the time goes.
extender=extender
[ -n "$dra" ] && extender=devshare
cpu_of=("$extender" "$extender_pid" standin "${standin_pid:-}"
  kube_apiserver "$(cat "$E2E_DIR/run/kube-apiserver.pid")" etcd "$(cat "$E2E_DIR/run/etcd.pid")"
  kube_scheduler "$(cat "$E2E_DIR/run/kube-scheduler.pid")")
[ -n "$dra" ] && cpu_of+=(kube_controller_manager "$(cat "$E2E_DIR/run/kube-controller-manager.pid")")
declare -A cpu0 cpu1
cpu_now() {  # cpu_now ARRAY: each process's clock ticks so far, into ARRAY
  local -n into=$1
  for ((k = 0; k < ${#cpu_of[@]}; k += 2)); do
    [ -n "${cpu_of[k + 1]}" ] && into[${cpu_of[k]}]=$(proc_ticks "${cpu_of[k + 1]}")
  done
}
cpu_now cpu0

# --- pods ---------------------------------------------------------------------------------
mib=mixed
[ "$scenario" = storm ] && mib=4000
[ "$scheduler" = kube-scheduler ] && mib=none
agreement=$E2E_DIR/agreement.txt
: >"$agreement"
if [ "$scenario" = agreement ]; then
  # One at a time: explain on the cluster as it is, create, wait for the
  # binding and the stand-in's Allocate (bind-phase success and the node lock
  # released, as the next pod's explain assumes), then compare (the devices
  # from hami.io/vgpu-devices-allocated). The quota's pods: wait for the
  # binding or a FailedScheduling event, whichever comes first.
  bound() { [ -n "$(kapi GET "/api/v1/namespaces/default/pods/$1" | jfield spec.nodeName)" ]; }
  refused_or_bound() {
    kapi GET "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=$1,reason=FailedScheduling" |
      jfield items >"$E2E_DIR/refusal.json" && { [ "$(cat "$E2E_DIR/refusal.json")" != "[]" ] || bound "$1"; }
  }
  allocated() {
    local node
    kapi GET "/api/v1/namespaces/default/pods/$1" >"$E2E_DIR/placed.json" &&
      [ "$(jfield 'metadata.annotations["hami.io/bind-phase"]' <"$E2E_DIR/placed.json")" = success ] &&
      node=$(jfield spec.nodeName <"$E2E_DIR/placed.json") &&
      [ -z "$(kapi GET "/api/v1/nodes/$node" | jfield 'metadata.annotations["hami.io/mutex.lock"]')" ]
  }
  for ((i = 0; i < pods + quota_pods; i++)); do
    pod_mib=mixed
    ((i < pods)) || pod_mib=${tail_mib[(i - pods) % ${#tail_mib[@]}]}
    body=$(load_pod_json "$i" "$pod_scheduler" "$pod_mib")
    explain_json "$body" >"$E2E_DIR/explain.json" || fail "devshare explain failed for load-$i"
    explain_json "$body" --hami-exact all >"$E2E_DIR/explain-exact.json" ||
      fail "devshare explain --hami-exact all failed for load-$i"
    name=load-$(printf %05d "$i")
    kapi POST /api/v1/namespaces/default/pods "$body" >/dev/null || fail "creating $name"
    echo '[]' >"$E2E_DIR/refusal.json"
    if ((i >= pods)); then
      wait_until 60 refused_or_bound "$name" || { log "$name neither refused nor bound after 60 s"; break; }
      bound "$name" && ! wait_until 60 allocated "$name" && { log "$name not allocated after 60 s"; break; }
      kapi GET "/api/v1/namespaces/default/pods/$name" >"$E2E_DIR/placed.json"
    else
      wait_until 120 bound "$name" && wait_until 60 allocated "$name" ||
        { log "$name not bound and allocated after 180 s"; break; }
    fi
    python3 - "$E2E_DIR/explain.json" "$E2E_DIR/explain-exact.json" "$E2E_DIR/placed.json" \
      "$E2E_DIR/refusal.json" >>"$agreement" <<'PY'
import json, re, sys
explain, exact, pod, refusal = (json.load(open(f)) for f in sys.argv[1:])
node = pod["spec"].get("nodeName")
if not node:  # pending: as explain said, for the quota, with kube-scheduler's event saying so
    quota = explain.get("chosen") is None and any(
        "ResourceQuotaNotFit" in n.get("reason", "") for n in explain["nodes"]) and any(
        "ResourceQuotaNotFit" in e.get("message", "") for e in refusal)
    print(pod["metadata"]["name"], "-", "-", explain.get("chosen"), "pending-quota" if quota else "unexplained")
    sys.exit(0)
got = sorted(re.findall(r"(GPU-[^,]+),", pod["metadata"].get("annotations", {}).get(
    "hami.io/vgpu-devices-allocated", "")))
def verdict(explained):  # agree, a node tie W10 leaves open, or apart
    by_node = {n["node"]: n for n in explained["nodes"]}
    said = by_node.get(node, {})
    if got != sorted(re.findall(r"(GPU-[^(]+)\(", said.get("devices", ""))):
        return None
    if node == explained.get("chosen"):
        return "agree"
    if said.get("fits") and said.get("score") == by_node[explained["chosen"]]["score"]:
        return "w10-node-tie"  # equal node scores: HAMi breaks them in goroutine order
    return None
# Apart from devshare but as --hami-exact all decides: a documented row.
v = verdict(explain) or (verdict(exact) and "hami-exact-row") or "unexplained"
print(pod["metadata"]["name"], node, ",".join(got), explain.get("chosen"), v)
PY
  done
elif [ "$scenario" = dra-fill ]; then
  # Until no pod was bound for COMPARE_FILL_SETTLE seconds; the CPU counted
  # until the last binding seen.
  bulk_pods "$pods" "$pod_scheduler" "$scenario" || fail "creating the pods"
  log "$pods pods created"
  settle=${COMPARE_FILL_SETTLE:-60} seen=-1 changed=$SECONDS t0=$SECONDS
  while ((SECONDS - changed < settle)); do
    count=$(bound_count)
    [ "$count" != "$seen" ] && { seen=$count changed=$SECONDS; cpu_now cpu1; }
    ((SECONDS - t0 < limit)) || { log "still binding after $limit s"; break; }
    sleep 2
  done
  log "$seen of $pods pods bound, none more for $settle s"
else
  [ -n "$dra" ] && mib=$scenario
  bulk_pods "$pods" "$pod_scheduler" "$mib" || fail "creating the pods"
  log "$pods pods created"
  bound_above $((pods - 1)) "$limit" || log "not every pod bound after $limit s"
fi
[ "$scenario" = dra-fill ] || cpu_now cpu1
cpu_s=
for ((k = 0; k < ${#cpu_of[@]}; k += 2)); do
  name=${cpu_of[k]} pid=${cpu_of[k + 1]} used=-
  [ -n "$pid" ] && used=$(awk -v t="$((cpu1[$name] - cpu0[$name]))" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f", t / hz}')
  cpu_s+=" ${name}_cpu_s=$used"
done
rss=-
[ -n "$extender_pid" ] && rss=$(awk '$1=="VmHWM:"{printf "%.0f", $2/1024}' "/proc/$extender_pid/status")

# --- devices over their memory or slots (DRA: over a capacity), the GPUs held -------------
over=- dra_figures=
if [ -n "$dra" ]; then
  dra_figures=$(dra_figures) || fail "reading the claims, pods and slices"
  over=${dra_figures##*over_capacity=} dra_figures=${dra_figures% over_capacity=*}
elif [ "$scheduler" != kube-scheduler ]; then
  over=$(over_allocated)
fi
# --- the simulator's prediction of the fill, on the same nodes and pods ---------------------
sim_figures=
if [ "$scenario" = dra-fill ]; then
  variant=upstream
  case $scheduler in devshare) variant=binpack ;; devshare-fgd) variant=fgd ;; esac
  mkdir -p "$E2E_DIR/sim" && python3 "$here/dra_compare.py" sim "$scenario" "$nodes" 0 "$E2E_DIR/sim" "$variant" &&
    "$DEVSHARE" simulate "$E2E_DIR/sim/scenario.yaml" --openb "$E2E_DIR/sim" --json "$E2E_DIR/sim/results.json" \
      >"$E2E_DIR/sim/simulate.txt" &&
    sim_figures=$(python3 -c '
import json, sys
runs = json.load(open(sys.argv[1]))["variants"][0]["runs"]
pct = [r["allocationPercent"] for r in runs]
print(f"sim_variant={sys.argv[2]} sim_allocated_pct={sum(pct) / len(pct):.2f} sim_range={min(pct):.2f}-{max(pct):.2f}")
' "$E2E_DIR/sim/results.json" "$variant") || log "devshare simulate failed (see $E2E_DIR/sim)"
fi

# --- kube-scheduler's errors, and the API server's count of the extender's requests ---------
errors=$(grep -c 'Error scheduling pod; retrying' "$E2E_LOGS/kube-scheduler.log")
contention=$(grep 'Error scheduling pod; retrying' "$E2E_LOGS/kube-scheduler.log" | grep -c 'node lock contention')
sleep 3  # the audit log is written in batches, at least once a second
# DRA: the requests of each component, by verb.
components=
[ -n "$dra" ] && components="kube-scheduler=system:kube-scheduler kube-controller-manager=system:kube-controller-manager"
[ -n "$dra" ] && [ -n "$extender_pid" ] && components+=" devshare=$user"
python3 - "$here" "$AUDIT_LOG" "$user" "$scenario" "$scheduler" "$extra_args" "$nodes" "$pods" "$cpu_s" \
  "$rss" "$qps" "$burst" "$errors" "$contention" "$over" "$agreement" "$quota_pods" "$quota_mib" \
  "$extender" "$components" "$dra_figures $sim_figures" <<'PY'
import collections, sys
sys.path.insert(0, sys.argv[1])
from audit_count import completed, resource_of, seconds, succeeded, user_of
(log, user, scenario, scheduler, extra, nodes, pods, cpu, rss, qps, burst, errors, contention,
 over, agreement, quota_pods, quota_mib, extender, components, more) = sys.argv[2:]
label = {u: c for c, u in (kv.split("=", 1) for kv in components.split())}
per = collections.defaultdict(collections.Counter)  # component -> verb-resource -> requests
created, bound, verbs = {}, {}, collections.Counter()
for e in filter(succeeded, completed(log)):
    ref, resource = e.get("objectRef") or {}, resource_of(e)
    if ref.get("namespace") == "default" and ref.get("name", "").startswith("load-"):
        if e["verb"] == "create" and resource == "pods":
            created[ref["name"]] = seconds(e["requestReceivedTimestamp"])
        elif e["verb"] == "create" and resource == "pods/binding":
            bound[ref["name"]] = seconds(e["stageTimestamp"])
    if user_of(e) in label:
        per[label[user_of(e)]][f"{e['verb']}-{resource}"] += 1
    elif user_of(e) == user and (user != "system:kube-scheduler" or e["verb"] not in ("list", "watch")):
        verbs[f"{e['verb']}-{resource}"] += 1
lat = sorted(bound[n] - created[n] for n in bound if n in created)
pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")
span = (max(bound.values()) - min(created.values())) if bound and created else float("nan")
rate = len(bound) / span if bound and span > 0 else 0.0
verdicts = collections.Counter(line.split()[-1] for line in open(agreement))
agree = (f" agree={verdicts['agree']} w10_node_tie={verdicts['w10-node-tie']} "
         f"hami_exact_row={verdicts['hami-exact-row']} unexplained={verdicts['unexplained']}"
         f" quota_pods={quota_pods} pending_quota={verdicts['pending-quota']} quota_mib={quota_mib}"
         ) if scenario == "agreement" else ""
pods = int(pods) + int(quota_pods)
if per:  # DRA: every component's requests, and their sum
    verbs = collections.Counter({f"{c}:{k}": v for c, counts in per.items() for k, v in counts.items()})
    more += "".join(f" api_requests_{c.replace('-', '_')}={sum(per[c].values())}" for c in label.values())
    more += f" pending={pods - len(bound)}"
print(f"compare: result scenario={scenario} scheduler={scheduler} args={extra} nodes={nodes} pods={pods} "
      f"qps={qps} burst={burst} bound={len(bound)} pods_per_s={rate:.2f} p50_s={pct(0.5):.1f} "
      f"p99_s={pct(0.99):.1f} bind_errors={errors} lock_contention={contention} over_allocated={over}"
      f"{cpu} {extender}_rss_mib={rss} api_requests={sum(verbs.values())}{agree} {more.strip()} "
      + " ".join(f"{k}={v}" for k, v in sorted(verbs.items())))
PY
if [ "$scenario" = agreement ] && [ "${COMPARE_PREEMPTION:-1}" != 0 ]; then
  bash "$here/compare-preemption.sh" "$scheduler" "$pod_scheduler"
fi
