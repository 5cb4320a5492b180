#!/usr/bin/env bash
# End-to-end checks of the devshare executable: exit codes, tables, JSON.
# Usage: tests/cli/run.sh DEVSHARE [RESULTS]; prints "cli: N passed, M failed".
set -uo pipefail
devshare=$1 results=${2:-}
here=$(cd "$(dirname "$0")/../.." && pwd)
passed=0 failed=0

check() {  # check NAME EXPECTED_EXIT PATTERN -- ARGS...
  local name=$1 want=$2 pattern=$3
  shift 4
  local out status
  out=$("$devshare" "$@" 2>&1)
  status=$?
  if [ "$status" -eq "$want" ] && grep -qE -- "$pattern" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: exit %s (want %s), output:\n%s\n' "$name" "$status" "$want" "$out"
  fi
}

check "node JSON as JSON" 0 '"devmem":81920' -- decode node --json --file "$here/examples/annotations/node-nvidia-register.json"
check "node legacy table" 0 'DCU-Z100L' -- decode node --file "$here/examples/annotations/node-dcu-register.txt"
check "node format forced" 1 'invalid JSON' -- decode node --format json 'GPU-a,1,1,1,T,0,true:'
check "unknown format" 1 'unknown register format' -- decode node --format yaml '[]'
check "pod error names field" 1 'container\[1\]\.device\[0\]\.usedmem' -- decode pod 'GPU-a,NVIDIA,1,2:;GPU-b,NVIDIA,x,2:;'
check "pod trailing entry" 0 '2 container entr' -- decode pod 'GPU-a,NVIDIA,1,2:;'
check "lock owner" 0 'ns/pod-a' -- decode lock '2026-08-01T06:00:00Z,ns,pod-a'
check "lock W6 value" 1 'not RFC 3339' -- decode lock 'lock'
check "handshake zone" 0 '"time":"2026-08-21T00:20:39Z"' -- decode handshake --json --zone-offset 28800 'Requesting_2026-08-21 08:20:39'
check "weights error" 1 'at least one weight must be positive' -- decode weights 'slot=0,core=0,memory=0'
check "missing file" 1 'cannot read' -- decode pod --file /nonexistent
check "no value (usage error: 2)" 2 'VALUE or --file' -- decode pod
check "explain chooses" 0 'gpu-a100-1 +yes \(chosen\)' -- explain --cluster "$here/examples/cluster/cluster.yaml" --pod "$here/examples/cluster/pod.yaml" --now 1
check "explain reasons" 0 'gpu-t4-1 +no +NodeInsufficientDevice' -- explain --cluster "$here/examples/cluster/cluster.yaml" --pod "$here/examples/cluster/pod.yaml" --now 1
check "explain JSON" 0 '"chosen":"gpu-a100-2"' -- explain --json --cluster "$here/examples/cluster/cluster.yaml" --pod "$here/examples/cluster/pod-small.yaml" --now 1
check "explain spread" 0 '"chosen":"gpu-t4-1"' -- explain --json --node-policy spread --cluster "$here/examples/cluster/cluster.yaml" --pod "$here/examples/cluster/pod-small.yaml" --now 1
check "explain bad policy" 1 'unknown node policy' -- explain --node-policy best --cluster "$here/examples/cluster/cluster.yaml" --pod "$here/examples/cluster/pod.yaml"
# A sidecar without devices before the GPU container, on model-named devices:
# devshare writes an entry for each container (W1), HAMi's padding skips it.
sidecar=$(mktemp)
trap 'rm -f "$sidecar" "${broken:-}"' EXIT
sed 's/^  containers:$/  containers:\n  - name: sidecar/' "$here/examples/cluster/pod-small.yaml" >"$sidecar"
check "explain W1: an entry for every container" 0 '"hami.io/vgpu-devices-allocated":";GPU-' -- explain --json --cluster "$here/examples/cluster/cluster.yaml" --pod "$sidecar" --now 1
check "explain HAMi-exact W1: as HAMi pads" 0 '"hami.io/vgpu-devices-allocated":"GPU-' -- explain --json --hami-exact all --cluster "$here/examples/cluster/cluster.yaml" --pod "$sidecar" --now 1
check "explain bad HAMi-exact row (usage error: 2)" 2 'unknown row "W9"' -- explain --hami-exact W1,W9 --cluster "$here/examples/cluster/cluster.yaml" --pod "$here/examples/cluster/pod.yaml"
check "explain DRA upstream: each node's allocation" 0 'dra-a100-1 +yes +- +gpu: hami-core-gpu.project-hami.io/dra-a100-1/hami-gpu-0 \(cores 40, memory 16Gi\)' -- explain --cluster "$here/examples/dra/cluster.yaml" --pod "$here/examples/dra/claims.yaml"
check "explain DRA why not" 0 "dra-t4-1 +no +inference hami-gpu-0: not selected by the class's or the request's selectors" -- explain --cluster "$here/examples/dra/cluster.yaml" --pod "$here/examples/dra/claims.yaml"
check "explain DRA spread opens the free GPU" 0 '"chosen":"dra-a100-1".*"device":"hami-gpu-1"' -- explain --json --dra-policy spread --cluster "$here/examples/dra/cluster.yaml" --pod "$here/examples/dra/claims.yaml"
check "explain DRA fgd" 0 'dra-a100-1 +yes \(chosen\)' -- explain --dra-policy fgd --cluster "$here/examples/dra/cluster.yaml" --pod "$here/examples/dra/claims.yaml"
check "explain DRA: a node the pod's node selector leaves out" 0 'dra-a100-1 +no +node selector kubernetes.io/hostname=dra-t4-1 does not match' -- explain --cluster "$here/examples/dra/cluster.yaml" --pod <(sed '/^kind: Pod$/,$ s/^spec:$/spec:\n  nodeSelector: {kubernetes.io\/hostname: dra-t4-1}/' "$here/examples/dra/claims.yaml")
check "explain DRA bad policy" 1 'unknown DRA policy best' -- explain --dra-policy best --cluster "$here/examples/dra/cluster.yaml" --pod "$here/examples/dra/claims.yaml"
check "explain DRA unknown kind" 1 'kind Service is not Node, Pod, ResourceQuota, PodDisruptionBudget, ResourceSlice' -- explain --cluster "$here/examples/dra/cluster.yaml" --pod <(printf 'kind: Service\n')
quota_cluster() { cat "$here/examples/cluster/cluster.yaml"; echo ---; cat "$here/tests/cli/quotas.yaml"; }
check "explain names the quota a pod is over" 0 'Quota in research: nvidia.com/gpumem 20000 of 20000 in use' -- explain --cluster <(quota_cluster) --pod "$here/examples/cluster/pod.yaml"
check "explain refuses on the quota" 0 'gpu-a100-1 +no +2/2 ResourceQuotaNotFit' -- explain --cluster <(quota_cluster) --pod "$here/examples/cluster/pod.yaml"
check "explain warns of a quota limit that is not a whole number" 0 'research/typo: spec.hard: limits.nvidia.com/gpumem is "1.5", not a whole number' -- explain --cluster <(quota_cluster) --pod "$here/examples/cluster/pod.yaml"
check "top lists the quotas" 0 'research +nvidia.com/gpumem +20000 +20000' -- top --cluster <(quota_cluster)
check "explain names the pods a preemption would evict, a budget respected" 0 'Preempting would place it on gpu-b, evicting ml/batch-1 \(priority 10\)' -- explain --cluster "$here/tests/cli/preemption.yaml" --pod "$here/tests/cli/preemptor.yaml"
check "explain ranks a node against a disruption budget last" 0 'else gpu-a, evicting ml/train-1 \(priority 0, against its disruption budget\)' -- explain --cluster "$here/tests/cli/preemption.yaml" --pod "$here/tests/cli/preemptor.yaml"
check "explain --json carries the preemption plan" 0 '"preemption":\{"refused":"","candidates":\[\{"node":"gpu-b","victims":\[\{"pod":"ml/batch-1"' -- explain --json --cluster "$here/tests/cli/preemption.yaml" --pod "$here/tests/cli/preemptor.yaml"
check "explain pod file with a node" 1 'must hold exactly one Pod' -- explain --cluster "$here/examples/cluster/cluster.yaml" --pod "$here/examples/cluster/cluster.yaml"

