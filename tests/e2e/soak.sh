#!/usr/bin/env bash
# The soak and fault test of devshare serve on the real control plane (run
# inside control-plane.sh run, started with scheduler-devshare.yaml and
# E2E_EXTENDER_URL=https://127.0.0.1:$DEVSHARE_PROXY_PORT, as devshare.sh is):
#
#   SOAK_MINUTES=120 SOAK_NODES=300 tests/e2e/control-plane.sh run \
#     --scheduler-config tests/e2e/scheduler-devshare.yaml -- bash tests/e2e/soak.sh
#   (make soak does this; run.sh runs a 4-minute one)
#
# SOAK_NODES GPU nodes (default 200; 1-8 GPUs of 16-80 GiB), two devshare
# serve replicas electing a leader (under libfaketime, a clock file each, when
# the clock step is among the faults), ready_proxy.py in front of them as the
# extender (the leader) and another as the webhook (every replica whose cache
# is synced, as the chart's Service), plugin_standin.py as the device plugins, and
# fault_proxy.py between each replica and the API server (its own CA and
# certificate; one client identity per replica, devshare-serve-a and -b, so
# the audit log tells them apart). soak_churn.py then churns pods for
# SOAK_MINUTES, injects the faults (SOAK_FAULTS, comma-separated, in order:
#   watch-cut        every streaming watch of both replicas cut, then every connection
#   api-errors       SOAK_ERROR_FRACTION (0.5) of the replicas' requests answered
#                    429 with Retry-After for SOAK_ERROR_SECONDS (30), then 500
#   leader-kill      SOAK_BURST (20) pods created, the leader SIGKILLed 1.5 s later
#   follower-stop    the follower SIGSTOPped 40 s (past the 15 s Lease), SIGCONT
#   node-recreate    the node with most pods deleted with its pods, created again
#                    with other GPUs under the same name
#   clock-step       the follower's wall clock stepped +600 s for 60 s, then back;
#                    then the leader's (libfaketime; the monotonic clock untouched)
#   apiserver-restart, etcd-restart   control-plane.sh restart
# default: the first four and node-recreate under 30 minutes, all of them
# otherwise) and recounts the cluster every minute (see soak_churn.py).
#
# With SOAK_DRA=1 (the default; the control plane then runs with
# --controller-manager, as run.sh starts it) the replicas also serve the
# DeviceClass hami-gpu (--dra-device-class, binpack): SOAK_DRA_NODES nodes
# (15 % of SOAK_NODES) publish 4 GPUs each as HAMi's DRA driver does, pods
# from ResourceClaimTemplates arrive beside the annotation pods
# (SOAK_DRA_FRACTION, 0.25, as many), the leader-kill burst has DRA pods too,
# each fault is followed by a DRA probe pod as well, and the recount checks
# the DRA devices (soak_dra.py, dra_recount.py).
#
# Environment: SOAK_MINUTES (5), SOAK_NODES (200), SOAK_SEED (1), SOAK_FAULTS,
# SOAK_UTIL (0.6 of the GPU memory), SOAK_RATE_MAX (2.5 pods/s), SOAK_JSON
# (write the summary there), SOAK_SERVE_ARGS (added to devshare serve's),
# SOAK_DRA (1), SOAK_DRA_NODES, SOAK_DRA_FRACTION, SOAK_PROBE_PERIOD (2 s) and
# SOAK_PROBE_FAILURES (3): the webhook Service's readiness probe.
# Prints "e2e-soak: N passed, N failed" last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/lib.sh"
: "${KUBE_SERVER:?run inside tests/e2e/control-plane.sh run}"
: "${DEVSHARE:?set DEVSHARE to the devshare executable}"
: "${DEVSHARE_PROXY_PORT:?set DEVSHARE_PROXY_PORT to the port of E2E_EXTENDER_URL}"

export SOAK_MINUTES=${SOAK_MINUTES:-5} SOAK_NODES=${SOAK_NODES:-200} SOAK_SEED=${SOAK_SEED:-1}
if [ -z "${SOAK_FAULTS:-}" ]; then
  if awk "BEGIN { exit !($SOAK_MINUTES < 30) }"; then
    SOAK_FAULTS=watch-cut,api-errors,leader-kill,node-recreate
  else
    SOAK_FAULTS=watch-cut,api-errors,leader-kill,follower-stop,node-recreate,clock-step,apiserver-restart,etcd-restart
  fi
fi
export SOAK_FAULTS SOAK_DRA=${SOAK_DRA:-1}
work=$E2E_DIR/soak
mkdir -p "$work"
echo "soak: $SOAK_MINUTES min, $SOAK_NODES nodes, seed $SOAK_SEED, faults $SOAK_FAULTS, DRA $SOAK_DRA"
if [ "$SOAK_DRA" != 0 ] && [ -z "${CONTROLLER_MANAGER_HEALTHZ:-}" ]; then
  echo "soak: SOAK_DRA=1 needs the control plane's kube-controller-manager (control-plane.sh --controller-manager)"
  echo "e2e-soak: 0 passed, 1 failed"
  exit 1
fi

# The executable is copied: a rebuild of the tree during a long run does not change it.
# So are the shared libraries of the build tree it loads (libdevshare).
mkdir -p "$work/lib"
cp "$DEVSHARE" "$work/devshare"
ldd "$DEVSHARE" | awk '$2 == "=>" && $3 ~ /^\// && $3 !~ /^\/(usr\/)?lib/ { print $3 }' |
  while read -r lib; do cp -L "$lib" "$work/lib/"; done
