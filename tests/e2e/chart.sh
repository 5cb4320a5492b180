#!/usr/bin/env bash
# The Helm chart (charts/devshare) against a real kube-apiserver (the control
# plane of control-plane.sh; its own kube-scheduler is the cluster's default
# scheduler). The control plane has no kubelet and no controller manager, so
# the Deployment and the hook Jobs never run by themselves. Checks:
#   - helm lint and helm template, with the default values and with a HAMi user's
#     values file (hami-values.yaml): HAMi's scheduler settings carry over,
#     HAMi's image and flags do not reach devshare's container;
#   - the chart's kube-scheduler image is the version this test runs;
#   - every rendered object, hooks included, is applied server-side and created;
#   - the TLS Secret is written as the certgen hook Job writes it, and the
#     webhook's clientConfig is pointed at the local pod by URL (the only change
#     to what the chart renders);
#   - one pod of the Deployment runs here as a kubelet would run it
#     (kubelet_standin.py: the containers' command and args verbatim, the
#     ConfigMaps and Secret as volumes, the ServiceAccount's token, a read-only
#     root, non-root user): devshare follows the Lease its kube-scheduler takes,
#     a GPU pod is mutated by the webhook, scheduled by the chart's scheduler
#     and bound with devices of its node, and /metrics answers.
# Prints "e2e-chart: N passed, N failed" last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
need_binaries
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"
py=/usr/bin/python3   # Debian's, with python3-yaml (scripts/setup.sh)

passed=0 failed=0
chart=$root/charts/devshare
out=$E2E_DIR/chart
mkdir -p "$out"
ns=kube-system
pids=()
trap 'for p in "${pids[@]}"; do kill -9 -- "-$p" 2>/dev/null || kill -9 "$p" 2>/dev/null; done' EXIT

check "helm lint, default values" "$HELM" lint --strict "$chart"
check "helm lint, a HAMi user's values file" "$HELM" lint "$chart" -f "$here/hami-values.yaml"
check "helm template, default values" \
  bash -c "'$HELM' template devshare '$chart' --namespace $ns >'$out/default.yaml'"
check "helm template, a HAMi user's values file" \
  bash -c "'$HELM' template hami '$chart' --namespace $ns -f '$here/hami-values.yaml' >'$out/hami.yaml'"

# container NAME FILE: the container NAME of the Deployment in a rendered file, as JSON.
container() {
  "$py" - "$1" "$2" <<'EOF'
import json, sys, yaml
name, path = sys.argv[1], sys.argv[2]
for doc in yaml.safe_load_all(open(path)):
    if doc and doc["kind"] == "Deployment":
        for c in doc["spec"]["template"]["spec"]["containers"]:
            if c["name"] == name:
                print(json.dumps(c))
EOF
}
has_arg() { container devshare "$1" | grep -q -- "\"$2\""; }
options_on() {
  "$HELM" template x "$chart" --namespace $ns --set devshare.serviceMonitor.enabled=true \
    --set scheduler.certManager.enabled=true --set scheduler.admissionWebhook.customURL.enabled=true >"$out/options.yaml" &&
    grep -q '^kind: Certificate$' "$out/options.yaml" && grep -q '^kind: Issuer$' "$out/options.yaml" &&
    grep -q '^kind: ServiceMonitor$' "$out/options.yaml" && grep -q 'cert-manager.io/inject-ca-from' "$out/options.yaml" &&
    grep -q 'url: https://127.0.0.1:31998/webhook' "$out/options.yaml" && ! grep -q '^kind: Job$' "$out/options.yaml"
}
check "helm template with cert-manager, a ServiceMonitor and a custom webhook URL" options_on
webhook_off() {
  "$HELM" template x "$chart" --namespace $ns --set scheduler.admissionWebhook.enabled=false >"$out/no-webhook.yaml" &&
    ! grep -q '^kind: MutatingWebhookConfiguration$' "$out/no-webhook.yaml" &&
    grep -q 'urlPrefix: "http://127.0.0.1:8444"' "$out/no-webhook.yaml" && ! grep -q -- '--tls-cert' "$out/no-webhook.yaml"
}
check "helm template without the webhook: plain HTTP, no TLS, no webhook" webhook_off
hami_settings() {
  has_arg "$out/hami.yaml" --scheduler-name=hami-scheduler && has_arg "$out/hami.yaml" --node-policy=spread &&
    has_arg "$out/hami.yaml" --gpu-policy=binpack
}
check "HAMi values: schedulerName and policies reach devshare serve" hami_settings
no_hami_flags() { ! container devshare "$out/hami.yaml" | grep -Eq 'projecthami|--debug|"-v=4"'; }
check "HAMi values: HAMi's image and flags do not reach devshare's container" no_hami_flags
check "HAMi values: deviceSplitCount reaches the device config" grep -q "deviceSplitCount: 20" "$out/hami.yaml"
# DRA device classes: the flags, the rights to write claims' allocations,
# and a webhook entry of its own failing closed for pods with claims; the
# API server validates the ClusterRole and the webhook (dry run).
dra_on() {
  "$HELM" template dra "$chart" --namespace $ns --set 'devshare.dra.deviceClasses={hami-gpu,other-gpu}' \
    --set devshare.dra.policy=binpack >"$out/dra.yaml" &&
    has_arg "$out/dra.yaml" --dra-device-class=hami-gpu && has_arg "$out/dra.yaml" --dra-device-class=other-gpu &&
    has_arg "$out/dra.yaml" --dra-policy=binpack && grep -q 'resources: \[resourceclaims/status, resourceclaims/binding\]' "$out/dra.yaml" &&
    ! container devshare "$out/default.yaml" | grep -q -- --dra-
}
check "helm template with DRA device classes: flags, RBAC, the webhook's DRA entry" dra_on
# dra_object KIND: the rendered object of KIND in dra.yaml (not a hook's), as JSON.
dra_object() {
  "$py" - "$1" "$out/dra.yaml" <<'EOF'
import json, sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[2])):
    if doc and doc["kind"] == sys.argv[1] and "helm.sh/hook" not in doc["metadata"].get("annotations", {}):
        print(json.dumps(doc))
        break
