# shellcheck shell=bash
# Helpers for end-to-end tests against the control plane of control-plane.sh:
# source this file after the env file's variables are exported (control-plane.sh
# run does that). Needs curl and python3 (standard library only).

# kapi METHOD PATH [BODY [CONTENT-TYPE]]: calls the API server with the admin
# client certificate, accepting KAPI_ACCEPT (application/json by default);
# prints the response body; fails on HTTP >= 400 or no answer.
kapi() {
  local method=$1 path=$2 body=${3:-} ctype=${4:-application/json}
  local out code args
  out=$(mktemp)
  args=(-sS -o "$out" -w '%{http_code}' --max-time 30 -X "$method"
        --cacert "$KUBE_CA" --cert "$KUBE_CLIENT_CERT" --key "$KUBE_CLIENT_KEY"
        -H "Accept: ${KAPI_ACCEPT:-application/json}")
  [ -n "$body" ] && args+=(-H "Content-Type: $ctype" --data-binary "$body")
  if ! code=$(curl "${args[@]}" "$KUBE_SERVER$path"); then
    rm -f "$out"
    echo "kapi: $method $path: no answer from $KUBE_SERVER" >&2
    return 1
  fi
  cat "$out"
  if [ "$code" -ge 400 ]; then
    echo "kapi: $method $path -> HTTP $code: $(head -c 400 "$out")" >&2
    rm -f "$out"
    return 1
  fi
  rm -f "$out"
}

# jfield PATH: reads JSON on stdin, prints the value at a dotted path
# (e.g. spec.nodeName, status.allocatable.nvidia\.com/gpu is written
# 'status.allocatable["nvidia.com/gpu"]'); empty when absent. Objects and lists
# are printed as JSON.
jfield() {
  python3 -c '
import json, re, sys
v = json.load(sys.stdin)
for part in re.findall(r"\[\"([^\"]*)\"\]|\[(\d+)\]|([^.\[\]]+)", sys.argv[1]):
    key = part[0] or part[2]
    if part[1]:
        i = int(part[1]); v = v[i] if isinstance(v, list) and i < len(v) else None
    else:
        v = v.get(key) if isinstance(v, dict) else None
    if v is None:
        break
print("" if v is None else v if isinstance(v, str) else json.dumps(v))
' "$1"
}

# gpu_node_json NAME GPUS SLOTS MEM_MIB [TYPE]: a Node whose NVIDIA GPUs are
# registered as HAMi's device plugin does (hami.io/node-nvidia-register, JSON
# form, and a "Reported" handshake), with allocatable cpu, memory, pods and
# nvidia.com/gpu = GPUS * SLOTS.
gpu_node_json() {
  python3 - "$@" <<'EOF'
import json, sys, time
name, gpus, slots, mem = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
gtype = sys.argv[5] if len(sys.argv) > 5 else "NVIDIA A100-SXM4-40GB"
devices = [{"id": f"GPU-{name}-{i}", "index": i, "count": slots, "devmem": mem, "devcore": 100,
            "type": gtype, "numa": 0, "mode": "hami-core", "health": True} for i in range(gpus)]
resources = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": str(gpus * slots)}
print(json.dumps({
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": name,
                 "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "gpu": "on"},
                 "annotations": {
                     "hami.io/node-nvidia-register": json.dumps(devices, separators=(",", ":")),
                     "hami.io/node-handshake": "Reported " + time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}},
    "spec": {},
    "status": {"capacity": resources, "allocatable": resources}}))
EOF
}

# node_ready_patch: the status a kubelet would report: Ready with a fresh heartbeat.
node_ready_patch() {
  local now
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  printf '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"set by the e2e test","lastHeartbeatTime":"%s","lastTransitionTime":"%s"}]}}' "$now" "$now"
}

# create_node NODE_JSON: creates the Node, marks it Ready through the status
# subresource, and removes the node.kubernetes.io/not-ready taint that the
# TaintNodesByCondition admission plugin puts on every new Node (with no
# controller manager nothing else would take it off).
create_node() {
  local json=$1 name
  name=$(jfield metadata.name <<<"$json")
  kapi POST /api/v1/nodes "$json" >/dev/null
  kapi PATCH "/api/v1/nodes/$name/status" "$(node_ready_patch)" application/merge-patch+json >/dev/null
  kapi PATCH "/api/v1/nodes/$name" '{"spec":{"taints":null}}' application/merge-patch+json >/dev/null
}

