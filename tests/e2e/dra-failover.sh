#!/usr/bin/env bash
# devshare serve's DRA allocation under faults, on the real control plane
# with kube-controller-manager's resourceclaim controller:
#   tests/e2e/control-plane.sh run --controller-manager -- tests/e2e/dra-failover.sh
# Two replicas (users dra-a and dra-b, each holding only the chart's
# ClusterRole for DRA) serve the DeviceClass hami-gpu by binpack, electing a
# leader on the Lease default/devshare-dra; the webhook (pods with DRA
# claims, failurePolicy Fail) goes through ready_proxy.py to every replica
# whose cache is synced (/readyz/admission), as the chart's Service does.
#   1. The leader SIGKILLed in the middle of one pod's claim writes: a
#      ValidatingAdmissionPolicy refuses the status write of its claim named
#      "held", so the leader has written the claim "first" only when it is
#      killed; the policy goes, the follower takes the Lease, keeps the first
#      allocation, puts the held claim on the same node, and the pod is bound.
#   2. DRA_FAILOVER_PODS pods (60; the documented long run 1,000) from
#      ResourceClaimTemplates asking 10 %, 25 %, 50 % or all of a GPU, or two
#      claims of 25 %, created at DRA_FAILOVER_RATE pods/s (20) on
#      DRA_FAILOVER_NODES nodes of 4 x 40 GiB GPUs (by default enough for
#      about 9 in 10 of them), while the leader is SIGKILLed
#      DRA_FAILOVER_KILLS times (1; 5 for 1,000 pods), each a random
#      0.5-DRA_FAILOVER_KILL_MAX s (3; 12 for 1,000 pods) after the pods
#      start or after the previous takeover (seed DRA_FAILOVER_SEED, 1), and
#      started again as the follower.
# At the end, from the API objects alone (dra_recount.py): no device over its
# capacity, no share of a device in two claims, no claim reserved for two
# pods, every bound pod's claims allocated on its node, no pod left gated
# while its claims fit a node's free capacity, none ungated and unbound, and
# as many pods bound as the recount says fit; no claim write by a replica
# while the other held the Lease (audit log against the Lease, sampled every
# 0.5 s). Needs DEVSHARE and E2E_BIN_ENV (helm).
# Prints "e2e-dra-failover: N passed, N failed" last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
need_binaries
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"

pods=${DRA_FAILOVER_PODS:-60}
seed=${DRA_FAILOVER_SEED:-1}
rate=${DRA_FAILOVER_RATE:-20}
kills=${DRA_FAILOVER_KILLS:-1}
kill_max=${DRA_FAILOVER_KILL_MAX:-3}
# About 35.5 cores a pod on average, 400 a node: 9 in 10 of the pods fit.
nodes=${DRA_FAILOVER_NODES:-$(( (pods * 355 * 9 / 10 + 3999) / 4000 ))}
settle=${DRA_FAILOVER_SETTLE:-$(( 90 + pods / 5 ))}

passed=0 failed=0
ns=/api/v1/namespaces/default
work=$E2E_DIR/failover
mkdir -p "$work"
declare -A port pid
port[a]=$(free_port) port[b]=$(free_port)
webhook_port=$(free_port)
helpers=()
trap 'for r in a b; do [ -n "${pid[$r]:-}" ] && kill -9 "${pid[$r]}" 2>/dev/null; done
      for p in "${helpers[@]}"; do kill "$p" 2>/dev/null; done' EXIT

