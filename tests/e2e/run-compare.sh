#!/usr/bin/env bash
# What `make compare` runs: compare.sh once per scheduler (devshare, then
# HAMi), each in a fresh control plane with kube-scheduler's extender settings
# of scheduler-devshare.yaml, then the figures side by side.
#
#   run-compare.sh NODES PODS QPS BURST   (DEVSHARE names the executable;
#   DEVSHARE_SERVE_ARGS adds flags to devshare serve, see compare.sh)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${DEVSHARE:?set DEVSHARE to the devshare executable (make compare does)}"
nodes=$1 pods=$2 qps=$3 burst=$4
out=${E2E_BUILD:-$root/build-e2e}/compare
mkdir -p "$out"
bash "$root/scripts/k8s-binaries.sh" >"$out/k8s-binaries.env" || { echo "compare: the binaries could not be had"; exit 1; }
export E2E_BIN_ENV=$out/k8s-binaries.env DEVSHARE DEVSHARE_SERVE_ARGS=${DEVSHARE_SERVE_ARGS:-}
: >"$out/results.txt"
for scheduler in devshare hami; do
  port=$(free_port)
  E2E_DIR=$out/$scheduler E2E_EXTENDER_URL=https://127.0.0.1:$port E2E_SCHEDULER_NAME=$scheduler-scheduler \
    bash "$here/control-plane.sh" run --scheduler-config "$here/scheduler-devshare.yaml" -- \
    bash "$here/compare.sh" "$scheduler" "$port" "$nodes" "$pods" "$qps" "$burst" 2>&1 |
    tee "$out/$scheduler.log" | grep '^compare: ' | tee -a "$out/results.txt"
done
python3 - "$out/results.txt" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    if line.startswith("compare: result "):
        kv = dict(w.split("=", 1) for w in line.split()[2:] if "=" in w)
        rows[kv["scheduler"]] = kv
if set(rows) != {"devshare", "hami"}:
    sys.exit("compare: a scheduler has no result (see the logs in build-e2e/compare)")
d, h = rows["devshare"], rows["hami"]
keys = ["bound", "pods_per_s", "p50_s", "p99_s", "extender_cpu_s", "extender_rss_mib", "api_requests"]
print(f"compare: {d['nodes']} nodes x 8 GPUs, {d['pods']} pods, QPS {d['qps']} / burst {d['burst']}, "
      f"devshare serve flags added: {d['args'].replace(',', ' ')}")
print(f"{'':18} {'devshare':>10} {'HAMi':>10} {'ratio':>7}")
for k in keys:
    try:
        ratio = f"{float(d[k]) / float(h[k]):.2f}" if float(h[k]) else "-"
    except ValueError:
        ratio = "-"
    print(f"{k:18} {d[k]:>10} {h[k]:>10} {ratio:>7}")
for name, kv in (("devshare", d), ("HAMi", h)):
    verbs = {k: v for k, v in kv.items() if "-" in k and k not in keys and k != "args"}
    print(f"{name} API requests by verb (audit log):", " ".join(f"{k}={v}" for k, v in sorted(verbs.items())))
PY