# pod_json NAME [RESOURCES_JSON]: a pod with one container whose requests and
# limits are RESOURCES_JSON (default {"cpu":"100m"}); it is never run (no kubelet).
pod_json() {
  local name=$1 res=${2:-'{"cpu":"100m"}'}
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"requests":%s,"limits":%s}}]}}' \
    "$name" "$res" "$res"
}

# wait_until SECONDS COMMAND...: reruns COMMAND every 0.2 s until it succeeds;
# fails after SECONDS.
wait_until() {
  local limit=$1 t0=$SECONDS; shift
  until "$@" 2>/dev/null; do
    (( SECONDS - t0 < limit )) || return 1
    sleep 0.2
  done
}

# check DESCRIPTION COMMAND...: runs COMMAND quietly, prints "ok: ..." or
# "FAILED: ..." and counts it in the caller's `passed` and `failed`.
check() {
  local what=$1; shift
  if "$@" >/dev/null; then passed=$((passed + 1)); echo "ok: $what"
  else failed=$((failed + 1)); echo "FAILED: $what"; fi
}

# now: the wall clock in seconds (fractional); since T: seconds from T, to 0.1.
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}'; }
# wait_bound_or_nudge LABEL WAIT POD WHAT: waits WAIT seconds for POD's
# binding by kube-scheduler's own retry, then annotates it with the caller's
# `nudge` (a pod update kube-scheduler tries it again on) and waits 30 s
# more; says on stderr which it took (LABEL: the suite's name). Uses the
# caller's `bound POD`.
wait_bound_or_nudge() {
  local label=$1 wait=$2 pod=$3 what=$4 t waited
  t=$(now)
  if wait_until "$wait" bound "$pod"; then
    echo "$label: $pod bound $(since "$t") s after $what, by kube-scheduler's own retry" >&2
    return 0
  fi
  waited=$(since "$t") t=$(now)
  nudge "$pod"
  wait_until 30 bound "$pod" || return 1
  echo "$label: $pod still waiting $waited s after $what; bound $(since "$t") s after an annotation" >&2
}
# predict POD_JSON: the node explain_json chooses.
predict() { explain_json "$1" | jfield chosen; }

# explain_json POD_JSON [ARGS...]: what `$DEVSHARE explain --json` (binpack
# nodes, spread GPUs, ARGS added) says of the pod on the cluster as it is:
# every Node, and the pods and ResourceQuotas of the default namespace (the
# pods that are bound), the pod in that namespace unless it names one.
explain_json() {
  kapi GET /api/v1/nodes >"$E2E_DIR/nodes.json"
  kapi GET /api/v1/namespaces/default/pods >"$E2E_DIR/pods.json"
  kapi GET /api/v1/namespaces/default/resourcequotas >"$E2E_DIR/quotas.json"
  python3 - "$E2E_DIR" <<'PY' >"$E2E_DIR/cluster.json"
import json, sys
d = sys.argv[1]
kinds = {"nodes": "Node", "pods": "Pod", "quotas": "ResourceQuota"}
items = []
for name, kind in kinds.items():
    for item in json.load(open(f"{d}/{name}.json"))["items"]:
        if kind != "Pod" or item.get("spec", {}).get("nodeName"):
            items.append({"apiVersion": "v1", "kind": kind, **item})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
  # In namespace default, as the tests create it (its quotas apply).
  python3 -c 'import json, sys; p = json.loads(sys.argv[1]); p["metadata"].setdefault("namespace", "default")
print(json.dumps(p))' "$1" >"$E2E_DIR/pod.json"
  "$DEVSHARE" explain --json --node-policy binpack --gpu-policy spread --cluster "$E2E_DIR/cluster.json" \
    --pod "$E2E_DIR/pod.json" "${@:2}"
}

# free_port: a TCP port on 127.0.0.1 nothing listens on now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# proc_ticks PID: the CPU time (user+sys, every thread) a running process has
# used, in clock ticks (getconf CLK_TCK a second).
proc_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# need_wrk: installs Debian's wrk with apt-get when it is missing.
need_wrk() {
  command -v wrk >/dev/null && return 0
  echo "installing wrk (Debian)" >&2
  local sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq wrk >/dev/null
}

