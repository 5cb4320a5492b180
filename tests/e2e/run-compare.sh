#!/usr/bin/env bash
# What `make compare` runs: compare.sh once per scenario and scheduler, each
# in a fresh control plane, then the figures side by side (devshare | HAMi |
# ratio, and kube-scheduler alone or devshare's lock-free binding where the
# scenario has them), with the machine they were measured on.
#
#   run-compare.sh [--json FILE] [--check] NODES PODS QPS BURST [RUN...]
#
# A RUN is SCENARIO/SCHEDULER or SCENARIO+VARIANT/SCHEDULER (compare.sh names
# the scenarios and schedulers); the variants are qps-default (client-go's
# QPS 5 / burst 10 for the extender instead of QPS / BURST),
# score-default (kube-scheduler's percentageOfNodesToScore left at its
# default instead of 100) and nN (N nodes and 2N pods instead of NODES and
# PODS, waiting at least 900 s from 1,000 nodes). Without RUNs: every run of
# $COMPARE_RUNS_ALL, the sizes of $COMPARE_SIZES (default 200 1000 5000;
# empty: none) included, and the DRA runs: dra (kube-scheduler's own DRA
# allocation against devshare serving the DeviceClass by binpack and by fgd:
# schedulers kube-scheduler, devshare, devshare-fgd) at each of
# $COMPARE_DRA_SIZES nodes (default 500 1000 5000) and dra-fill at each of
# $COMPARE_DRA_FILL_SIZES (default 1000). DRA runs start
# kube-controller-manager (its resourceclaim controller) too, and leave
# kube-scheduler's percentageOfNodesToScore at its default (what a DRA
# cluster runs, and what the simulator's upstream models); COMPARE_FILL_SETTLE
# (60) is the seconds without a binding that end a fill.
# storm runs use COMPARE_STORM_NODES (20) and COMPARE_STORM_PODS (100);
# agreement runs COMPARE_AGREEMENT_PODS (30) and COMPARE_QUOTA_PODS (4) under a
# gpumem quota (compare.sh), then, in the same control plane (unless
# COMPARE_PREEMPTION=0), what a preemption run does: compare-preemption.sh,
# the waiting pod COMPARE_WAITING_ROUNDS (3) times with COMPARE_WAITING_LIMIT
# (60) s each and a high-priority pod waited for COMPARE_PREEMPT_WAIT (60) s
# (preemption/SCHEDULER names it alone, in a control plane of its own);
# replicas runs
# (compare-replicas.sh: seed 000) NODES and COMPARE_REPLICA_PODS (40). A run waits at most
# COMPARE_TIMEOUT seconds (600) for its pods to be bound.
#
# --json FILE writes every result and the machine as JSON. --check also
# checks, as CI does, that every run bound all its pods with no device over
# its memory or slots and that no agreement run has an unexplained
# placement (a pod left pending for the quota as explain says counts as
# placed), and, when both agreement/devshare and agreement/hami ran, that
# each pod's outcome is the same under both (the node, up to the order in
# which the nodes were first used, and the devices; or pending; a pod placed
# apart on a W10 tie or a HAMi-exact row excused), and of each preemption
# run that every waiting pod was bound on the GPU the deletion freed, that
# devshare bound the high-priority pod where explain preempts and evicted
# only explain's victims, and that HAMi's scheduler evicted nothing, and of
# each DRA run that no device is over a capacity, and that every pod was
# bound (dra) or that pods were left pending on a full cluster and the
# simulator predicted the run (dra-fill); prints
# "e2e-compare: N passed, N failed" last and exits 1 on a failure.
#
# DEVSHARE names the executable; DEVSHARE_SERVE_ARGS adds flags to devshare
# serve; COMPARE_ALLOCATE_DELAY is the plugin stand-in's Allocate delay.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${DEVSHARE:?set DEVSHARE to the devshare executable (make compare does)}"
COMPARE_RUNS_ALL="throughput/kube-scheduler throughput/devshare throughput/hami
  throughput+qps-default/devshare throughput+qps-default/hami
  throughput+score-default/devshare throughput+score-default/hami
  storm/kube-scheduler storm/devshare storm/devshare-lock-free storm/hami
  agreement/devshare agreement/hami replicas/devshare replicas/hami"