check "simulate runs a scenario file" 0 'binpack +[0-9]+ +[0-9]+ +[0-9.]+ %' -- simulate "$here/examples/scenarios/small.yaml"
check "simulate --wide shows every figure" 0 'VARIANT +PODS +BOUND +PENDING .* SECONDS' -- simulate --wide "$here/examples/scenarios/small.yaml"
check "simulate keeps to 120 columns and says what --wide adds" 0 '\(--wide shows [0-9]+ more: ' -- simulate "$here/examples/scenarios/small.yaml"
check "simulate reports fragmentation" 0 '"gpuFree":[0-9.E+-]+,"gpuFragmented":[0-9.E+-]+,"fragmentationPercent":[0-9.E+-]+,"fragmentationCurve":\[\{"demandPercent":1E1' -- simulate "$here/examples/scenarios/small.yaml" --json /dev/stdout
check "simulate writes JSON" 0 '"variants":\[\{"name":"binpack","runs":\[\{"seed":7' -- simulate "$here/examples/scenarios/small.yaml" --seed 7 --json /dev/stdout
check "simulate lists the shipped scenarios" 0 'handshake-storm' -- simulate --list
check "simulate prints a shipped scenario" 0 'kind: leader-crash' -- simulate --scenario failover --print
check "simulate runs a shipped scenario" 0 'lock-free +128 +25 ms' -- simulate --scenario lock-storm
check "simulate says what a failure-looking figure means" 0 'BINDS FAILED \(hami-once, fixed-100ms\): HAMi fails' -- simulate --scenario lock-storm
check "simulate names an unknown scenario" 1 "no scenario named 'best'" -- simulate --scenario best
check "simulate keeps team-a within its quota, its excess pending for it" 0 'default +team-a +nvidia.com/gpumem +65536 +65536 +8 +8 +8' -- simulate "$here/examples/scenarios/quota-teams.yaml"
check "simulate binds team-b beside team-a's quota" 0 'default +team-b +nvidia.com/gpumem +327680 +262144 +16 +0 +0' -- simulate "$here/examples/scenarios/quota-teams.yaml"
check "simulate preemption: HAMi v2.10 binds no inference pod" 0 'hami-v2.10 +0/60 +[0-9.]+ min +[0-9.]+ min +0 +- +- +0 +0 +0' -- simulate --scenario preemption
check "simulate preemption: devshare binds them all, no eviction in vain" 0 'binpack +60/60 +[0-9]+ ms +3[0-9.]+ s +[0-9]+ +1.00 +[0-9]+ +0 +0 +[0-9]+' -- simulate --scenario preemption
check "simulate writes the preemption figures as JSON" 0 '"preemption":\{"highPriorityPods":60,"highPriorityBound":60,' -- simulate --scenario preemption --json /dev/stdout
check "simulate writes the quota rows as JSON" 0 '"quotas":\[\{"namespace":"team-a","resource":"nvidia.com/gpumem","limit":65536,"peakUsed":65536,"bound":8,"pending":8,"pendingQuota":8\}' -- simulate "$here/examples/scenarios/quota-teams.yaml" --json /dev/stdout
check "explain --pod without --cluster wants NAMESPACE/NAME" 1 'name a pod of the cluster as NAMESPACE/NAME' -- explain --pod pod.yaml
check "explain names the kubeconfig it cannot read" 1 'cannot read /nonexistent' -- explain --pod default/p --kubeconfig /nonexistent
check "top of a cluster file" 0 'gpu-a100-1  2     20000/81920  40/200   1/20   1' -- top --cluster "$here/examples/cluster/cluster.yaml" --now 1
check "top --gpus names the pods on each GPU" 0 'GPU-a100-2-0 .* 30000/40960 .* prod/serving-1' -- top --gpus --cluster "$here/examples/cluster/cluster.yaml" --now 1
check "top JSON" 0 '"gpus":5,"memory":\{"used":50000,"total":179200\}' -- top --json --cluster "$here/examples/cluster/cluster.yaml" --now 1
check "top of one node that is not there" 1 'no GPU node named gpu-x' -- top --node gpu-x --cluster "$here/examples/cluster/cluster.yaml"
broken=$(mktemp)
cat >"$broken" <<'YAML'
apiVersion: v1
kind: Node
metadata:
  name: gpu-stale
  annotations:
    hami.io/node-nvidia-register: '[{"id":"GPU-s-0","count":10,"devmem":40960,"devcore":100,"type":"NVIDIA","health":true}]'
    hami.io/node-handshake: Requesting_2026-11-25 10:00:00
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-garbled
  annotations:
    hami.io/node-nvidia-register: 'not JSON'
