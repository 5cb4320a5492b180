#!/usr/bin/env bash
# Load test of `devshare serve` on loopback: POST /filter with a NODES-node
# cache, against the stand-in API server of fake_apiserver.py (Filter answers
# from memory: the placement is written with the bind, which the load does
# not send). Three phases of SECONDS each, every
# connection kept alive:
#
#   open loop    vegeta attacks at a fixed RATE requests per second, whatever
#                the answers' latency: p50/p90/p99/max, success ratio, errors;
#                the p99 is set against LOAD_P99_MS (10 ms)
#   closed loop  wrk with each count of CONNECTIONS (50 and 200): requests per
#                second, p50/p90/p99/max, errors
#
# Each phase reports the CPU time (user+sys) that devshare serve, the stand-in
# API server and the load generator used, as seconds and as a share of the
# phase's wall time (100 % = one core), and what the rest of the machine used
# meanwhile; and devshare serve's resident memory after it and its peak
# (VmHWM). The line `load: summary key=value ...` near the end has every
# figure.
#
# Fails on any error: a non-2xx answer, a socket error or timeout, vegeta's
# success below 100 %, a Filter serve answered without placing the pod (an
# Error in an HTTP 200), a phase with no answer. Latency is printed against
# the target, never asserted (the machine may be shared).
#
#   tests/e2e/load.sh DEVSHARE [NODES] [SECONDS] [RATE] [CONNECTIONS]
#
# CONNECTIONS is a comma-separated list (default 50,200). vegeta is built from
# the Go module proxy at the version tests/e2e/vegeta/go.mod pins, into the
# Go caches of scripts/go-env.sh ($DEVSHARE_CACHE/go, default
# $HOME/.cache/devshare/go); later runs reuse it. wrk is Debian's,
# installed with apt-get when missing.
set -euo pipefail
devshare=$1 nodes=${2:-5000} seconds=${3:-20} rate=${4:-1000} connections=${5:-50,200}
p99_target_ms=${LOAD_P99_MS:-10}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
started=$SECONDS

log() { echo "load: $*"; }
fail() { echo "load: FAILED: $*"; exit 1; }

# --- the load generators ----------------------------------------------------------
# vegeta, built as scripts/k8s-binaries.sh builds helm: the pinned go.mod's
# module graph, the shared module and build cache, a directory per recipe.
build_vegeta() {
  local dir=$here/vegeta
  local jobs=${K8S_BUILD_JOBS:-2} version bindir start=$SECONDS
  # shellcheck source=scripts/go-cache-build.sh
  source "$here/../../scripts/go-cache-build.sh"
  version=$(awk '$1=="github.com/tsenart/vegeta/v12"{print $2} $1=="require" && $2=="github.com/tsenart/vegeta/v12"{print $3}' "$dir/go.mod" | head -1)
  [ -n "$version" ] || fail "no github.com/tsenart/vegeta/v12 version in $dir/go.mod"
  bindir=$(go_build "$dir" vegeta "$version" "-s -w -X main.Version=$version" \
             vegeta=github.com/tsenart/vegeta/v12) || exit 1
  vegeta=$bindir/vegeta
  log "vegeta $version: $vegeta ($((SECONDS - start)) s)"
}
build_vegeta

# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
need_wrk