# bulk_nodes N TEMPLATE [FIRST [SLICE]]: creates N nodes named node-FIRST..
# (five digits; FIRST 0 by default) from the Node JSON in file TEMPLATE (its
# name NODE-NAME replaced), each Ready and untainted as create_node leaves it,
# and with SLICE (a file) the ResourceSlice of its devices from that JSON
# (NODE-NAME replaced too), over one connection.
bulk_nodes() {
  python3 - "$1" "$2" "$(node_ready_patch)" "${3:-0}" "${4:-}" <<'PY'
import http.client, json, os, ssl, sys, urllib.parse
n, template, ready, first = int(sys.argv[1]), open(sys.argv[2]).read(), sys.argv[3], int(sys.argv[4])
slice_template = open(sys.argv[5]).read() if sys.argv[5] else None
ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
ctx.load_cert_chain(os.environ["KUBE_CLIENT_CERT"], os.environ["KUBE_CLIENT_KEY"])
url = urllib.parse.urlparse(os.environ["KUBE_SERVER"])
conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx)
def call(method, path, body, ctype):
    conn.request(method, path, body, {"Content-Type": ctype})
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"{method} {path}: HTTP {r.status}: {data[:300]!r}")
for i in range(first, first + n):
    name = f"node-{i:05d}"
    call("POST", "/api/v1/nodes", template.replace("NODE-NAME", name), "application/json")
    call("PATCH", f"/api/v1/nodes/{name}/status", ready, "application/merge-patch+json")
    call("PATCH", f"/api/v1/nodes/{name}", '{"spec":{"taints":null}}', "application/merge-patch+json")
    if slice_template:
        call("POST", "/apis/resource.k8s.io/v1/resourceslices", slice_template.replace("NODE-NAME", name),
             "application/json")
PY
}

# load_pod_json I SCHEDULER [MIB]: pod load-I (five digits) asking one GPU
# for SCHEDULER: of MIB MiB, or by default of 4,000 to 20,000 MiB (a fixed
# sequence over I), or with MIB "none" of no memory (a plain extended
# resource, for kube-scheduler alone); with MIB "dra" or "dra-fill" a DRA
# claim from a ResourceClaimTemplate instead (dra_compare.py: that
# scenario's sequence of shares and whole GPUs).
load_pod_json() {
  python3 -c "$_load_pod_py"'
print(json.dumps(load_pod(int(sys.argv[1]), sys.argv[2], sys.argv[3])))' "$1" "$2" "${3:-mixed}"
}
_load_pod_py='
import json, sys
sys.path.insert(0, "'"$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"'")
def load_pod(i, scheduler, mib):
    if mib in ("dra", "dra-fill"):
        import dra_compare
        return dra_compare.pod(mib, i, scheduler)
    limits = {"nvidia.com/gpu": "1"}
    if mib != "none":
        limits["nvidia.com/gpumem"] = str(4000 + (i * 7919) % 16001) if mib == "mixed" else mib
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"load-{i:05d}"},
            "spec": {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"limits": limits}}]}}
'

# bulk_pods N SCHEDULER [MIB [FIRST]]: creates N pods load-FIRST..
# (load_pod_json; FIRST 0 by default) in the default namespace over four
# connections at once (pod i over connection i mod 4), as fast as the API
# server takes them: one connection, waiting for each answer, would make the
# creation rate the measure when the API server is busy.
bulk_pods() {
  python3 - "$1" "$2" "${3:-mixed}" "${4:-0}" <<PY
$_load_pod_py
import concurrent.futures, http.client, os, ssl, urllib.parse
n, scheduler, mib, first = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
ctx = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
ctx.load_cert_chain(os.environ["KUBE_CLIENT_CERT"], os.environ["KUBE_CLIENT_KEY"])
url = urllib.parse.urlparse(os.environ["KUBE_SERVER"])
def create(stripe, stride):
    conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx)
    for i in range(first + stripe, first + n, stride):
        pod = load_pod(i, scheduler, mib)
        conn.request("POST", "/api/v1/namespaces/default/pods", json.dumps(pod),
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        if r.status >= 300:
            return f"POST load-{i:05d}: HTTP {r.status}: {data[:300]!r}"
    return None
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    errors = [e for e in pool.map(create, range(4), [4] * 4) if e]
if errors:
    sys.exit(errors[0])
PY
}