for size in ${COMPARE_SIZES-200 1000 5000}; do
  for scheduler in kube-scheduler devshare devshare-lock-free hami; do
    COMPARE_RUNS_ALL+=" throughput+n$size/$scheduler"
  done
done
for size in ${COMPARE_DRA_SIZES-500 1000 5000}; do
  for scheduler in kube-scheduler devshare devshare-fgd; do COMPARE_RUNS_ALL+=" dra+n$size/$scheduler"; done
done
for size in ${COMPARE_DRA_FILL_SIZES-1000}; do
  for scheduler in kube-scheduler devshare devshare-fgd; do COMPARE_RUNS_ALL+=" dra-fill+n$size/$scheduler"; done
done
json= check=
while [ $# -gt 0 ]; do
  case $1 in
    --json) json=$2; shift 2 ;;
    --check) check=1; shift ;;
    *) break ;;
  esac
done
[ $# -ge 4 ] || { sed -n '2,50p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
nodes=$1 pods=$2 qps=$3 burst=$4
shift 4
runs=("$@")
[ ${#runs[@]} -gt 0 ] || read -r -a runs <<<"$(echo $COMPARE_RUNS_ALL)"
out=${E2E_BUILD:-$root/build-e2e}/compare
mkdir -p "$out"
bash "$root/scripts/k8s-binaries.sh" >"$out/k8s-binaries.env" || { echo "compare: the binaries could not be had"; exit 1; }
export E2E_BIN_ENV=$out/k8s-binaries.env DEVSHARE DEVSHARE_SERVE_ARGS=${DEVSHARE_SERVE_ARGS:-}
: >"$out/results.txt"
for run in "${runs[@]}"; do
  scenario=${run%%/*} scheduler=${run#*/}
  base=${scenario%%+*} variant=
  [ "$base" != "$scenario" ] && variant=${scenario#*+}
  n=$nodes p=$pods q=$qps b=$burst limit=${COMPARE_TIMEOUT:-600}
  config=$here/scheduler-devshare.yaml
  case $base in
    storm) n=${COMPARE_STORM_NODES:-20} p=${COMPARE_STORM_PODS:-100} ;;
    agreement) p=${COMPARE_AGREEMENT_PODS:-30} ;;
    replicas) p=${COMPARE_REPLICA_PODS:-40} ;;
  esac
  case $variant in
    '') ;;
    qps-default) q=5 b=10 ;;
    score-default)
      config=$out/scheduler-score-default.yaml
      grep -v '^percentageOfNodesToScore:' "$here/scheduler-devshare.yaml" >"$config" ;;
    n[1-9]*)
      [[ $variant =~ ^n[0-9]+$ ]] || { echo "compare: $run: unknown variant $variant"; exit 2; }
      n=${variant#n} p=$((2 * ${variant#n}))
      [ "$n" -ge 1000 ] && [ "$limit" -lt 900 ] && limit=900 ;;
    *) echo "compare: $run: unknown variant $variant"; exit 2 ;;
  esac
  profile=${scheduler%-lock-free}-scheduler cm=()
  if [ "$base" = dra ] || [ "$base" = dra-fill ]; then
    # kube-scheduler without an extender (devshare serves the DeviceClass
    # through its webhook and the claims) at its default
    # percentageOfNodesToScore, and the resourceclaim controller.
    profile=default-scheduler config=$out/scheduler-dra.yaml cm=(--controller-manager)
    sed '/^extenders:/,$d; /^percentageOfNodesToScore:/d' "$here/scheduler-devshare.yaml" >"$config"
  elif [ "$scheduler" = kube-scheduler ]; then
    # kube-scheduler alone: no extender, the configuration of
    # scheduler-devshare.yaml without its extenders section.
    profile=default-scheduler config=$out/scheduler-alone.yaml
    sed '/^extenders:/,$d' "$here/scheduler-devshare.yaml" >"$config"
  fi
  name=${scenario}-${scheduler}
  # kube-scheduler's own client at QPS / BURST as well: at its default 50 /
  # 100 its bindings, and so kube-scheduler alone, would be held to 50 pods/s.
  sed "s#^\(  kubeconfig: .*\)#\1\n  qps: $qps\n  burst: $burst#" "$config" >"$out/scheduler-$name.yaml"
  config=$out/scheduler-$name.yaml
  port=$(free_port)
  command=(bash "$here/compare.sh" "$base" "$scheduler" "$port" "$n" "$p" "$q" "$b" "$limit")
  if [ "$base" = replicas ]; then
    # The replicas bring their own kube-schedulers; the control plane's
    # schedules none of their pods.
    config=$here/scheduler-config.yaml
    command=(bash "$here/compare-replicas.sh" "$scheduler" "$n" "$p" "$q" "$b" "$limit")
  fi
  E2E_DIR=$out/$name E2E_EXTENDER_URL=https://127.0.0.1:$port \
    E2E_SCHEDULER_NAME=$profile E2E_CONTROLLER_MANAGER_QPS=$q E2E_CONTROLLER_MANAGER_BURST=$b \
    bash "$here/control-plane.sh" run --scheduler-config "$config" "${cm[@]}" -- "${command[@]}" 2>&1 |
    tee "$out/$name.log" | grep '^compare: ' | sed "s/scenario=$base /scenario=$scenario /" |
    tee -a "$out/results.txt"