# --- the stand-in API server and devshare serve --------------------------------------
# Two free ports below the ephemeral range: a port the kernel hands out for
# listening could be given to serve's own connection to the API server
# before serve listens on it.
read -r api_port port < <(python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
ports = []
while len(ports) < 2:
    p = random.randrange(10000, max(low, 10002))
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
    if p not in ports:
        ports.append(p)
print(*ports)')
python3 "$here/fake_apiserver.py" --port "$api_port" --nodes "$nodes" &
api_pid=$!
pids+=("$api_pid")
cat >"$work/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
current-context: load
contexts: [{name: load, context: {cluster: load, user: load}}]
clusters: [{name: load, cluster: {server: "http://127.0.0.1:$api_port"}}]
users: [{name: load, user: {}}]
KUBECONFIG
"$devshare" serve --kubeconfig "$work/kubeconfig" --listen "127.0.0.1:$port" --qps 100000 --burst 100000 \
  2>"$work/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
for _ in $(seq 1 150); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$work/serve.log"; fail "devshare serve never became ready"; }

# One pod asking a quarter of one GPU, every node a candidate.
python3 - "$nodes" >"$work/body.json" <<'PY'
import json, sys
n = int(sys.argv[1])
pod = {"metadata": {"name": "load", "namespace": "default", "uid": "load-uid"},
       "spec": {"containers": [{"name": "c", "resources": {"limits": {
           "nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "25", "nvidia.com/gpucores": "25"}}}]}}
print(json.dumps({"Pod": pod, "Nodes": None, "NodeNames": [f"node-{i:05d}" for i in range(n)]}))
PY
curl -sf -X POST --data-binary @"$work/body.json" "http://127.0.0.1:$port/filter" >"$work/answer.json"
python3 - "$work/answer.json" "$work/body.json" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
if len(r["NodeNames"]) != 1 or r["Error"]:
    sys.exit(f"load: FAILED: the first Filter placed nothing: {r['Error'] or r['FailedNodes']}")
print(f"load: one Filter keeps {r['NodeNames']} and lists {len(r['FailedNodes'])} others in FailedNodes "
      f"(request {os.path.getsize(sys.argv[2]) // 1000} kB, answer {os.path.getsize(sys.argv[1]) // 1000} kB)")
PY

# --- what each process used --------------------------------------------------------------
hz=$(getconf CLK_TCK)
# All CPUs' idle ticks (idle and iowait), in USER_HZ: the machine's busy
# time is the wall time of every core less these (a tickless kernel samples
# short bursts of work badly in the busy columns, but measures idle time).
idle_ticks() { awk '$1=="cpu"{print $5+$6}' /proc/stat; }
rss_mib() { awk -v k="$2:" '$1==k{printf "%.0f", $2/1024}' "/proc/$1/status"; }

# run_generator NAME CMD...: runs CMD in a shell that records, once CMD is
# waited for, its CPU time (the shell's cutime+cstime) in $work/NAME.ticks.
run_generator() {
  local name=$1; shift
  bash -c '"$@"; rc=$?; read -r stat </proc/$$/stat; stat=${stat##*) }; set -- $stat
           echo $(( ${14} + ${15} )) >"'"$work/$name"'.ticks"; exit $rc' gen "$@"
}

declare -A summary=()
summary_keys=()
put() { summary[$1]=$2; summary_keys+=("$1"); }

# Filters answered, by outcome, and pod PATCHes, by status, as serve counts
# them: "filter_placed 123", "patch_200 123". An answer carrying an Error is
# HTTP 200 too (the extender protocol); only this count shows it.
serve_counts() {
  curl -sf "http://127.0.0.1:$port/metrics" | awk '
    /^devshare_filter_duration_seconds_count/ { split($1, a, "\""); print "filter_" a[2], $2 }
    /^devshare_api_requests_total\{verb="patch-pod"/ { split($1, a, "\""); print "patch_" a[4], $2 }'
}

phase_begin() {
  serve_counts >"$work/counts0"
  t0=$(now) serve0=$(proc_ticks "$serve_pid") api0=$(proc_ticks "$api_pid") idle0=$(idle_ticks)
}
# phase_end KEY GENERATOR-NAME: prints and records the CPU and memory lines,
# and what serve answered: a Filter not placed (an Error, or unschedulable)
# is an error.
phase_end() {
  local key=$1 gen=$2 t1 serve1 api1 idle1 gen_ticks
  t1=$(now) serve1=$(proc_ticks "$serve_pid") api1=$(proc_ticks "$api_pid") idle1=$(idle_ticks)
  gen_ticks=$(cat "$work/$gen.ticks")
  local line
  line=$(awk -v hz="$hz" -v w="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" \
    -v s=$((serve1 - serve0)) -v a=$((api1 - api0)) -v g="$gen_ticks" -v i=$((idle1 - idle0)) \
    -v cores="$(nproc)" -v gen="$gen" 'BEGIN {
      m = cores * w * hz - i; if (m < 0) m = 0
      o = m - s - a - g; if (o < 0) o = 0
      printf "%.1f %.2f %.0f %.2f %.0f %.2f %.0f %.2f %.0f %.0f %s\n", w, s/hz, 100*s/hz/w, a/hz, 100*a/hz/w,
        g/hz, 100*g/hz/w, o/hz, 100*o/hz/w, 100*m/hz/w, cores }')
  read -r wall s_s s_p a_s a_p g_s g_p o_s o_p m_p cores <<<"$line"
  log "  CPU over ${wall} s (100 % = one core, $cores cores): devshare serve ${s_s} s (${s_p} %)," \
      "stand-in API server ${a_s} s (${a_p} %), $gen ${g_s} s (${g_p} %); the machine ${m_p} % busy," \
      "the rest (other processes, the kernel) ${o_s} s (${o_p} %)"
  local rss hwm
  rss=$(rss_mib "$serve_pid" VmRSS) hwm=$(rss_mib "$serve_pid" VmHWM)
  log "  devshare serve RSS ${rss} MiB after the phase, peak ${hwm} MiB"
  put "${key}_cpu_serve_pct" "$s_p"; put "${key}_cpu_api_pct" "$a_p"; put "${key}_cpu_gen_pct" "$g_p"
  put "${key}_cpu_other_pct" "$o_p"; put "${key}_rss_mib" "$rss"
  serve_counts >"$work/counts1"
  local counted not_placed
  counted=$(awk 'NR == FNR { before[$1] = $2; next } $2 != before[$1] { print $1, $2 - before[$1] }' \
    "$work/counts0" "$work/counts1")
  log "  devshare serve answered: $(awk '
    /^filter_/ { sub(/^filter_/, "", $1); f = f sep1 $2 " " $1; sep1 = ", " }
    /^patch_/ { sub(/^patch_/, "", $1); p = p sep2 $2 " answered " $1; sep2 = ", " }
    END { printf "Filters %s; pod PATCHes %s", f ? f : "none", p ? p : "none" }' <<<"$counted")"
  not_placed=$(awk '/^filter_/ && $1 != "filter_placed" { n += $2 } END { print n + 0 }' <<<"$counted")
  put "${key}_filters_not_placed" "$not_placed"
  if [ "$not_placed" != 0 ]; then
    log "  ERRORS: $not_placed Filters not placed (serve.log: $(grep -c . "$work/serve.log") lines, the last:)"
    tail -3 "$work/serve.log" | sed 's/^/load:     /'
    errors=$((errors + 1))
  fi
}
alive() {
  kill -0 "$serve_pid" 2>/dev/null || { tail -20 "$work/serve.log"; fail "devshare serve exited during $1"; }
  kill -0 "$api_pid" 2>/dev/null || fail "the stand-in API server exited during $1"
}

errors=0
log "machine: $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), load average $(cut -d' ' -f1-3 /proc/loadavg) before the load"
rss0=$(rss_mib "$serve_pid" VmRSS)
log "devshare serve RSS ${rss0} MiB with the $nodes-node cache, before the load"
put nodes "$nodes"; put seconds "$seconds"; put rss_start_mib "$rss0"

# --- phase 1: open loop, a fixed rate --------------------------------------------------------
printf 'POST http://127.0.0.1:%s/filter\nContent-Type: application/json\n@%s\n' "$port" "$work/body.json" \
  >"$work/targets.txt"
log "open loop: vegeta attack -rate=$rate/s -duration=${seconds}s (keep-alive) POST /filter ($nodes nodes)"
phase_begin
# Answers' bodies are read and dropped (-max-body=0); a request unanswered
# after 10 s is an error.
run_generator vegeta timeout -k 5 $((seconds + 30)) "$vegeta" attack -targets="$work/targets.txt" \
  -rate="$rate/1s" -duration="${seconds}s" -timeout=10s -keepalive=true -max-body=0 \
  -output="$work/vegeta.bin" || fail "vegeta attack exited with status $?"
phase_end vegeta vegeta
alive "the vegeta phase"
"$vegeta" report -type=json "$work/vegeta.bin" >"$work/vegeta.json"
read -r v_requests v_rate v_throughput v_success v_p50 v_p90 v_p99 v_max v_errors v_codes < <(
  python3 - "$work/vegeta.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lat = r["latencies"]
ms = lambda ns: f"{ns / 1e6:.2f}"
codes = ",".join(f"{k}:{v}" for k, v in sorted(r["status_codes"].items())) or "none"
bad = sum(v for k, v in r["status_codes"].items() if not k.startswith("2"))
print(r["requests"], f"{r['rate']:.1f}", f"{r['throughput']:.1f}", f"{r['success']:.6f}",
      ms(lat["50th"]), ms(lat["90th"]), ms(lat["99th"]), ms(lat["max"]), max(bad, len(r["errors"] or [])), codes)
for e in (r["errors"] or [])[:5]:
    print("load:   vegeta error:", e, file=sys.stderr)
PY
)
log "  $v_requests requests offered at $v_rate/s, answered $v_throughput/s;" \
    "success $(awk -v s="$v_success" 'BEGIN{printf "%.2f", 100*s}') % (status $v_codes)"
log "  latency p50 $v_p50 ms, p90 $v_p90 ms, p99 $v_p99 ms, max $v_max ms"
p99_met=$(awk -v p="$v_p99" -v t="$p99_target_ms" 'BEGIN{print (p <= t) ? "met" : "not-met"}')
log "  target p99 <= $p99_target_ms ms at $rate/s: ${p99_met/-/ } (p99 $v_p99 ms)"
if [ "$v_errors" != 0 ] || [ "$(awk -v s="$v_success" 'BEGIN{print (s < 1) ? 1 : 0}')" = 1 ]; then
  log "  ERRORS: $v_errors (success below 100 %)"
  errors=$((errors + 1))
else
  log "  0 errors"
fi
put vegeta_rate "$rate"; put vegeta_requests "$v_requests"; put vegeta_throughput "$v_throughput"
put vegeta_success "$v_success"; put vegeta_p50_ms "$v_p50"; put vegeta_p90_ms "$v_p90"
put vegeta_p99_ms "$v_p99"; put vegeta_max_ms "$v_max"; put vegeta_errors "$v_errors"
put p99_target_ms "$p99_target_ms"; put p99_target "$p99_met"

# --- phases 2 and 3: closed loop, N connections ------------------------------------------------
export WRK_BODY=$work/body.json  # read by wrk-filter.lua
for c in ${connections//,/ }; do
  log "closed loop: wrk -t2 -c$c -d${seconds}s (keep-alive) POST /filter ($nodes nodes)"
  phase_begin
  run_generator "wrk$c" timeout -k 5 $((seconds + 30)) wrk -t2 -c"$c" \
    -d"${seconds}s" --timeout 10s -s "$here/wrk-filter.lua" "http://127.0.0.1:$port/filter" \
    >"$work/wrk$c.txt" || fail "wrk exited with status $?"
  phase_end "wrk$c" "wrk$c"
  alive "the wrk -c$c phase"
  read -r _ w_requests w_us e_connect e_read e_write e_status e_timeout w_p50 w_p90 w_p99 w_max \
    < <(grep '^wrk-summary ' "$work/wrk$c.txt")
  w_errors=$((e_connect + e_read + e_write + e_status + e_timeout))
  w_rps=$(awk -v n="$w_requests" -v us="$w_us" 'BEGIN{printf "%.1f", n / (us / 1e6)}')
  log "  $w_requests requests, $w_rps/s; latency p50 $w_p50 ms, p90 $w_p90 ms, p99 $w_p99 ms, max $w_max ms"
  if [ "$w_requests" = 0 ]; then
    log "  ERRORS: no request answered"
    errors=$((errors + 1))
  elif [ "$w_errors" != 0 ]; then
    log "  ERRORS: $w_errors (connect $e_connect, read $e_read, write $e_write, status >= 400 $e_status, timeout $e_timeout)"
    errors=$((errors + 1))
  else
    log "  0 errors"
  fi
  put "wrk${c}_rps" "$w_rps"; put "wrk${c}_p50_ms" "$w_p50"; put "wrk${c}_p99_ms" "$w_p99"
  put "wrk${c}_max_ms" "$w_max"; put "wrk${c}_errors" "$w_errors"
done

# --- memory, summary ---------------------------------------------------------------------------
rss_end=$(rss_mib "$serve_pid" VmRSS) hwm=$(rss_mib "$serve_pid" VmHWM)
log "devshare serve memory: RSS ${rss0} MiB before the load, ${rss_end} MiB after it, peak ${hwm} MiB"
put rss_end_mib "$rss_end"; put rss_peak_mib "$hwm"; put wall_s $((SECONDS - started))
line="load: summary"
for k in "${summary_keys[@]}"; do line+=" $k=${summary[$k]}"; done
echo "$line"
[ "$errors" = 0 ] || fail "$errors check(s) found errors"
log "0 errors in every phase ($((SECONDS - started)) s)"