EOF
}
dra_webhook_entry() {
  dra_object MutatingWebhookConfiguration | DRA_WEBHOOK_MATCH=$DRA_WEBHOOK_MATCH "$py" -c '
import json, os, sys
hooks = json.load(sys.stdin)["webhooks"]
dra = [h for h in hooks if h["name"].startswith("dra.")]
sys.exit(not (len(hooks) == 2 and dra and dra[0]["failurePolicy"] == "Fail"
              and dra[0]["matchConditions"][0]["expression"] == os.environ["DRA_WEBHOOK_MATCH"]))'
}
check "the DRA webhook entry fails closed, only for pods with claims or a class's extended resource" dra_webhook_entry
check "the API server accepts the DRA ClusterRole (dry run)" \
  kapi POST "/apis/rbac.authorization.k8s.io/v1/clusterroles?dryRun=All" "$(dra_object ClusterRole)"
check "the API server accepts the webhook with its DRA entry (dry run)" \
  kapi POST "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?dryRun=All" \
  "$(dra_object MutatingWebhookConfiguration)"
scheduler_image=$(container kube-scheduler "$out/default.yaml" | jfield image)
devshare_image=$(container devshare "$out/default.yaml" | jfield image)
check "the chart's kube-scheduler is the version this test runs ($K8S_VERSION)" \
  test "$scheduler_image" = "registry.k8s.io/kube-scheduler:$K8S_VERSION"

# Everything the chart renders, hooks included, applied server-side for real.
check "every rendered object is applied server-side" \
  bash -c "'$py' '$here/kubelet_standin.py' apply '$out/default.yaml' >'$out/applied.txt'"
created() {
  kapi GET /apis/apps/v1/namespaces/$ns/deployments/devshare-scheduler &&
    kapi GET /api/v1/namespaces/$ns/services/devshare-scheduler &&
    kapi GET /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/devshare-scheduler-webhook &&
    kapi GET /apis/policy/v1/namespaces/$ns/poddisruptionbudgets/devshare-scheduler &&
    kapi GET /apis/batch/v1/namespaces/$ns/jobs/devshare-scheduler-certgen-create
}
check "the Deployment, Service, webhook, PodDisruptionBudget and hook Jobs exist" created

# What the certgen hook Jobs do: a CA and a serving certificate into the Secret
# (keys ca, tls.crt, tls.key), then the CA into the webhook's caBundle.
tls=$out/tls
mkdir -p "$tls"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=devshare-chart-ca \
  -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=devshare-scheduler.$ns.svc \
  -keyout "$tls/tls.key" -out "$tls/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:devshare-scheduler.%s.svc,IP:127.0.0.1\n' "$ns" >"$tls/san.ext"
openssl x509 -req -in "$tls/tls.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial -days 1 \
  -extfile "$tls/san.ext" -out "$tls/tls.crt" 2>/dev/null
b64() { base64 -w0 <"$1"; }
secret="{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"devshare-scheduler-tls\",\"namespace\":\"$ns\"},
 \"data\":{\"ca\":\"$(b64 "$tls/ca.crt")\",\"tls.crt\":\"$(b64 "$tls/tls.crt")\",\"tls.key\":\"$(b64 "$tls/tls.key")\"}}"