---
apiVersion: v1
kind: Node
metadata:
  name: cpu-only
YAML
check "top says which handshake is stale" 0 'gpu-stale: hami.io/node-handshake has asked for 300 s' -- top --cluster "$broken" --now 1795601100
check "top says which register annotation does not decode" 0 'gpu-garbled: node gpu-garbled: hami.io/node-nvidia-register: node register JSON' -- top --cluster "$broken" --now 1795601100
check "top counts the nodes without devices" 0 '1 nodes without devices not shown' -- top --cluster "$broken" --now 1795601100
check "top with a file and a kubeconfig" 1 'do not go with it' -- top --cluster "$here/examples/cluster/cluster.yaml" --context x
check "serve names the choices of an option" 1 "--lock-retry: 'sometimes' is not one of release, once, fixed, backoff" -- serve --lock-retry sometimes
check "serve refuses a QPS of 0" 1 'want QPS above 0' -- serve --qps 0
check "serve refuses a negative bind budget" 1 'bind-budget -1: want 0 or more seconds' -- serve --bind-budget -1
# What a newcomer sees first: every line of `make demo` and of a shipped
# scenario's summary fits a 120-column terminal.
fits_120() {  # fits_120 NAME COMMAND...
  local name=$1 widest
  shift
  widest=$("$@" 2>&1 | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
  if [ "$widest" -gt 0 ] && [ "$widest" -le 120 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: its widest line has %s columns (at most 120)\n' "$name" "$widest"
  fi
}
fits_120 "make demo" bash "$here/examples/demo.sh" "$devshare"
for scenario in default lock-storm failover plugin-faults drift handshake-storm preemption; do
  fits_120 "simulate --scenario $scenario" "$devshare" simulate --scenario "$scenario"
done
fits_120 "simulate quota-teams.yaml" "$devshare" simulate "$here/examples/scenarios/quota-teams.yaml"
bad=$(mktemp)
printf 'nodes:\n  - {count: 2, gpus: 4}\nengine: {policy: best}\n' >"$bad"
check "simulate names the bad key and its line" 1 "engine.policy: 'best' is not one of .* \(line 3" -- simulate "$bad"
printf 'nodes:\n  - {count: 2, gpu: 4}\n' >"$bad"
check "simulate rejects an unknown key" 1 'nodes\[0\]\.gpu: unknown key \(line 2' -- simulate "$bad"
printf 'nodes:\n  - {count: 1}\nquotas:\n  - {name: gpu, hard: {limits.nvidia.com/gpumem: 1}}\n' >"$bad"
check "simulate needs a quota's namespace" 1 'quotas\[0\]\.namespace: required \(line 4' -- simulate "$bad"
printf 'nodes:\n  - {count: 1}\npods:\n  - {count: 1, namespace: a}\nquotas:\n  - {namespace: a, hard: {limits.nvidia.com/gpumem: "1.5"}}\n' >"$bad"
check "simulate reports a quota limit that is not a whole number" 0 'quota ignored \(default\): resource quota a/quota0: spec.hard: limits.nvidia.com/gpumem is "1.5"' -- simulate "$bad"
printf 'nodes:\n  - {count: 1}\npods:\n  - {name: a, priority_class: gold}\n' >"$bad"
check "simulate refuses a PriorityClass that does not exist" 1 "pods\[0\]\.priority_class: no PriorityClass named 'gold' .*\(line 4" -- simulate "$bad"
rm -f "$bad"
check "simulate needs the traces it is pointed at" 1 'cannot read /nonexistent/openb_node_list_gpu_node.csv' -- simulate --scenario openb --openb /nonexistent

echo "cli: $passed passed, $failed failed"
[ -n "$results" ] && echo "cli $passed $failed" >>"$results"
[ "$failed" -eq 0 ]