# need_binaries: checks that this runs inside control-plane.sh run with
# E2E_BIN_ENV (scripts/k8s-binaries.sh's output) set, and loads the binaries'
# paths from it; exits with why otherwise.
need_binaries() {
  : "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run}"
  : "${E2E_BIN_ENV:?set E2E_BIN_ENV to the output of scripts/k8s-binaries.sh}"
  # shellcheck disable=SC1090
  . "$E2E_BIN_ENV"
}

# start_extender devshare|hami PORT KUBECONFIG QPS BURST LOG [ARGS...]: starts
# devshare serve or HAMi's scheduler (HAMI_SCHEDULER, with its chart's device
# config and flags) in the background as kube-scheduler's extender on
# 127.0.0.1:PORT over HTTPS (SERVE_CERT), as the client KUBECONFIG with QPS
# and BURST, binpack nodes and spread GPUs, ARGS added; $! is its PID.
start_extender() {
  local which=$1 port=$2 kubeconfig=$3 qps=$4 burst=$5 logf=$6
  shift 6
  case $which in
    devshare)
      "$DEVSHARE" serve --kubeconfig "$kubeconfig" --listen "127.0.0.1:$port" \
        --tls-cert "$SERVE_CERT" --tls-key "$SERVE_KEY" --scheduler-name devshare-scheduler \
        --node-policy binpack --gpu-policy spread --qps "$qps" --burst "$burst" "$@" >"$logf" 2>&1 &
      ;;
    hami)
      [ -n "${HAMI_SCHEDULER:-}" ] || { echo "HAMi's scheduler was not built" >&2; return 1; }
      [ -s "$E2E_DIR/hami-device-config.yaml" ] ||
        hami_device_config >"$E2E_DIR/hami-device-config.yaml" || return 1
      KUBECONFIG=$kubeconfig "$HAMI_SCHEDULER" --http_bind "127.0.0.1:$port" \
        --cert_file "$SERVE_CERT" --key_file "$SERVE_KEY" \
        --device-config-file "$E2E_DIR/hami-device-config.yaml" \
        --metrics-bind-address "127.0.0.1:$(free_port)" \
        --scheduler-name hami-scheduler --node-scheduler-policy binpack --gpu-scheduler-policy spread \
        --kube-qps "$qps" --kube-burst "$burst" "$@" >"$logf" 2>&1 &
      ;;
    *) return 1 ;;
  esac
}

# as_host NAME COMMAND... &: COMMAND under the host name NAME (a UTS
# namespace: kube-scheduler takes its Lease identity from the host name), in
# place of the background subshell, so that $! is COMMAND.
as_host() { exec unshare -u sh -c 'hostname "$0" && exec "$@"' "$@"; }

# start_scheduler_as HOST CONFIG: kube-scheduler with CONFIG under the host
# name HOST (its Lease holder identity starts with it), in the background,
# logging to $E2E_DIR/logs/kube-scheduler-HOST.log; $! is its PID.
start_scheduler_as() {
  as_host "$1" "$KUBE_SCHEDULER" --config "$2" --bind-address 127.0.0.1 --secure-port "$(free_port)" \
    --authentication-kubeconfig "$SCHEDULER_KUBECONFIG" \
    --authorization-kubeconfig "$SCHEDULER_KUBECONFIG" --v=2 >"$E2E_DIR/logs/kube-scheduler-$1.log" 2>&1 &
}

# start_plugin_standin DELAY_S: the device-plugin stand-in (plugin_standin.py)
# in the background, completing Allocate DELAY_S after a lock; $! is its PID.
start_plugin_standin() {
  python3 "$(dirname "${BASH_SOURCE[0]}")/plugin_standin.py" "$KUBE_SERVER" "$KUBE_CA" \
    "$KUBE_CLIENT_CERT" "$KUBE_CLIENT_KEY" --allocate-delay "$1" >>"$E2E_DIR/logs/plugin-standin.log" 2>&1 &
}