start_replica() {  # start_replica a|b: devshare serve as dra-a or dra-b, electing on the Lease
  "$DEVSHARE" serve --kubeconfig "$E2E_DIR/dra-$1.kubeconfig" --listen "127.0.0.1:${port[$1]}" \
    --tls-cert "$SERVE_CERT" --tls-key "$SERVE_KEY" --leader elect --hostname "dra-$1" \
    --lease-namespace default --lease-name devshare-dra --dra-device-class hami-gpu \
    --dra-policy binpack --qps 100 --burst 200 >>"$E2E_DIR/logs/devshare-dra-$1.log" 2>&1 &
  pid[$1]=$!
  disown "${pid[$1]}"  # killed on purpose: no job message
}
kill_replica() {  # kill_replica a|b: SIGKILL, returns once it is gone
  kill -9 "${pid[$1]}" 2>/dev/null
  while kill -0 "${pid[$1]}" 2>/dev/null; do sleep 0.05; done
  pid[$1]=
}
ready() { curl -sfk "https://127.0.0.1:${port[$1]}/readyz" >/dev/null; }
admits() { curl -sfk "https://127.0.0.1:${port[$1]}/readyz/admission" >/dev/null; }
holder() {  # the replica holding the Lease (a or b), or nothing
  kapi GET /apis/coordination.k8s.io/v1/namespaces/default/leases/devshare-dra 2>/dev/null |
    jfield spec.holderIdentity | sed -n 's/^dra-\([ab]\).*/\1/p'
}
other() { [ "$1" = a ] && echo b || echo a; }
leads() { [ "$(holder)" = "$1" ] && ready "$1"; }
# kill_leader LABEL [COMMAND...]: the leader SIGKILLed (COMMAND run right
# after), the other replica ready as the new leader once the Lease has
# expired, then the killed one started again (a follower: a new identity,
# which would otherwise race the other for the expired Lease); says on stderr
# what the claims were at the kill and when the other took over.
kill_leader() {
  local label=$1 leader t; shift
  leader=$(holder)
  [ -n "$leader" ] && [ -n "${pid[$leader]:-}" ] || { echo "$label: no leader to kill" >&2; return 1; }
  t=$(now)
  kill_replica "$leader"
  claims_state >"$work/kill-state"
  echo "$label: replica $leader killed; then $(cat "$work/kill-state")" >&2
  [ $# -eq 0 ] || "$@" >/dev/null || return 1
  wait_until 60 leads "$(other "$leader")" || { echo "$label: $(other "$leader") did not take over" >&2; return 1; }
  echo "$label: replica $(other "$leader") leads $(since "$t") s after the kill" >&2
  start_replica "$leader"
}
claims_state() {  # claims allocated, claims with the finalizer only (a write in flight), of the pods
  kapi GET "$DRA_API/namespaces/default/resourceclaims" | python3 -c '
import json, sys
claims = json.load(sys.stdin)["items"]
alloc = [c for c in claims if c.get("status", {}).get("allocation")]
mid = [c for c in claims if not c.get("status", {}).get("allocation")
       and "resource.kubernetes.io/delete-protection" in c["metadata"].get("finalizers", [])]
print(f"{len(claims)} claims made, {len(alloc)} allocated, {len(mid)} with the finalizer but no allocation yet")'
}
lease_sampler() {  # every 0.5 s: the time and the Lease holder, to $work/lease
  while :; do
    printf '%s %s\n' "$(date +%s.%N)" "$(holder)" >>"$work/lease"
    sleep 0.5
  done
}

# --- the cluster ------------------------------------------------------------
t0=$SECONDS
echo "dra-failover: $pods pods, $nodes nodes of 4 GPUs, seed $seed, $kills kill(s) 0.5-$kill_max s apart"
dra_node_json NODE-NAME >"$work/node.json"
check "create $nodes nodes" bulk_nodes "$nodes" "$work/node.json"
publish() {
  local i
  for ((i = 0; i < nodes; i++)); do
    kapi POST "$DRA_API/resourceslices" "$(hami_dra_slice_json "$(printf 'node-%05d' "$i")" 40Gi 40Gi 40Gi 40Gi)" \
      >/dev/null || return 1
  done
}
check "publish each node's 4 GPUs as HAMi's DRA driver does" publish
check "create the DeviceClass hami-gpu" kapi POST "$DRA_API/deviceclasses" "$(hami_dra_class_json hami-gpu)"
templates() {
  local spec
  for spec in "share-10 10 4Gi" "share-25 25 10Gi" "share-50 50 20Gi" "whole 100 40Gi"; do
    set -- $spec
    kapi POST "$DRA_API/namespaces/default/resourceclaimtemplates" \
      "$(dra_template_json "$1" "{\"cores\":\"$2\",\"memory\":\"$3\"}")" >/dev/null || return 1
  done
}
check "create the templates share-10, share-25, share-50, whole" templates
check "identities dra-a and dra-b, with only the chart's ClusterRole for DRA" dra_identity dra-a dra-b

start_replica a
start_replica b
python3 "$here/ready_proxy.py" --listen "$webhook_port" --ready-path /readyz/admission \
  --backend "127.0.0.1:${port[a]}" --backend "127.0.0.1:${port[b]}" --ca "$KUBE_CA" \
  >"$E2E_DIR/logs/webhook-proxy.log" 2>&1 &
helpers+=($!)
some_leader() { leads a || leads b; }
check "one replica leads and is ready" wait_until 60 some_leader
leader=$(holder)
follower_synced() { admits "$(other "$leader")" && ! ready "$(other "$leader")"; }
check "the other replica ($(other "$leader")) is synced for admission, not ready (a follower)" \
  wait_until 30 follower_synced
lease_sampler &
helpers+=($!)
webhook=$(cat <<EOF
{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration",
 "metadata":{"name":"devshare-dra"},
 "webhooks":[{"name":"dra.pods.devshare.e2e","clientConfig":{"url":"https://127.0.0.1:$webhook_port/webhook","caBundle":"$CA_BUNDLE"},
   "rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}],
   "namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"default"}},
   "matchConditions":[{"name":"has-dra-claims","expression":"has(object.spec.resourceClaims)"}],
   "failurePolicy":"Fail","sideEffects":"None","admissionReviewVersions":["v1"],"timeoutSeconds":10}]}
EOF
)
check "register the webhook (pods with DRA claims, failurePolicy Fail)" \
  kapi POST /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations "$webhook"
gates_dry_run() {
  kapi POST "$ns/pods?dryRun=All" "$(pod_json_from probe gpu=share-10)" | jfield spec.schedulingGates |
    grep -q "\"$DRA_GATE\""
}
check "the webhook gates a pod of hami-gpu" wait_until 30 gates_dry_run
echo "dra-failover: set up in $((SECONDS - t0)) s"

# --- 1. the leader killed between the two claims of one pod -------------------
t1=$SECONDS
check "an admission policy holds back the allocation of claims named held" hold_claim_policy
sleep 2  # the policy reaches the API server's admission chain
check "create pod m1 with claims first (share-50) and held (share-50)" create_gated m1 first=share-50 held=share-50
check "the leader allocates m1's first claim; the held one is refused" wait_until 60 first_allocated_only m1
sleep 1  # a retry of the held claim's write
first=$(claim_of m1 first)
kapi GET "$DRA_API/namespaces/default/resourceclaims/$first" | jfield status.allocation >"$work/first-before"
check "the leader SIGKILLed with m1 half written, the policy's binding removed: the follower takes over" \
  kill_leader "mid-pod kill" kapi DELETE /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/hold-claim
check "m1's held claim is allocated by the new leader and m1 bound" wait_until 60 is_placed m1 held
check "m1's first claim kept its allocation" \
  diff "$work/first-before" <(kapi GET "$DRA_API/namespaces/default/resourceclaims/$first" | jfield status.allocation)
m1_node=$(placed m1 held | cut -d' ' -f1)
check "m1's first claim is on m1's node (${m1_node:-?}) too" placed_on "$m1_node" m1 first
check "the killed replica is back, synced for admission" wait_until 60 admits "$(other "$(holder)")"
check "no device over its capacity, no share in two claims" within_capacity
echo "dra-failover: the mid-pod kill took $((SECONDS - t1)) s"

# --- 2. pods from templates while the leader is killed at random moments -----
t2=$SECONDS
# The pods' templates and the kills' delays, from the seed.
python3 - "$pods" "$seed" "$kills" "$kill_max" >"$work/plan" <<'PY'
import random, sys
n, seed, kills, kill_max = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rng = random.Random(seed)
shapes = [("share-10", 0.30), ("share-25", 0.30), ("share-50", 0.25), ("whole", 0.10), ("pair", 0.05)]
print(" ".join(f"{rng.uniform(0.5, kill_max):.1f}" for _ in range(kills)))
for i in range(n):
    print(rng.choices([s for s, _ in shapes], [w for _, w in shapes])[0])
PY
read -ra delays <"$work/plan"
tail -n +2 "$work/plan" | sort | uniq -c | awk '{printf "%s %s, ", $1, $2} END {print "pods"}'
# create_pods: the pods dra-00000.. in the background at $rate a second over
# four connections, each created again while the webhook is not answered (a
# replica killed under its connection); $work/created counts them.
python3 - "$rate" "$work" <<'PY' >"$work/create.log" 2>&1 &
import concurrent.futures, http.client, json, os, ssl, sys, threading, time, urllib.parse
rate, work = float(sys.argv[1]), sys.argv[2]
shapes = open(f"{work}/plan").read().split("\n")[1:]
shapes = [s for s in shapes if s]
ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
ctx.load_cert_chain(os.environ["KUBE_CLIENT_CERT"], os.environ["KUBE_CLIENT_KEY"])
url = urllib.parse.urlparse(os.environ["KUBE_SERVER"])
start = time.time()
lock = threading.Lock()
done = {"created": 0, "retries": 0, "failed": 0}
def pod(i, shape):
    claims = [("gpu", shape)] if shape != "pair" else [("gpu", "share-25"), ("gpu2", "share-25")]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"dra-{i:05d}", "labels": {"run": "failover"}},
            "spec": {"terminationGracePeriodSeconds": 0,
                     "resourceClaims": [{"name": c, "resourceClaimTemplateName": t} for c, t in claims],
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m"},
                                                   "claims": [{"name": c} for c, _ in claims]}}]}}
