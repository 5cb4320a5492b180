#!/usr/bin/env bash
# devshare serve against a real kube-apiserver and kube-scheduler (the control
# plane of control-plane.sh, started with scheduler-devshare.yaml and
# E2E_EXTENDER_URL=https://127.0.0.1:$DEVSHARE_PROXY_PORT). Two devshare
# replicas elect a leader on a Lease; ready_proxy.py sends kube-scheduler and
# the API server to the ready one, as a Service would; plugin_standin.py
# plays the device plugins' part after Allocate (bind-phase success, lock
# released), as there is no kubelet. Checks:
#   - the webhook moves GPU pods to schedulerName devshare-scheduler;
#   - pods are bound to the node `devshare explain` predicts, with device
#     annotations on devices of that node;
#   - a pod that fits nowhere gets a FailedScheduling event with the reasons;
#   - devshare explain --pod NAMESPACE/NAME and devshare top read the live
#     cluster: through the admin's kubeconfig, one whose user is an exec
#     credential plugin, and two files in $KUBECONFIG with --context;
#   - the leader is killed: the other replica takes over after the Lease
#     expires, pods are bound again, and no device is over its memory.
# Prints "e2e-devshare: N passed, N failed" last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run}"
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"
: "${DEVSHARE_PROXY_PORT:?set DEVSHARE_PROXY_PORT to the port of E2E_EXTENDER_URL}"

passed=0 failed=0
ns=/api/v1/namespaces/default
port_a=$(free_port) port_b=$(free_port)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done' EXIT

replica() {  # replica NAME PORT: starts devshare serve, prints its pid
  "$DEVSHARE" serve --kubeconfig "$SERVE_KUBECONFIG" --listen "127.0.0.1:$2" \
    --tls-cert "$SERVE_CERT" --tls-key "$SERVE_KEY" --leader elect --hostname "$1" \
    --lease-namespace default --lease-name devshare --scheduler-name devshare-scheduler \
    --node-policy binpack --gpu-policy spread --qps 50 --burst 100 \
    >"$E2E_DIR/logs/devshare-$1.log" 2>&1 &
  echo $!
}
ready() { curl -sfk "https://127.0.0.1:$1/readyz" >/dev/null; }

# Nodes: two with 2 GPUs of 40 GiB, one with 1 GPU of 16 GiB (10 slots each).
for spec in "gpu-a 2 40960" "gpu-b 2 40960" "gpu-c 1 16384"; do
  set -- $spec
  check "create node $1 ($2 GPUs, $3 MiB)" create_node "$(gpu_node_json "$1" "$2" 10 "$3")"
done

pid_a=$(replica a "$port_a"); pids+=("$pid_a")
pid_b=$(replica b "$port_b"); pids+=("$pid_b")
start_plugin_standin 0
pids+=($!)
python3 "$here/ready_proxy.py" --listen "$DEVSHARE_PROXY_PORT" --backend "127.0.0.1:$port_a" \
  --backend "127.0.0.1:$port_b" --ca "$KUBE_CA" >"$E2E_DIR/logs/ready-proxy.log" 2>&1 &
pids+=($!)
check "one replica leads and is ready" wait_until 60 bash -c "curl -sfk https://127.0.0.1:$port_a/readyz || curl -sfk https://127.0.0.1:$port_b/readyz"
leader=a; leader_pid=$pid_a; other_port=$port_b
ready "$port_b" && { leader=b; leader_pid=$pid_b; other_port=$port_a; }
check "the other replica is not ready (a follower)" bash -c "! curl -sfk https://127.0.0.1:$other_port/readyz"

webhook=$(cat <<EOF
{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration",
 "metadata":{"name":"devshare"},
 "webhooks":[{"name":"pods.devshare.e2e","clientConfig":{"url":"https://127.0.0.1:$DEVSHARE_PROXY_PORT/webhook","caBundle":"$CA_BUNDLE"},
   "rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}],
   "namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"default"}},
   "failurePolicy":"Fail","sideEffects":"None","admissionReviewVersions":["v1"],"timeoutSeconds":10}]}
EOF
)
check "register the webhook" kapi POST /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations "$webhook"
gpu_pod() {  # gpu_pod NAME GPUS MEM_MIB
  pod_json "$1" "{\"cpu\":\"100m\",\"nvidia.com/gpu\":\"$2\",\"nvidia.com/gpumem\":\"$3\"}"
}
mutated() {
  [ "$(kapi POST "$ns/pods?dryRun=All" "$(gpu_pod probe 1 1000)" | jfield spec.schedulerName)" = devshare-scheduler ]
}
check "the webhook moves GPU pods to devshare-scheduler" wait_until 30 mutated

