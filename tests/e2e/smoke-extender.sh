#!/usr/bin/env bash
# Shows that the control plane calls out the way `devshare serve` will be called,
# with fake_serve.py standing in for it: kube-scheduler asks the extender to
# filter and bind (nvidia.com/gpu ignored by the scheduler itself), and the API
# server calls a mutating webhook over TLS with the CA of control-plane.sh.
# Needs the cluster started with tests/e2e/scheduler-extender.yaml and
# E2E_EXTENDER_URL=http://127.0.0.1:$FAKE_EXTENDER_PORT (tests/e2e/run.sh does it).
# Prints "e2e-extender: N passed, N failed" last; exits non-zero on any failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run}"
: "${FAKE_EXTENDER_PORT:?set FAKE_EXTENDER_PORT to the port of E2E_EXTENDER_URL}"

passed=0 failed=0

node=ext-gpu-1
ns=/api/v1/namespaces/default
calls=$E2E_DIR/logs/fake-serve.jsonl
webhook_port=$(free_port)

python3 "$here/fake_serve.py" --extender-port "$FAKE_EXTENDER_PORT" --webhook-port "$webhook_port" \
  >"$calls" 2>"$E2E_DIR/logs/fake-serve.log" &
fake=$!
trap 'kill $fake 2>/dev/null; wait $fake 2>/dev/null' EXIT

webhook_config() {
  cat <<EOF
{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration",
 "metadata":{"name":"e2e-fake-serve"},
 "webhooks":[{"name":"pods.fake-serve.devshare.test",
   "clientConfig":{"url":"https://127.0.0.1:$webhook_port/webhook","caBundle":"$CA_BUNDLE"},
   "rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}],
   "namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"default"}},
   "failurePolicy":"Fail","sideEffects":"None","admissionReviewVersions":["v1"],"timeoutSeconds":10}]}
EOF
}
# The API server picks the configuration up a moment after it is created: a
# dry-run create shows when the webhook is in force.
webhook_active() {
  [ "$(kapi POST "$ns/pods?dryRun=All" "$(pod_json webhook-probe)" |
       jfield 'metadata.annotations["devshare.test/mutated"]')" = true ]
}
bound_to() {
  [ "$(kapi GET "$ns/pods/$1" | jfield spec.nodeName)" = "$2" ]
}
mutated() {
  [ "$(kapi GET "$ns/pods/$1" | jfield 'metadata.annotations["devshare.test/mutated"]')" = true ]
}
called() {  # called VERB POD
  grep -q "\"call\": \"$1\", \"pod\": \"$2\"" "$calls"
}

check "fake serve listens" wait_until 20 grep -q listening "$calls"
check "create the mutating webhook configuration" \
  kapi POST /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations "$(webhook_config)"
check "API server calls the webhook over TLS" wait_until 30 webhook_active
check "create a GPU node (1 GPU x 8 slots) and make it Ready" create_node "$(gpu_node_json $node 1 8 40960)"
# 9 > the node's 8: only bindable because kube-scheduler ignores nvidia.com/gpu
# (ignoredByScheduler) and the extender keeps the node.
check "create a pod asking for 9 nvidia.com/gpu" \
  kapi POST "$ns/pods" "$(pod_json ext-gpu '{"cpu":"100m","nvidia.com/gpu":"9"}')"
check "the pod is bound to $node" wait_until 60 bound_to ext-gpu $node
check "kube-scheduler called the extender's filter" called filter ext-gpu
check "kube-scheduler called the extender's bind" called bind ext-gpu
check "the pod was mutated by the webhook" mutated ext-gpu

kapi DELETE "$ns/pods/ext-gpu?gracePeriodSeconds=0" >/dev/null || true
echo "e2e-extender: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
