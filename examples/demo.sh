#!/usr/bin/env bash
# The demo `make demo` runs: the devshare CLI decoding the sample annotations
# in examples/annotations/ — what a node registered, what a pod was given,
# who holds a node lock, where a handshake stands — then explaining, node by
# node, where a training pod fits in the sample cluster of examples/cluster/.
set -euo pipefail
devshare=${1:-build/lib/cli/devshare}
dir=$(dirname "$0")/annotations
cluster=$(dirname "$0")/cluster

show() {  # show TITLE ARGS...: the command, folded to fit 120 columns, and its output
  local title=$1; shift
  printf '\n== %s\n' "$title"
  printf '$ devshare %s\n' "$*" | fold -s -w 112 | sed '$!s/ *$/ \\/; 2,$s/^/    /'
  "$devshare" "$@"
}

show "NVIDIA node registration (hami.io/node-nvidia-register, JSON)" \
  decode node --file "$dir/node-nvidia-register.json"
show "Hygon node registration (hami.io/node-dcu-register, legacy colon format)" \
  decode node --file "$dir/node-dcu-register.txt"
show "Volcano node registration (volcano.sh/node-vgpu-register)" \
  decode node --file "$dir/volcano-node-vgpu-register.txt"
show "Pod devices: init container without GPU, two app containers" \
  decode pod --file "$dir/vgpu-devices-allocated.txt"
show "Node lock held by a pod (written in UTC+8)" \
  decode lock --file "$dir/mutex-lock.txt"
show "HAMi handshake" decode handshake --file "$dir/node-handshake.txt"
show "Device scoring weights" decode weights --file "$dir/device-scoring-weights.txt"
show "MIG reservations completed by the device plugin" \
  decode mig --file "$dir/vgpu-mig-allocations.json"
show "GPU pair scores (hami.io/node-nvidia-score)" \
  decode scores --file "$dir/node-nvidia-score.json"
printf '\n== A malformed value is rejected with the field and byte position\n'
printf '$ devshare decode pod "GPU-a,NVIDIA,1000,30:;GPU-b,NVIDIA,lots,30:;"\n'
if "$devshare" decode pod "GPU-a,NVIDIA,1000,30:;GPU-b,NVIDIA,lots,30:;"; then
  echo "expected an error" >&2
  exit 1
fi

show "Where does a 2-GPU training pod fit? (binpack nodes, spread GPUs)" \
  explain --cluster "$cluster/cluster.yaml" --pod "$cluster/pod.yaml" --now 1787300439
show "A 1-GPU slice under binpack: the fullest node that fits" \
  explain --cluster "$cluster/cluster.yaml" --pod "$cluster/pod-small.yaml" --now 1787300439
show "The same slice under spread: the emptiest node" \
  explain --cluster "$cluster/cluster.yaml" --pod "$cluster/pod-small.yaml" --now 1787300439 \
  --node-policy spread

show "HAMi v2.10 beside devshare's policies on a simulated 200-node cluster (pods ask 130 % of the GPUs)" \
  simulate