check "the TLS Secret, as the certgen Job writes it" kapi POST /api/v1/namespaces/$ns/secrets "$secret"
pod_port=8443
patch="[{\"op\":\"replace\",\"path\":\"/webhooks/0/clientConfig\",
  \"value\":{\"url\":\"https://127.0.0.1:$pod_port/webhook\",\"caBundle\":\"$(b64 "$tls/ca.crt")\"}}]"
check "the webhook points at the local pod (the caBundle as the patch Job writes it)" \
  kapi PATCH /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/devshare-scheduler-webhook \
  "$patch" application/json-patch+json

# One pod of the Deployment, run here as a kubelet would.
for spec in "gpu-a 2 40960" "gpu-b 1 16384"; do
  set -- $spec
  check "create node $1 ($2 GPUs, $3 MiB)" create_node "$(gpu_node_json "$1" "$2" 10 "$3")"
done
pod_name=devshare-scheduler-7d4b9c-x2x5q
"$py" "$here/kubelet_standin.py" run-pod "$ns/devshare-scheduler" "$pod_name" "$out/pod" \
  --image "$scheduler_image=$KUBE_SCHEDULER" --image "$devshare_image=$DEVSHARE" >"$out/pids.txt"
while read -r _ pid; do pids+=("$pid"); done <"$out/pids.txt"
check "both containers of the pod start ($(tr '\n' ' ' <"$out/pids.txt"))" test "${#pids[@]}" -eq 2
"$py" "$here/plugin_standin.py" "$KUBE_SERVER" "$KUBE_CA" "$KUBE_CLIENT_CERT" "$KUBE_CLIENT_KEY" \
  >"$E2E_DIR/logs/plugin-standin.log" 2>&1 &
pids+=($!)
holds_lease() {
  [[ "$(kapi GET /apis/coordination.k8s.io/v1/namespaces/$ns/leases/devshare-scheduler |
        jfield spec.holderIdentity)" == "${pod_name}"_* ]]
}
check "the chart's kube-scheduler holds the Lease as the pod" wait_until 90 holds_lease
check "devshare follows it and is ready" wait_until 90 curl -sfk "https://127.0.0.1:$pod_port/readyz"
refused_on_service_port() {
  [ "$(curl -sk -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data-binary '{}' "https://127.0.0.1:$pod_port/$1")" = 403 ]
}
check "the Service's port refuses /filter (served on the pod's loopback only)" refused_on_service_port filter
check "the Service's port refuses /bind" refused_on_service_port bind

pod=$(pod_json chart-gpu '{"cpu":"100m","nvidia.com/gpu":"1","nvidia.com/gpumem":"4000"}')
check "create a GPU pod without a schedulerName" kapi POST /api/v1/namespaces/default/pods "$pod"
scheduler_of() { kapi GET /api/v1/namespaces/default/pods/chart-gpu | jfield spec.schedulerName; }
check "the webhook moved it to devshare-scheduler" test "$(scheduler_of)" = devshare-scheduler
bound() { [[ "$(kapi GET /api/v1/namespaces/default/pods/chart-gpu | jfield spec.nodeName)" == gpu-* ]]; }
check "the chart's scheduler bound it to a GPU node" wait_until 60 bound
node=$(kapi GET /api/v1/namespaces/default/pods/chart-gpu | jfield spec.nodeName)
devices=$(kapi GET /api/v1/namespaces/default/pods/chart-gpu | jfield 'metadata.annotations["hami.io/vgpu-devices-allocated"]')
on_its_node() { [[ "$devices" == "GPU-$node-"*,NVIDIA,4000,* ]]; }
check "with 4000 MiB of a GPU of its node ($node: $devices)" on_its_node
# A scrape, as Prometheus would retry it: up to three tries a second apart,
# each failure said on stderr (curl's error and the HTTP status).
metrics() {
  local try
  for try in 1 2 3; do
    curl -sSfk --max-time 5 "https://127.0.0.1:$pod_port/metrics" -o "$out/metrics.txt" \
      -w '%{http_code}\n' >"$out/metrics.status" 2>"$out/metrics.err" &&
      grep -q '^devshare_' "$out/metrics.txt" && return 0
    echo "chart: /metrics try $try: status $(cat "$out/metrics.status") $(cat "$out/metrics.err")" >&2
    sleep 1
  done
  return 1
}
check "/metrics answers with devshare's metrics" metrics
# The container's process (unshare, sh, chroot and env exec into it) runs as the
# pod's user.
runs_as() { [ "$(stat -c %u "/proc/$1")" = 65532 ]; }

while read -r name pid; do
  check "$name runs as the pod's user, not root" runs_as "$pid"
done <"$out/pids.txt"
check "no container met a read-only root file system or a permission it lacks" \
  bash -c "! grep -qiE 'read-only file system|permission denied' '$out/pod/devshare.log' '$out/pod/kube-scheduler.log'"

echo "e2e-chart: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