bound_to() { [ "$(kapi GET "$ns/pods/$1" | jfield spec.nodeName)" = "$2" ]; }
bound() { [ -n "$(kapi GET "$ns/pods/$1" | jfield spec.nodeName)" ]; }
devices_on_node() {  # the pod's device annotation names GPUs of its node
  local pod node devices
  pod=$(kapi GET "$ns/pods/$1")
  node=$(jfield spec.nodeName <<<"$pod")
  devices=$(jfield 'metadata.annotations["hami.io/vgpu-devices-allocated"]' <<<"$pod")
  [ -n "$devices" ] && grep -q "GPU-$node-" <<<"$devices"
}

for p in "p1 1 30000" "p2 1 30000" "p3 1 20000" "p4 2 10000"; do
  set -- $p
  body=$(gpu_pod "$1" "$2" "$3")
  want=$(predict "$body")
  check "$1 ($2 GPU x $3 MiB): created, devshare explain predicts ${want:-nothing}" kapi POST "$ns/pods" "$body"
  check "$1 is bound to ${want:-?}" wait_until 60 bound_to "$1" "$want"
  check "$1 carries devices of its node" devices_on_node "$1"
  check "$1 was moved to devshare-scheduler" bash -c "[ \"\$1\" = devshare-scheduler ]" _ \
    "$(kapi GET "$ns/pods/$1" | jfield spec.schedulerName)"
done

check "create a pod asking 8 GPUs (fits nowhere)" kapi POST "$ns/pods" "$(gpu_pod big 8 1000)"
reasons() {
  kapi GET "$ns/events?fieldSelector=involvedObject.name=big,reason=FailedScheduling" |
    jfield 'items[0].message' | grep -q 'NodeInsufficientDevice'
}
check "its FailedScheduling event carries devshare's reasons" wait_until 60 reasons

# --- devshare explain --pod and devshare top on the live cluster -------------------------
live=$E2E_DIR/live
mkdir -p "$live"
explain_big() {  # explain_big ARGS...: the pending pod, explained from the API server
  "$DEVSHARE" explain --pod default/big --json "$@" >"$live/big.json" 2>"$live/big.err" &&
    python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
nodes = {n["node"]: n for n in e["nodes"]}
ok = e["chosen"] is None and set(nodes) == {"gpu-a", "gpu-b", "gpu-c"} and all(
    not n["fits"] and "NodeInsufficientDevice" in n["reason"] for n in nodes.values())
sys.exit(0 if ok else 1)' "$live/big.json"
}
check "explain --pod default/big reads the cluster: no node fits, each says why" \
  explain_big --kubeconfig "$KUBECONFIG"
explain_p1() {  # p1 from the API server: as explain on files of the same objects, p1 left out
  kapi GET /api/v1/nodes >"$live/nodes.json" && kapi GET "$ns/pods" >"$live/pods.json" &&
    python3 - "$live" <<'PY' &&
import json, sys
d = sys.argv[1]
pods = json.load(open(f"{d}/pods.json"))["items"]
items = json.load(open(f"{d}/nodes.json"))["items"] + [p for p in pods if p["metadata"]["name"] != "p1"]
for item in items:
    item.setdefault("apiVersion", "v1")
    item.setdefault("kind", "Pod" if "containers" in item.get("spec", {}) else "Node")
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(f"{d}/cluster.json", "w"))
p1 = next(p for p in pods if p["metadata"]["name"] == "p1")
p1.setdefault("apiVersion", "v1")
p1.setdefault("kind", "Pod")
json.dump(p1, open(f"{d}/p1.json", "w"))
PY
    [ "$("$DEVSHARE" explain --pod default/p1 --json --kubeconfig "$KUBECONFIG" | jfield chosen)" = \
      "$("$DEVSHARE" explain --cluster "$live/cluster.json" --pod "$live/p1.json" --json | jfield chosen)" ]
}
check "explain --pod default/p1 chooses as explain does on files of the same objects" explain_p1
check "explain --pod names a pod that is not there" bash -c \
  'out=$("$1" explain --pod default/nope --kubeconfig "$2" 2>&1); rc=$?; [ "$rc" -eq 1 ] && grep -q "pod default/nope not found" <<<"$out"' \
  _ "$DEVSHARE" "$KUBECONFIG"
top_matches() {  # top's memory in use per GPU equals what the pods' annotations say
  "$DEVSHARE" top --json --kubeconfig "$KUBECONFIG" >"$live/top.json" &&
    kapi GET "$ns/pods" >"$live/pods.json" && python3 -c '
import json, sys
top, pods = (json.load(open(f)) for f in sys.argv[1:])
used = {}
for p in pods["items"]:
    for c in p["metadata"].get("annotations", {}).get("hami.io/vgpu-devices-allocated", "").split(";"):
        for dev in filter(None, c.split(":")):
            uuid, _, mem = dev.split(",")[:3]
            used[uuid] = used.get(uuid, 0) + int(mem)
got = {d["uuid"]: d["memory"]["used"] for n in top["nodes"] for d in n["devices"]}
named = {n["node"] for n in top["nodes"]}
ok = named == {"gpu-a", "gpu-b", "gpu-c"} and used and all(got.get(u) == m for u, m in used.items())
print(used, got)
sys.exit(0 if ok else 1)' "$live/top.json" "$live/pods.json"
}
check "top: every GPU with the memory its pods hold" top_matches
check "top prints a table of the GPU nodes" bash -c \
  '"$1" top --gpus --kubeconfig "$2" | grep -qE "^gpu-a +2 +[0-9]+/81920"' _ "$DEVSHARE" "$KUBECONFIG"