def create(stripe):
    conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=30)
    for i in range(stripe, len(shapes), 4):
        time.sleep(max(0.0, start + i / rate - time.time()))
        for attempt in range(60):
            try:
                conn.request("POST", "/api/v1/namespaces/default/pods", json.dumps(pod(i, shapes[i])),
                             {"Content-Type": "application/json"})
                r = conn.getresponse()
                data = r.read()
                status = r.status
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=30)
                status, data = 0, b""
            if status < 300 or status == 409:
                with lock:
                    done["created"] += 1
                break
            with lock:
                done["retries"] += 1
            print(f"dra-{i:05d}: HTTP {status} {data[:160]!r}", flush=True)
            time.sleep(0.5)
        else:
            with lock:
                done["failed"] += 1
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    list(pool.map(create, range(4)))
print(f"created {done['created']}, {done['retries']} tries again, {done['failed']} given up, "
      f"in {time.time() - start:.1f} s", flush=True)
with open(f"{work}/created", "w") as f:
    f.write(f"{done['created']} {done['failed']}\n")
PY
creator=$!
helpers+=($creator)
rm -f "$work/created"
k=0
for delay in "${delays[@]}"; do
  k=$((k + 1))
  sleep "$delay"
  echo "kill $k at +$((SECONDS - t2)) s of the run: $(claims_state)"
  check "kill $k: the leader SIGKILLed at a random moment, the follower takes over" kill_leader "kill $k"
