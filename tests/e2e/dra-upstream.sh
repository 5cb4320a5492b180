#!/usr/bin/env bash
# kube-scheduler's own DRA allocation against devshare's `upstream`
# prediction, on a single node: a node whose two GPUs are published as HAMi's
# DRA driver publishes them (consumable cores and memory, shared by several
# claims), the DeviceClass, and pods whose ResourceClaimTemplates ask shares
# (some off the request policy's step, so its rounding counts), a whole GPU
# and one that fits nowhere. One at a time: a pod is created held by a
# scheduling gate of the test's own, kube-controller-manager's resourceclaim
# controller makes its claim, `devshare explain --dra-policy upstream`
# predicts the claim's allocation from the API objects as they are, the gate
# is removed and kube-scheduler (no devshare) allocates and binds the pod;
# the device and the consumed capacity must be the predicted ones (the share
# ID is random upstream). `devshare explain --pod` on the live cluster says
# why the pod that fits nowhere does not fit. Run inside the cluster's
# environment:
#   tests/e2e/control-plane.sh run --controller-manager -- tests/e2e/dra-upstream.sh
# Needs DEVSHARE. Prints "e2e-dra: N passed, N failed" last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run, or source its env file}"
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"

passed=0 failed=0
node=dra-node-1
driver=$HAMI_DRA_DRIVER
ns=/api/v1/namespaces/default
resource=/apis/resource.k8s.io/v1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