# A kubeconfig whose user is an exec credential plugin (as EKS, GKE and AKS
# write them): the command prints the API server's static token for
# exec-user (control-plane.sh), with an expiry.
cat >"$live/get-token" <<'SH'
#!/bin/sh
# KUBERNETES_EXEC_INFO must say the call is not interactive.
case "$KUBERNETES_EXEC_INFO" in *'"interactive":false'*) ;; *) echo "no exec info" >&2; exit 1;; esac
echo called >>"$(dirname "$0")/get-token.calls"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"2099-01-01T00:00:00Z"}}\n' "$TOKEN"
SH
chmod +x "$live/get-token"
exec_kubeconfig() {  # exec_kubeconfig FILE TOKEN
  cat >"$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "$KUBE_SERVER", certificate-authority-data: "$CA_BUNDLE"}
users:
- name: exec-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./get-token
      env: [{name: TOKEN, value: "$2"}]
      installHint: the e2e test writes get-token next to this file
contexts:
- {name: exec, context: {cluster: e2e, user: exec-user}}
current-context: exec
KUBECONFIG
}
exec_kubeconfig "$live/exec.kubeconfig" e2e-exec-token
exec_kubeconfig "$live/exec-bad.kubeconfig" wrong-token
check "an exec credential plugin's token reads the cluster (top)" bash -c \
  '"$1" top --kubeconfig "$2" | grep -q "^gpu-a "' _ "$DEVSHARE" "$live/exec.kubeconfig"
check "the plugin ran" grep -q called "$live/get-token.calls"
# The whole output first: grep -q ends at the first match, and top's next
# write to the closed pipe would make its exit status SIGPIPE's.
check "a token the API server refuses is an error naming 401" bash -c \
  'out=$("$1" top --kubeconfig "$2" 2>&1); rc=$?; [ "$rc" -eq 1 ] && grep -q "answered 401" <<<"$out"' \
  _ "$DEVSHARE" "$live/exec-bad.kubeconfig"
# $KUBECONFIG with two files, the first with two contexts: its current one
# a dead server, the other the admin user of the second file.
cat >"$live/two.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: dead
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
contexts:
- {name: dead, context: {cluster: dead}}
- {name: admin-too, context: {cluster: e2e, user: admin}}
current-context: dead
KUBECONFIG
check "two files in \$KUBECONFIG: the first file's current context is used" bash -c \
  'out=$(KUBECONFIG="$2:$3" "$1" top 2>&1); rc=$?; [ "$rc" -eq 1 ] && grep -q "127.0.0.1" <<<"$out"' \
  _ "$DEVSHARE" "$live/two.kubeconfig" "$KUBECONFIG"
check "--context picks the other, its cluster and user from the second file" bash -c \
  'KUBECONFIG="$2:$3" "$1" top --context admin-too | grep -q "^gpu-b "' \
  _ "$DEVSHARE" "$live/two.kubeconfig" "$KUBECONFIG"

# Failover: kill the leader without letting it release the Lease.
kill -9 "$leader_pid"
t_kill=$SECONDS
check "the other replica takes over" wait_until 60 ready "$other_port"
echo "failover: the follower was ready $((SECONDS - t_kill)) s after the leader died"
for p in "q1 1 30000" "q2 1 8000"; do
  set -- $p
  check "$1 is created after the failover" kapi POST "$ns/pods" "$(gpu_pod "$1" "$2" "$3")"
  check "$1 is bound by the new leader" wait_until 90 bound "$1"
done
no_overuse() {  # sum the memory every pod's annotation takes from each GPU
  kapi GET "$ns/pods" | python3 -c '
import json, sys
used, cap = {}, {"gpu-a": 40960, "gpu-b": 40960, "gpu-c": 16384}
for p in json.load(sys.stdin)["items"]:
    value = p["metadata"].get("annotations", {}).get("hami.io/vgpu-devices-allocated", "")
    for container in value.split(";"):
        for dev in filter(None, container.split(":")):
            uuid, _, mem, _ = dev.split(",")[:4]
            used[uuid] = used.get(uuid, 0) + int(mem)
over = {u: m for u, m in used.items() if m > cap[u.split("GPU-")[1].rsplit("-", 1)[0]]}
print(used, over)
sys.exit(1 if over or not used else 0)'
}
check "no GPU holds more memory than it has (no double allocation)" no_overuse

echo "e2e-devshare: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