export SOAK_DEVSHARE=$work/devshare LD_LIBRARY_PATH=$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$SOAK_DEVSHARE" --version >/dev/null 2>&1 || "$SOAK_DEVSHARE" --help >/dev/null || {
  echo "soak: the copy of $DEVSHARE does not run"
  echo "e2e-soak: 0 passed, 1 failed"
  exit 1
}

# libfaketime for the clock step (Debian's package, installed when missing).
faketime_lib() {
  local f
  for f in /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 /usr/lib/*/faketime/libfaketime.so.1; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}
export SOAK_FAKETIME_LIB=
if [[ ,$SOAK_FAULTS, == *,clock-step,* ]]; then
  if ! faketime_lib >/dev/null; then
    echo "soak: installing libfaketime (Debian)"
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq libfaketime >/dev/null 2>&1 ||
      echo "soak: libfaketime could not be installed: the clock step will fail"
  fi
  SOAK_FAKETIME_LIB=$(faketime_lib || true)
  export SOAK_FAKETIME_FILE=$work/faketime  # -a, -b: each replica's offset
fi

# Certificates: the fault proxy's own CA and serving certificate, and one
# client certificate per replica from the cluster's CA (system:masters, as
# control-plane.sh's devshare-serve).
pki=$work/pki
mkdir -p "$pki"
quiet() { local o; o=$("$@" 2>&1) || { echo "$o" >&2; return 1; }; }
newkey() { quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
signed() {  # signed NAME SUBJECT EXT CA_CRT CA_KEY
  newkey "$pki/$1.key"
  quiet openssl req -new -key "$pki/$1.key" -subj "$2" -out "$pki/$1.csr"
  printf '[ext]\n%s\n' "$3" >"$pki/$1.ext"
  quiet openssl x509 -req -in "$pki/$1.csr" -CA "$4" -CAkey "$5" -CAcreateserial -days 30 -sha256 \
    -extfile "$pki/$1.ext" -extensions ext -out "$pki/$1.crt"
}
newkey "$pki/proxy-ca.key"
quiet openssl req -x509 -new -key "$pki/proxy-ca.key" -subj "/CN=devshare-soak-fault-proxy-ca" -days 30 \
  -sha256 -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out "$pki/proxy-ca.crt"
signed proxy "/CN=fault-proxy" "keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost" "$pki/proxy-ca.crt" "$pki/proxy-ca.key"
for r in a b; do
  signed "client-$r" "/O=system:masters/CN=devshare-serve-$r" "keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth" "$E2E_DIR/pki/ca.crt" "$E2E_DIR/pki/ca.key"
done

proxy_a=$(free_port) proxy_b=$(free_port) control=$(free_port)
export SOAK_PORT_A=$(free_port) SOAK_PORT_B=$(free_port) SOAK_PROXY_CONTROL=$control
for r in a b; do
  port_var=proxy_$r
  cat >"$work/serve-$r.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fault-proxy
  cluster:
    server: https://127.0.0.1:${!port_var}
    certificate-authority-data: $(base64 -w0 <"$pki/proxy-ca.crt")
users:
- name: devshare-serve-$r
  user:
    client-certificate-data: $(base64 -w0 <"$E2E_DIR/pki/serve-client.crt")
    client-key-data: $(base64 -w0 <"$E2E_DIR/pki/serve-client.key")
contexts:
- name: soak
  context: {cluster: fault-proxy, user: devshare-serve-$r}
current-context: soak
EOF
done
export SOAK_KUBECONFIG_A=$work/serve-a.kubeconfig SOAK_KUBECONFIG_B=$work/serve-b.kubeconfig
export SOAK_CONTROL_PLANE=$here/control-plane.sh

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
python3 "$here/fault_proxy.py" --upstream "$KUBE_SERVER" --upstream-ca "$KUBE_CA" \
  --cert "$pki/proxy.crt" --key "$pki/proxy.key" --control "$control" \
  --listen "a=$proxy_a=$pki/client-a.crt=$pki/client-a.key" \
  --listen "b=$proxy_b=$pki/client-b.crt=$pki/client-b.key" >"$E2E_LOGS/fault-proxy.log" 2>&1 &
pids+=($!)
start_plugin_standin 0
pids+=($!)
python3 "$here/ready_proxy.py" --listen "$DEVSHARE_PROXY_PORT" --backend "127.0.0.1:$SOAK_PORT_A" \
  --backend "127.0.0.1:$SOAK_PORT_B" --ca "$KUBE_CA" >"$E2E_LOGS/ready-proxy.log" 2>&1 &
pids+=($!)
# The webhook's own Service, as the chart has it: every replica whose cache
# is synced (/readyz/admission), leading or not, probed as its readinessProbe.
SOAK_WEBHOOK_PORT=$(free_port)
export SOAK_WEBHOOK_PORT
export SOAK_PROBE_PERIOD=${SOAK_PROBE_PERIOD:-2} SOAK_PROBE_FAILURES=${SOAK_PROBE_FAILURES:-3}
python3 "$here/ready_proxy.py" --listen "$SOAK_WEBHOOK_PORT" --ready-path /readyz/admission \
  --backend "127.0.0.1:$SOAK_PORT_A" --backend "127.0.0.1:$SOAK_PORT_B" --ca "$KUBE_CA" \
  --probe-period "$SOAK_PROBE_PERIOD" --probe-failures "$SOAK_PROBE_FAILURES" \
  >"$E2E_LOGS/webhook-proxy.log" 2>&1 &
pids+=($!)
wait_until 10 grep -q listening "$E2E_LOGS/fault-proxy.log" || {
  cat "$E2E_LOGS/fault-proxy.log"
  echo "e2e-soak: 0 passed, 1 failed"
  exit 1
}

python3 "$here/soak_churn.py"