hold=e2e.devshare.dev/hold
dra_pod_json() {  # dra_pod_json NAME TEMPLATE: a pod with the claim from TEMPLATE, held by $hold
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"terminationGracePeriodSeconds":0,"schedulingGates":[{"name":"%s"}],"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"%s"}],"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m"},"claims":[{"name":"gpu"}]}}]}}' \
    "$1" "$hold" "$2"
}
claim_of() {  # claim_of POD: the claim the resourceclaim controller made for it
  local claim
  claim=$(kapi GET "$ns/pods/$1" | jfield 'status.resourceClaimStatuses[0].resourceClaimName')
  [ -n "$claim" ] && echo "$claim"
}
release() {  # release POD: removes $hold
  kapi PATCH "$ns/pods/$1" "{\"spec\":{\"schedulingGates\":[{\"\$patch\":\"delete\",\"name\":\"$hold\"}]}}" \
    application/strategic-merge-patch+json
}
# The API objects devshare predicts from, as one YAML stream of typed lists.
cluster_file() {
  local out=$work/cluster.yaml
  : >"$out"
  for path in /api/v1/nodes $resource/resourceslices $resource/deviceclasses $resource/resourceclaims; do
    kapi GET "$path" >>"$out" || return 1
    printf '\n---\n' >>"$out"
  done
  echo "$out"
}
allocated() {  # allocated CLAIM: the claim has an allocation
  [ -n "$(kapi GET "$resource/namespaces/default/resourceclaims/$1" |
    jfield status.allocation.devices.results)" ]
}
not_allocated() { ! allocated "$1"; }
allocated_and_bound() {  # allocated_and_bound POD CLAIM: CLAIM allocated, POD on $node
  allocated "$2" && [ "$(kapi GET "$ns/pods/$1" | jfield spec.nodeName)" = "$node" ]
}
keeps_sharing_fields() {  # the slice's first device still allows sharing, with a request policy
  kapi GET "$resource/resourceslices/$node-gpus" | python3 -c '
import json, sys
d = json.load(sys.stdin)["spec"]["devices"][0]
sys.exit(not (d.get("allowMultipleAllocations") and "requestPolicy" in d["capacity"]["memory"]))'
}
# same_allocation CLAIM PREDICTION_JSON: the claim's device and consumed
# capacity are the prediction's (quantities compared as numbers).
same_allocation() {
  kapi GET "$resource/namespaces/default/resourceclaims/$1" >"$work/actual.json" || return 1
  python3 - "$work/actual.json" "$2" <<'PY'
import json, re, sys
from fractions import Fraction
SUFFIX = {"": 1, "m": Fraction(1, 1000), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
def q(text):
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", text)
    return Fraction(m.group(1)) * SUFFIX[m.group(2)]
def view(results):
    return [(r["device"], {k: q(v) for k, v in r.get("consumedCapacity", {}).items()}) for r in results]
actual = view(json.load(open(sys.argv[1]))["status"]["allocation"]["devices"]["results"])
predicted = view(json.load(open(sys.argv[2]))["devices"]["results"])
if actual != predicted:
    print(f"kube-scheduler: {actual}\ndevshare:       {predicted}", file=sys.stderr)
    sys.exit(1)
PY
}

t0=$SECONDS
check "create node $node" create_node "$(dra_node_json "$node")"
check "publish its GPUs as HAMi's DRA driver does (2 GPUs, consumable cores and memory)" \
  kapi POST $resource/resourceslices "$(hami_dra_slice_json "$node" 40Gi 16Gi)"
check "the API server keeps allowMultipleAllocations and the request policy" keeps_sharing_fields
check "create the DeviceClass hami-gpu" kapi POST $resource/deviceclasses "$(hami_dra_class_json hami-gpu)"

# name | capacity requests: shares (one off the step in cores and memory, one
# filling a GPU's cores exactly), a whole GPU (no capacity named: all of it),
# and one that fits nowhere.
claims=(
  'share-a|{"cores":"30","memory":"10Gi"}'
  'whole|'
  'share-b|{"cores":"45","memory":"5000Mi"}'
  'share-c|{"cores":"20.5","memory":"1500Ki"}'
  'share-d|{"cores":"4","memory":"1Gi"}'
  'share-e|{"cores":"1","memory":"1Mi"}'
)
for entry in "${claims[@]}"; do
  name=${entry%%|*} capacity=${entry#*|}
  check "create template $name ($capacity)" \
    kapi POST "$resource/namespaces/default/resourceclaimtemplates" "$(dra_template_json "$name" "$capacity")"
  check "create pod $name from it, held" kapi POST "$ns/pods" "$(dra_pod_json "$name" "$name")"
  if ! wait_until 30 claim_of "$name" >/dev/null || ! claim=$(claim_of "$name") ||
    ! kapi GET "$resource/namespaces/default/resourceclaims/$claim" >"$work/$name.json" ||
    ! cluster=$(cluster_file); then
    check "the resourceclaim controller makes $name's claim; read the API objects" false
    continue
  fi
  prediction=$("$DEVSHARE" explain --json --dra-policy upstream --cluster "$cluster" --pod "$work/$name.json")
  python3 -c 'import json,sys; n=json.load(sys.stdin)["nodes"][0]; print(json.dumps(n["allocations"][0]) if n["fits"] else "", end="")' \
    <<<"$prediction" >"$work/$name.predicted"
  check "release pod $name (claim $claim) to kube-scheduler" release "$name"
  if [ -s "$work/$name.predicted" ]; then
    echo "devshare predicts $name: $(cat "$work/$name.predicted")"
    check "kube-scheduler allocates $name and binds its pod" wait_until 60 allocated_and_bound "$name" "$claim"
    check "kube-scheduler's allocation of $name is devshare's upstream prediction" \
      same_allocation "$claim" "$work/$name.predicted"
  else
    echo "devshare predicts $name: no fit"
    sleep 3  # a scheduling attempt or two
    check "kube-scheduler, as predicted, does not allocate $name" not_allocated "$claim"
  fi
done

# devshare explain on the live cluster, for a DRA pod: the pending one says
# why no device takes its claim; a bound one that its claim is allocated.
explains() {  # explains POD PATTERN
  "$DEVSHARE" explain --kubeconfig "$KUBECONFIG" --pod "default/$1" >"$work/explain-$1.txt" 2>&1 &&
    grep -qE -- "$2" "$work/explain-$1.txt"
}
check "devshare explain --pod default/share-e: no device has 1 core left" \
  explains share-e "$node +no +share-e-gpu-[a-z0-9]+ hami-gpu-0: cores: needs 1, 0 of 100 free"
check "devshare explain --pod default/share-a: its claim is allocated" \
  explains share-a "Claim default/share-a-gpu-[a-z0-9]+ is allocated already: gpu: $driver/$node/hami-gpu-0"
cat "$work/explain-share-e.txt"

for entry in "${claims[@]}"; do
  name=${entry%%|*}
  kapi DELETE "$ns/pods/$name?gracePeriodSeconds=0" >/dev/null 2>&1 || true
done
echo "dra test took $((SECONDS - t0))s"
echo "e2e-dra: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