# bound_count: how many pods of the default namespace are bound: the bound
# ones from the API server's watch cache as a table of names (resourceVersion
# 0, includeObject None: a list of every pod object, a second apart, would
# load the API server the runs measure).
bound_count() {
  KAPI_ACCEPT='application/json;as=Table;g=meta.k8s.io;v=v1' \
    kapi GET "/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%21%3D&resourceVersion=0&includeObject=None" |
    python3 -c 'import json, sys; print(len(json.load(sys.stdin)["rows"] or []))'
}

# bound_above N LIMIT_S: waits until more than N pods are bound, looking once a
# second.
bound_above() {
  local t0=$SECONDS
  until [ "$(bound_count)" -gt "$1" ]; do
    ((SECONDS - t0 < $2)) || return 1
    sleep 1
  done
}

# over_allocated: how many devices the bound pods of the default namespace
# hold more memory or slots of than their node registers
# (hami.io/vgpu-devices-allocated against hami.io/node-nvidia-register).
over_allocated() {
  kapi GET /api/v1/nodes >"$E2E_DIR/nodes.json" &&
    kapi GET /api/v1/namespaces/default/pods >"$E2E_DIR/pods.json" &&
    python3 - "$E2E_DIR/nodes.json" "$E2E_DIR/pods.json" <<'PY'
import collections, json, sys
devices = {}
for n in json.load(open(sys.argv[1]))["items"]:
    for d in json.loads(n["metadata"].get("annotations", {}).get("hami.io/node-nvidia-register", "[]")):
        devices[d["id"]] = d
mem, slots = collections.Counter(), collections.Counter()
for p in json.load(open(sys.argv[2]))["items"]:
    if not p["spec"].get("nodeName"):
        continue
    value = p["metadata"].get("annotations", {}).get("hami.io/vgpu-devices-allocated", "")
    for container in value.split(";"):
        for device in filter(None, container.split(":")):
            uuid, _, used, _ = device.split(",")
            mem[uuid] += int(used)
            slots[uuid] += 1
print(sum(1 for d in set(mem) | set(slots)
          if d not in devices or mem[d] > devices[d]["devmem"] or slots[d] > devices[d]["count"]))
PY
}

# hami_device_config: the device configuration HAMi's chart (the shared
# tree's charts/hami, its default values) gives its scheduler, on stdout.
hami_device_config() {
  "$HELM" template hami "$E2E_HAMI_CHART" --show-only templates/scheduler/device-configmap.yaml |
    python3 -c '
import sys
out, inside = [], False
for line in sys.stdin.read().splitlines():
    if inside:
        if line.strip() and not line.startswith("    "):
            break
        out.append(line[4:])
    elif line.strip() == "device-config.yaml: |-":
        inside = True
if not out:
    sys.exit("no device-config.yaml in the chart")
print("\n".join(out))'
}
E2E_HAMI_CHART=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../../../shared/hami/v2.10.0/charts/hami

# --- DRA ----------------------------------------------------------------------
# The driver name HAMi's DRA driver publishes its GPUs under.
HAMI_DRA_DRIVER=hami-core-gpu.project-hami.io

# dra_node_json NAME [CPUS MEMORY_GIB]: a Node without devices of its own
# (32 CPUs, 128 GiB by default).
dra_node_json() {
  local cpu=${2:-32} mem=${3:-128}Gi
  printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","labels":{"kubernetes.io/hostname":"%s"}},"status":{"capacity":{"cpu":"%s","memory":"%s","pods":"110"},"allocatable":{"cpu":"%s","memory":"%s","pods":"110"}}}' \
    "$1" "$1" "$cpu" "$mem" "$cpu" "$mem"
}

# hami_dra_gpu_json MINOR MEMORY: one GPU as HAMi's DRA driver publishes it:
# consumable cores (100) and memory, shared by several claims.
hami_dra_gpu_json() {
  printf '{"name":"hami-gpu-%s","attributes":{"type":{"string":"hami-gpu"},"minor":{"int":%s}},"capacity":{"cores":{"value":"100","requestPolicy":{"default":"100","validRange":{"min":"0","max":"100","step":"1"}}},"memory":{"value":"%s","requestPolicy":{"default":"%s","validRange":{"min":"1Mi","max":"%s","step":"1Mi"}}}},"allowMultipleAllocations":true}' \
    "$1" "$1" "$2" "$2" "$2"
}