done
COMPARE_HERE=$here python3 - "$out/results.txt" "$json" "$check" "$out" "${runs[@]}" <<'PY'
import json, os, platform, sys
sys.path.insert(0, os.environ["COMPARE_HERE"])
import dra_compare
results_file, json_path, check, out, *runs = sys.argv[1:]
rows = []
for line in open(results_file):
    if line.startswith("compare: result "):
        rows.append(dict(w.split("=", 1) for w in line.split()[2:] if "=" in w))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = next((int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0)
machine = f"{os.cpu_count()} CPUs ({cpu}), {mem / 2**20:.0f} GiB, {platform.system()} {platform.release()}"
print(f"compare: measured on {machine}")
keys = ["nodes", "pods", "qps", "burst", "bound", "pending", "pods_per_s", "p50_s", "p99_s", "bind_errors",
        "lock_contention", "over_allocated", "gpus", "allocated_gpus", "allocated_pct", "sim_variant",
        "sim_allocated_pct", "sim_range", "extender_cpu_s", "extender_rss_mib", "devshare_cpu_s",
        "devshare_rss_mib", "api_requests", "api_requests_kube_scheduler",
        "api_requests_kube_controller_manager", "api_requests_devshare",
        "standin_cpu_s", "kube_scheduler_cpu_s", "kube_controller_manager_cpu_s", "kube_apiserver_cpu_s",
        "etcd_cpu_s",
        "agree", "w10_node_tie", "hami_exact_row", "unexplained", "quota_pods", "pending_quota", "quota_mib",
        "waiting_rounds", "waiting_s", "waiting_nudged", "waiting_on_freed", "preempt_s", "preempt_pending_s",
        "preempt_node", "evicted", "gone", "planned", "node_writes_per_min_leader",
        "node_writes_per_min_follower", "follower_filter", "failover_resume_s", "leader_after"]
order = ["kube-scheduler", "devshare", "devshare-fgd", "devshare-lock-free", "hami"]
for scenario in dict.fromkeys(r["scenario"] for r in rows):
    by = {r["scheduler"]: r for r in rows if r["scenario"] == scenario}
    cols = [s for s in order if s in by]
    args = by.get("devshare", by.get("devshare-lock-free", {})).get("args", "-")
    print(f"\n{scenario}" + (f" (devshare serve flags added: {args.replace(',', ' ')})" if args != "-" else ""))
    shown = [k for k in keys if any(by[c].get(k, "-") != "-" for c in cols)]
    w = max([18] + [len(k) + 1 for k in shown])
    print(f"{'':{w}}" + "".join(f"{c:>20}" for c in cols) + (f"{'devshare/HAMi':>15}" if {"devshare", "hami"} <= set(cols) else ""))
    for k in shown:
        line = f"{k:{w}}" + "".join(f"{by[c].get(k, '-'):>20}" for c in cols)
        if {"devshare", "hami"} <= set(cols) and k not in ("nodes", "pods", "qps", "burst"):
            try:
                d, h = float(by["devshare"][k]), float(by["hami"][k])
                line += f"{(f'{d / h:.2f}' if h else '-'):>15}"
            except (KeyError, ValueError):
                line += f"{'-':>15}"
        print(line)
    for c in cols:
        verbs = {k: v for k, v in by[c].items() if "-" in k and ":" not in k and k not in ("scheduler", "scenario")}
        if verbs:
            print(f"  {c} API requests by verb (audit log):", " ".join(f"{k}={v}" for k, v in sorted(verbs.items())))
        for component, counts in dra_compare.requests_by_component(by[c]).items():
            print(f"  {c}: {component}'s API requests by verb (audit log):",
                  " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
for line in dra_compare.summary(rows):
    print(line)
def outcomes(scheduler):  # pod -> (outcome, verdict) from agreement.txt: "pending" or
    nodes, got = {}, {}     # (node by order of first use, GPU indices)
    for line in open(f"{out}/agreement-{scheduler}/agreement.txt"):
        pod, node, devices, _, verdict = line.split()
        if node == "-":
            got[pod] = ("pending", verdict)
            continue
        n = nodes.setdefault(node, f"n{len(nodes)}")
        got[pod] = ((n, sorted(d.rsplit("-", 1)[1] for d in devices.split(","))), verdict)
    return got
alike = None
if {"agreement/devshare", "agreement/hami"} <= set(runs) and all(
        os.path.exists(f"{out}/agreement-{s}/agreement.txt") for s in ("devshare", "hami")):
    d, h = outcomes("devshare"), outcomes("hami")
    pods = sorted(set(d) | set(h))
    excused = {"w10-node-tie", "hami-exact-row"}
    differ = [p for p in pods if d.get(p, ("not run",))[0] != h.get(p, ("not run",))[0]]
    unexcused = [p for p in differ if not {d.get(p, (0, ""))[1], h.get(p, (0, ""))[1]} & excused]
    alike = (len(pods) - len(unexcused), len(pods))
    pending = lambda runs: sum(o == "pending" for o, _ in runs.values())
    print(f"\ncompare: agreement: devshare and HAMi alike on {len(pods) - len(differ)} of {len(pods)} pods, "
          f"{len(differ) - len(unexcused)} apart on a W10 tie or a HAMi-exact row "
          f"(pending for the quota: {pending(d)} under devshare, {pending(h)} under HAMi)")
    for p in differ:
        print(f"  {p}: devshare {d.get(p, 'not run')}, HAMi {h.get(p, 'not run')}")
# The waiting pod and the high-priority pod (compare-preemption.sh), scheduler by scheduler.
preempt = {r["scheduler"]: r for r in rows if r["scenario"] == "preemption"}
said = {}  # scheduler -> the high-priority pod's last FailedScheduling message
for line in open(results_file):
    if line.startswith("compare: preemption/") and ": high: FailedScheduling: " in line:
        said[line.split("/", 1)[1].split(":", 1)[0]] = line.split(": high: FailedScheduling: ", 1)[1].strip()
label = {"hami": "HAMi"}
if preempt:
    def waited(r):
        took = [t for t in r["waiting_s"].split(",") if t != "-"]
        pending = len(r["waiting_s"].split(",")) - len(took)
        return ((", ".join(f"{float(t):.1f}" for t in took) + " s" if took else "")
                + (f"{' (' if took else ''}{pending} of {r['waiting_rounds']} still pending after "
                   f"{r['waiting_limit_s']} s{')' if took else ''}" if pending else ""))
    print("\ncompare: waiting pod (HAMi #1368), from the deletion of a bound GPU pod to the pending pod "
          "bound on the GPU it freed: " + ", ".join(f"{label.get(s, s)} {waited(r)}" for s, r in preempt.items()))
    def outcome(r):
        if "preempt_s" not in r:
            return f"still pending after {r['preempt_pending_s']} s, evicted {r['evicted']}"
        return (f"bound in {float(r['preempt_s']):.1f} s on {r['preempt_node']}, evicted {r['evicted']} "
                f"(explain: {r['planned']} on {r['planned_node']})")
    print("compare: preemption, a high-priority pod on the full cluster: "
          + "; ".join(f"{label.get(s, s)} {outcome(r)}" for s, r in preempt.items()))
    for s in preempt:
        if s in said:
            print(f"  {label.get(s, s)}'s last FailedScheduling: {said[s]}")
if json_path:
    with open(json_path, "w") as f:
        json.dump({"machine": machine, "results": rows}, f, indent=1)
    print(f"\ncompare: figures written to {json_path}")
if check:
    passed = failed = 0
    def verdict(ok, what):
        global passed, failed
        passed, failed = passed + ok, failed + (not ok)
        print(("ok: " if ok else "FAILED: ") + what)
    done = {f"{r['scenario']}/{r['scheduler']}" for r in rows}
    for run in runs:
        verdict(run in done, f"{run}: ran to its result (else see build-e2e/compare/<run>.log)")
        if run.startswith("agreement/") and os.environ.get("COMPARE_PREEMPTION", "1") != "0":
            after = "preemption/" + run.split("/", 1)[1]
            verdict(after in done, f"{after} after {run}: ran to its result (else see build-e2e/compare/<run>.log)")
    for r in rows:
        what = f"{r['scenario']}/{r['scheduler']}"
        if r["scenario"] == "preemption":
            verdict(r["over_allocated"] == "0", f"{what}: {r['over_allocated']} devices over their memory or slots")
            verdict(r["waiting_on_freed"] == r["waiting_rounds"],
                    f"{what}: {r['waiting_on_freed']} of {r['waiting_rounds']} waiting pods bound on the GPU the deleted pod freed")
            if r["scheduler"] == "hami":
                verdict(r["evicted"] == r["gone"] == "none",
                        f"{what}: the high-priority pod evicts nothing (evicted {r['evicted']}, gone {r['gone']})")
                continue
            verdict("preempt_s" in r and r["preempt_node"] == r["planned_node"],
                    f"{what}: the high-priority pod bound on {r['preempt_node']}, where explain preempts: {r['planned_node']}")
            verdict(r["evicted"] == r["gone"] == r["planned"] != "-",
                    f"{what}: only explain's victims evicted and gone: {r['planned']} (evicted {r['evicted']}, gone {r['gone']})")
            continue
        if r["scenario"].startswith("dra"):
            for ok, text in dra_compare.checks(r):
                verdict(ok, f"{what}: {text}")
            continue
        if "pending_quota" in r:
            verdict(int(r["bound"]) + int(r["pending_quota"]) == int(r["pods"]),
                    f"{what}: {r['bound']} of {r['pods']} pods bound, {r['pending_quota']} pending for the quota as explain says")
        else:
            verdict(r["bound"] == r["pods"], f"{what}: {r['bound']} of {r['pods']} pods bound")
        verdict(r["over_allocated"] in ("0", "-"), f"{what}: {r['over_allocated']} devices over their memory or slots")
        if "unexplained" in r:
            verdict(r["unexplained"] == "0", f"{what}: {r['unexplained']} placements apart from devshare explain, unexplained")
    if alike is not None:
        verdict(alike[0] == alike[1], f"agreement: devshare and HAMi alike on {alike[0]} of {alike[1]} pods but for a W10 tie or a HAMi-exact row")
    print(f"e2e-compare: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
PY