done
all_created() {
  local c f
  wait "$creator"
  read -r c f <"$work/created" && [ "$c" = "$pods" ] && [ "$f" = 0 ]
}
check "every pod created (the webhook answered by the replica left)" all_created
tail -n 1 "$work/create.log"
settled() { dra_recount --settled --only room,unbound,waiting >/dev/null 2>&1; }  # over-capacity does not settle
t_settle=$SECONDS
if wait_until "$settle" settled; then
  echo "dra-failover: settled $((SECONDS - t_settle)) s after the last kill and creation"
else
  echo "dra-failover: not settled after $settle s"
fi
echo "dra-failover: the run of $pods pods took $((SECONDS - t2)) s"

# --- checks, from the API objects ---------------------------------------------
dra_recount --settled --json >"$work/final.json"
python3 -c '
import json, sys
sys.path.insert(0, sys.argv[2])
import dra_recount
r = json.load(open(sys.argv[1]))
for line in dra_recount.summary_lines(r, 10):
    print(line)
print("counts:", ", ".join(f"{k} {v}" for k, v in sorted(r["counts"].items())))' "$work/final.json" "$here"
none_of() {  # none_of KIND...: final.json names no problem of these kinds
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["problems"]
sys.exit(1 if any(r[k] for k in sys.argv[2:]) else 0)' "$work/final.json" "$@"
}
count_of() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["counts"].get(sys.argv[2], 0))' "$work/final.json" "$1"; }
check "no device over its capacity (consumed capacity summed over the allocated claims)" none_of over unknown
check "no share of a device in two claims, no claim reserved for two pods" none_of shared reserved
check "every bound pod's claims allocated, reserved for it, on its node" none_of split
check "no pod left gated while its claims fit a node" none_of room waiting
check "no pod ungated and not bound" none_of unbound
bound=$(count_of bound) gated=$(count_of gated) total=$(count_of pods)
check "every pod bound or gated with no room: $bound bound, $gated gated, of $total" \
  test "$((bound + gated))" -eq "$total" -a "$total" -eq "$((pods + 1))" -a "$bound" -gt 0
stale_writes() {  # writes by a replica while the Lease was the other's, at the samples before and after
  python3 - "$AUDIT_LOG" "$work/lease" <<'PY'
import bisect, datetime, json, sys
samples = []
for line in open(sys.argv[2]):
    parts = line.split()
    samples.append((float(parts[0]), parts[1] if len(parts) > 1 else ""))
times = [t for t, _ in samples]
stale, writes = [], 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    who = e.get("user", {}).get("username", "")
    ref = e.get("objectRef") or {}
    if who not in ("dra-a", "dra-b") or e.get("verb") not in ("create", "update", "patch", "delete") \
            or ref.get("resource") in ("leases", "events"):
        continue
    t = datetime.datetime.fromisoformat(e["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
    i = bisect.bisect_right(times, t)
    if i == 0 or i == len(times):
        continue
    writes += 1
    before, after = samples[i - 1][1], samples[i][1]
    if before and after and before != who[-1] and after != who[-1]:
        stale.append(f"{who} {e['verb']} {ref.get('resource')}/{ref.get('subresource', '')} {ref.get('name')}")
print(f"{writes} writes by the replicas, {len(stale)} while the other held the Lease", *stale[:5], sep="\n")
sys.exit(1 if stale else 0)
PY
}
sleep 2  # the audit log's batch
check "no write by a replica while the other held the Lease" stale_writes
stale_writes | head -1

echo "dra-failover test took $((SECONDS - t0))s"
echo "e2e-dra-failover: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