# hami_dra_slice_json NODE MEMORY...: the ResourceSlice NODE-gpus of one GPU
# of each MEMORY on NODE.
hami_dra_slice_json() {
  local node=$1 devices="" i=0; shift
  for memory in "$@"; do
    [ -n "$devices" ] && devices+=,
    devices+=$(hami_dra_gpu_json "$i" "$memory")
    i=$((i + 1))
  done
  printf '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"%s-gpus"},"spec":{"driver":"%s","nodeName":"%s","pool":{"name":"%s","generation":1,"resourceSliceCount":1},"devices":[%s]}}' \
    "$node" "$HAMI_DRA_DRIVER" "$node" "$node" "$devices"
}

# The DRA webhook entry's matchConditions expression, as the chart renders
# it (chart.sh checks that it does): pods with claims, or asking a class's
# implicit extended resource.
DRA_WEBHOOK_MATCH="has(object.spec.resourceClaims) || object.spec.containers.exists(c, has(c.resources) && has(c.resources.limits) && c.resources.limits.exists(r, r.startsWith('deviceclass.resource.kubernetes.io/'))) || (has(object.spec.initContainers) && object.spec.initContainers.exists(c, has(c.resources) && has(c.resources.limits) && c.resources.limits.exists(r, r.startsWith('deviceclass.resource.kubernetes.io/'))))"

# hami_dra_class_json NAME: a DeviceClass selecting the driver's devices.
hami_dra_class_json() {
  printf '{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"%s"},"spec":{"selectors":[{"cel":{"expression":"device.driver == \\"%s\\""}}]}}' \
    "$1" "$HAMI_DRA_DRIVER"
}

# dra_template_json NAME CAPACITY_REQUESTS_JSON [SELECTOR [COUNT]]: a
# ResourceClaimTemplate of namespace default asking COUNT (default 1) devices
# of the class hami-gpu, with those capacity requests ("" or "-": none, the
# whole device) and a CEL selector ("": none).
dra_template_json() {
  local capacity="" selectors="" count=""
  [ -n "$2" ] && [ "$2" != - ] && capacity=",\"capacity\":{\"requests\":$2}"
  [ -n "${3:-}" ] && selectors=",\"selectors\":[{\"cel\":{\"expression\":\"$3\"}}]"
  [ -n "${4:-}" ] && [ "$4" != 1 ] && count=",\"count\":$4"
  printf '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"%s","namespace":"default"},"spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"hami-gpu"%s%s%s}}]}}}}' \
    "$1" "$count" "$capacity" "$selectors"
}

# dra_webhook_json URL: the MutatingWebhookConfiguration devshare-dra the
# chart gives devshare serve for pods with DRA claims (failurePolicy Fail,
# matchConditions on has(object.spec.resourceClaims)), namespace default,
# served at URL/webhook with the test CA.
dra_webhook_json() {
  cat <<EOF
{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration",
 "metadata":{"name":"devshare-dra"},
 "webhooks":[{"name":"dra.pods.devshare.e2e","clientConfig":{"url":"$1/webhook","caBundle":"$CA_BUNDLE"},
   "rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}],
   "namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"default"}},
   "matchConditions":[{"name":"has-dra-claims","expression":"$DRA_WEBHOOK_MATCH"}],
   "failurePolicy":"Fail","sideEffects":"None","admissionReviewVersions":["v1"],"timeoutSeconds":10}]}
EOF
}

# dra_figures: "gpus=N allocated_gpus=G allocated_pct=P over_capacity=D" from
# the API objects: the GPUs the ResourceSlices publish, the GPUs the claims of
# bound pods hold (a share its cores / 100, a whole device 1), and how many
# devices the allocated claims consume more of a capacity than published.
dra_figures() {
  local dir=$E2E_DIR/dra-figures
  mkdir -p "$dir" &&
    kapi GET /apis/resource.k8s.io/v1/resourceclaims >"$dir/claims.json" &&
    kapi GET /api/v1/pods >"$dir/pods.json" &&
    kapi GET /apis/resource.k8s.io/v1/resourceslices >"$dir/slices.json" &&
    python3 "$(dirname "${BASH_SOURCE[0]}")/dra_compare.py" figures "$dir/claims.json" "$dir/pods.json" \
      "$dir/slices.json"
}

# The API group of DRA, and the scheduling gate devshare's webhook puts on
# the pods whose claims it allocates.
DRA_API=/apis/resource.k8s.io/v1
DRA_GATE=devshare.dev/dra-allocation

# dra_identity NAME...: for each NAME a client certificate of its own (CN
# NAME, no group) and $E2E_DIR/NAME.kubeconfig, every NAME bound to the
# ClusterRole the chart renders for DRA device classes (devshare.dra.deviceClasses
# hami-gpu), made once. Needs HELM (need_binaries).
dra_identity() {
  local pki=$E2E_DIR/pki d=$E2E_DIR/identities subjects="" name role
  mkdir -p "$d"
  for name in "$@"; do
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/$name.key" 2>/dev/null &&
      openssl req -new -key "$d/$name.key" -subj "/CN=$name" -out "$d/$name.csr" &&
      printf '[ext]\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >"$d/$name.ext" &&
      openssl x509 -req -in "$d/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
        -days 1 -sha256 -extfile "$d/$name.ext" -extensions ext -out "$d/$name.crt" 2>/dev/null || return 1
    cat >"$E2E_DIR/$name.kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: $KUBE_SERVER, certificate-authority: $pki/ca.crt}}]
users: [{name: $name, user: {client-certificate: $d/$name.crt, client-key: $d/$name.key}}]
contexts: [{name: e2e, context: {cluster: e2e, user: $name}}]
current-context: e2e
KUBECONFIG
    [ -n "$subjects" ] && subjects+=,
    subjects+="{\"kind\":\"User\",\"name\":\"$name\"}"
  done
  if [ ! -s "$d/role.json" ]; then
    "$HELM" template devshare "$(dirname "${BASH_SOURCE[0]}")/../../charts/devshare" \
      --set 'devshare.dra.deviceClasses={hami-gpu}' | /usr/bin/python3 -c '
import json, sys, yaml
for doc in yaml.safe_load_all(sys.stdin):
    if doc and doc["kind"] == "ClusterRole" and "helm.sh/hook" not in doc["metadata"].get("annotations", {}):
        print(json.dumps(doc)); break' >"$d/role.json" && [ -s "$d/role.json" ] || return 1
    kapi POST /apis/rbac.authorization.k8s.io/v1/clusterroles "$(cat "$d/role.json")" >/dev/null || return 1
  fi
  role=$(jfield metadata.name <"$d/role.json")
  kapi POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings \
    '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"'"$1"'"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"'"$role"'"},"subjects":['"$subjects"']}' >/dev/null
}

# pod_json_from NAME CLAIM=TEMPLATE|CLAIM@RESOURCECLAIM...: a pod using one
# claim per entry, made from a template (=) or an existing claim named (@)
pod_json_from() {
  local name=$1 claims="" uses="" entry claim; shift
  for entry in "$@"; do
    [ -n "$claims" ] && claims+=, && uses+=,
    if [[ $entry == *@* ]]; then
      claim=${entry%%@*}
      claims+="{\"name\":\"$claim\",\"resourceClaimName\":\"${entry#*@}\"}"
    else
      claim=${entry%%=*}
      claims+="{\"name\":\"$claim\",\"resourceClaimTemplateName\":\"${entry#*=}\"}"
    fi
    uses+="{\"name\":\"$claim\"}"
  done
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"terminationGracePeriodSeconds":0,"resourceClaims":[%s],"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m"},"claims":[%s]}}]}}' \
    "$name" "$claims" "$uses"
}
create_gated() {  # create_gated NAME CLAIM=TEMPLATE...: created, and gated by the webhook
  kapi POST /api/v1/namespaces/default/pods "$(pod_json_from "$@")" | jfield spec.schedulingGates |
    grep -q "\"$DRA_GATE\""
}
still_gated() {  # still_gated POD
  kapi GET "/api/v1/namespaces/default/pods/$1" | jfield spec.schedulingGates | grep -q "\"$DRA_GATE\""
}
claim_of() {  # claim_of POD CLAIM: the name of the claim made for the pod
  kapi GET "/api/v1/namespaces/default/pods/$1" | python3 -c '
import json, sys
for s in json.load(sys.stdin).get("status", {}).get("resourceClaimStatuses", []):
    if s["name"] == sys.argv[1]:
        print(s.get("resourceClaimName", ""))' "$2"
}
# placed POD CLAIM: prints "NODE POOL/DEVICE" when the claim is allocated and
# reserved for the pod, and the pod is bound to the allocation's node.
placed() {
  local claim pod
  claim=$(claim_of "$1" "$2") && [ -n "$claim" ] || return 1
  pod=$(kapi GET "/api/v1/namespaces/default/pods/$1") || return 1
  kapi GET "$DRA_API/namespaces/default/resourceclaims/$claim" | python3 -c '
import json, sys
pod = json.loads(sys.argv[1]); claim = json.load(sys.stdin)
status = claim.get("status", {})
results = status.get("allocation", {}).get("devices", {}).get("results", [])
terms = status.get("allocation", {}).get("nodeSelector", {}).get("nodeSelectorTerms", [])
node = terms[0]["matchFields"][0]["values"][0] if terms else ""
reserved = [r["uid"] for r in status.get("reservedFor", [])]
ok = (results and pod["metadata"]["uid"] in reserved and pod["spec"].get("nodeName") == node
      and "resource.kubernetes.io/delete-protection" in claim["metadata"].get("finalizers", []))
if not ok:
    sys.exit(1)
print(node, results[0]["pool"] + "/" + results[0]["device"])' "$pod"
}
is_placed() { placed "$@" >/dev/null; }
placed_on() { placed "$2" "$3" | grep -q "^$1 "; }  # placed_on NODE POD CLAIM

# hold_claim_policy: a ValidatingAdmissionPolicy, and its binding, refusing
# the status write that allocates a claim made for a pod's claim named
# "held": such a pod's claims stop half-written, for a kill between them.
hold_claim_policy() {
  kapi POST /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies \
    '{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"hold-claim"},"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"apiGroups":["resource.k8s.io"],"apiVersions":["v1"],"operations":["UPDATE"],"resources":["resourceclaims/status"]}]},"validations":[{"expression":"!has(object.status.allocation) || !has(object.metadata.annotations) || !(\u0027resource.kubernetes.io/pod-claim-name\u0027 in object.metadata.annotations) || object.metadata.annotations[\u0027resource.kubernetes.io/pod-claim-name\u0027] != \u0027held\u0027","message":"held back by the e2e test"}]}}' \
    >/dev/null &&
    kapi POST /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings \
      '{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"hold-claim"},"spec":{"policyName":"hold-claim","validationActions":["Deny"]}}' \
      >/dev/null
}
# first_allocated_only POD: POD's claim "first" allocated, its claim "held" not.
first_allocated_only() {
  local first held
  first=$(claim_of "$1" first) held=$(claim_of "$1" held)
  [ -n "$first" ] && [ -n "$held" ] || return 1
  kapi GET "$DRA_API/namespaces/default/resourceclaims/$first" | jfield status.allocation | grep -q results &&
    [ -z "$(kapi GET "$DRA_API/namespaces/default/resourceclaims/$held" | jfield status.allocation)" ]
}

# dra_recount [ARGS...]: dra_recount.py on the claims, slices, pods (of the
# default namespace) and nodes as the API server has them now, ARGS added
# (--settled: also no pod gated while it fits, none ungated and unbound);
# prints the problems and the counts, fails on a problem. Without ARGS,
# within_capacity: no device over its capacity, no share in two claims.
dra_recount() {
  local d=$E2E_DIR/recount
  mkdir -p "$d"
  kapi GET "$DRA_API/resourceclaims" >"$d/claims.json" && kapi GET "$DRA_API/resourceslices" >"$d/slices.json" &&
    kapi GET /api/v1/namespaces/default/pods >"$d/pods.json" && kapi GET /api/v1/nodes >"$d/nodes.json" ||
    return 1
  python3 "$(dirname "${BASH_SOURCE[0]}")/dra_recount.py" "$d/claims.json" "$d/slices.json" "$d/pods.json" \
    "$d/nodes.json" "$@"
}
# within_capacity: no device allocated beyond its capacity (the cores and
# memory every allocated claim consumes, summed per device, within what the
# slice publishes), no share of a device in two claims, no claim reserved for
# two pods, every bound pod's claims allocated on its node.
within_capacity() { dra_recount --only over,unknown,shared,reserved,split; }
