#!/usr/bin/env bash
# A Kubernetes control plane on loopback for the end-to-end tests: etcd,
# kube-apiserver and kube-scheduler, and with --controller-manager
# kube-controller-manager running only the ResourceClaim controller; no kubelet.
#
#   tests/e2e/control-plane.sh start [--scheduler-config FILE] [--controller-manager]
#   tests/e2e/control-plane.sh stop
#   tests/e2e/control-plane.sh status
#   tests/e2e/control-plane.sh run [--scheduler-config FILE] [--controller-manager] -- COMMAND [ARGS...]
#   tests/e2e/control-plane.sh restart etcd|kube-apiserver|kube-scheduler|kube-controller-manager [--kill]
#
# `start` generates certificates with openssl, starts the processes in the
# background, waits until the API server's /readyz and the scheduler's (and
# controller manager's) /healthz answer, and writes $E2E_DIR/env (KEY=VALUE
# lines, sourceable) naming the server URL, CA, kubeconfigs and client
# certificates. `stop` ends them (TERM, then KILL after 15 s). `run` starts,
# runs COMMAND with the env file's variables exported, and stops on any exit;
# its exit status is COMMAND's. `restart` (a fault for the soak test) stops one
# component (TERM, or KILL with --kill) and starts it again with the same
# arguments and ports, returning once it answers again.
#
# --controller-manager: also kube-controller-manager (KUBE_CONTROLLER_MANAGER of
# scripts/k8s-binaries.sh) with --controllers=resourceclaim-controller only. It
# creates the ResourceClaim of each spec.resourceClaims[].resourceClaimTemplateName
# of a pod (owned by the pod, also while the pod has scheduling gates), writes the
# pod's status.resourceClaimStatuses, and drops pods that are gone or done from
# claims' status.reservedFor. No leader election. It runs as the user
# system:kube-controller-manager (not --use-service-account-credentials), whose
# default ClusterRole does not let it write claims or pod status; start binds the
# controller's own default ClusterRole, system:controller:resource-claim-controller,
# to that user. No garbage collector runs: the claims of a deleted pod may stay.
#
# The scheduler configuration FILE (a KubeSchedulerConfiguration) may use these
# placeholders, replaced when the cluster starts:
#   @SCHEDULER_KUBECONFIG@  the scheduler's kubeconfig (clientConnection.kubeconfig)
#   @EXTENDER_URL@          $E2E_EXTENDER_URL (e.g. http://127.0.0.1:9443/extender)
#   @SCHEDULER_NAME@        $E2E_SCHEDULER_NAME (default devshare-scheduler)
#   @CA_CERT@ @SERVE_CERT@ @SERVE_KEY@  paths of the certificates written here
# Without --scheduler-config a plain configuration is used (no extender).
#
# Environment:
#   E2E_DIR        state directory (default <repo>/build-e2e/cluster); wiped by start
#   E2E_BIN_ENV    a file of KEY=VALUE from scripts/k8s-binaries.sh; without it
#                  that script is run (builds or reuses the cached binaries)
#   E2E_START_TIMEOUT  seconds to wait for each component (default 180)
#   E2E_CONTROLLER_MANAGER_QPS, E2E_CONTROLLER_MANAGER_BURST  kube-controller-manager's
#                  --kube-api-qps and --kube-api-burst (default: its own, 20 and 30)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
E2E_DIR=${E2E_DIR:-$root/build-e2e/cluster}
timeout=${E2E_START_TIMEOUT:-180}

log() { echo "control-plane: $*" >&2; }
die() { echo "control-plane: ERROR: $*" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# --- certificates ------------------------------------------------------------
# quiet COMMAND...: shows COMMAND's output only when it fails.
quiet() {
  local o
  o=$("$@" 2>&1) || { echo "$o" >&2; return 1; }
}

# sign NAME SUBJECT EXT: key + certificate signed by the CA, EXT an openssl
# extension section body (keyUsage, extendedKeyUsage, subjectAltName).
sign() {
  local name=$1 subj=$2 ext=$3 d=$E2E_DIR/pki
  quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/$name.key"
  quiet openssl req -new -key "$d/$name.key" -subj "$subj" -out "$d/$name.csr"
  printf '[ext]\n%s\n' "$ext" > "$d/$name.ext"
  quiet openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
    -days 30 -sha256 -extfile "$d/$name.ext" -extensions ext -out "$d/$name.crt"
  rm -f "$d/$name.csr" "$d/$name.ext"
}

make_pki() {
  local d=$E2E_DIR/pki
  mkdir -p "$d"
  quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/ca.key"
  quiet openssl req -x509 -new -key "$d/ca.key" -subj "/CN=devshare-e2e-ca" -days 30 -sha256 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$d/ca.crt"
  local server="keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth"
  local client="keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
  # 10.0.0.1: the `kubernetes` Service's address in --service-cluster-ip-range.
  sign apiserver "/CN=kube-apiserver" "$server
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  # Serving certificate for the component under test (the extender and
  # admission webhook), so the API server can reach it over TLS with CA_BUNDLE.
  sign serve "/CN=devshare-serve" "$server
subjectAltName=IP:127.0.0.1,DNS:localhost"
  # Clients: the admin and the component under test are in system:masters;
  # the scheduler and the controller manager are the users RBAC's default
  # bindings expect.
  sign admin "/O=system:masters/CN=devshare-e2e-admin" "$client"
  sign serve-client "/O=system:masters/CN=devshare-serve" "$client"
  # HAMi's scheduler beside devshare: an identity of its own, so that the
  # audit log attributes every request.
  sign hami-client "/O=system:masters/CN=hami-scheduler" "$client"
  sign scheduler "/CN=system:kube-scheduler" "$client"
  sign controller-manager "/CN=system:kube-controller-manager" "$client"
  quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/sa.key"
  quiet openssl pkey -in "$d/sa.key" -pubout -out "$d/sa.pub"
}

# kubeconfig FILE USER: a kubeconfig with the certificates embedded.
kubeconfig() {
  local file=$1 user=$2 d=$E2E_DIR/pki
  cat > "$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: $KUBE_SERVER
    certificate-authority-data: $(base64 -w0 < "$d/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 < "$d/$user.crt")
    client-key-data: $(base64 -w0 < "$d/$user.key")
contexts:
- name: e2e
  context: {cluster: e2e, user: $user}
current-context: e2e
EOF
}

# --- processes ---------------------------------------------------------------
# launch NAME BINARY ARGS...: runs in its own session, logs to logs/NAME.log.
launch() {
  local name=$1; shift
  setsid "$@" >>"$E2E_DIR/logs/$name.log" 2>&1 </dev/null &
  local pid=$! exe i
  echo "$pid" > "$E2E_DIR/run/$name.pid"
  printf '%s\0' "$@" > "$E2E_DIR/run/$name.cmd"
  echo "$1" > "$E2E_DIR/run/$name.exe"
  # Until the child has become the binary (the shell's fork, then setsid's
  # exec and the binary's): before that alive() would take it for exited.
  exe=$(readlink -f "$1")
  for ((i = 0; i < 200; i++)); do
    [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
}

alive() {
  local pid
  pid=$(cat "$E2E_DIR/run/$1.pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: the process must still run the binary.
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$(cat "$E2E_DIR/run/$1.exe")")" ]
}

# wait_for NAME URL CURL_ARGS...: until URL answers 200 or NAME exits.
wait_for() {
  local name=$1 url=$2; shift 2
  local t0=$SECONDS
  until curl -sf -o /dev/null --max-time 5 "$@" "$url"; do
    if ! alive "$name"; then
      echo "--- last lines of $E2E_DIR/logs/$name.log" >&2
      tail -n 40 "$E2E_DIR/logs/$name.log" >&2
      die "$name exited during start-up"
    fi
    if (( SECONDS - t0 > timeout )); then
      tail -n 40 "$E2E_DIR/logs/$name.log" >&2
      die "$name did not answer $url within ${timeout}s"
    fi
    sleep 0.5
  done
  log "$name ready after $(( SECONDS - t0 ))s"
}

stop_one() {
  local name=$1 pid i
  [ -f "$E2E_DIR/run/$name.pid" ] || return 0
  pid=$(cat "$E2E_DIR/run/$name.pid")
  if alive "$name"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do alive "$name" || break; sleep 0.1; done
    if alive "$name"; then
      log "$name (pid $pid) ignored TERM; killing"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$E2E_DIR/run/$name.pid" "$E2E_DIR/run/$name.exe"
}

cmd_stop() {
  [ -d "$E2E_DIR/run" ] || return 0
  stop_one kube-controller-manager
  stop_one kube-scheduler
  stop_one kube-apiserver
  stop_one etcd
  log "stopped"
}

cmd_status() {
  local n rc=0 names=(etcd kube-apiserver kube-scheduler)
  # The controller manager when the cluster was started with it.
  [ -f "$E2E_DIR/run/kube-controller-manager.cmd" ] && names+=(kube-controller-manager)
  for n in "${names[@]}"; do
    if alive "$n"; then echo "$n: running (pid $(cat "$E2E_DIR/run/$n.pid"))"; else echo "$n: not running"; rc=1; fi
  done
  return $rc
}

render_config() {
  local src=$1 dst=$2
  sed -e "s#@SCHEDULER_KUBECONFIG@#$E2E_DIR/scheduler.kubeconfig#g" \
      -e "s#@EXTENDER_URL@#${E2E_EXTENDER_URL:-}#g" \
      -e "s#@SCHEDULER_NAME@#${E2E_SCHEDULER_NAME:-devshare-scheduler}#g" \
      -e "s#@CA_CERT@#$E2E_DIR/pki/ca.crt#g" \
      -e "s#@SERVE_CERT@#$E2E_DIR/pki/serve.crt#g" \
      -e "s#@SERVE_KEY@#$E2E_DIR/pki/serve.key#g" "$src" > "$dst"
  if grep -q '@[A-Z_]*@' "$dst"; then
    die "unknown placeholder in $src: $(grep -o '@[A-Z_]*@' "$dst" | sort -u | tr '\n' ' ')"
  fi
  if grep -Eq 'urlPrefix:[[:space:]]*("")?[[:space:]]*$' "$dst"; then
    die "$src has an extender with an empty urlPrefix: set E2E_EXTENDER_URL"
  fi
}

cmd_start() {
  local sched_src=$here/scheduler-config.yaml controller_manager=0
  while [ $# -gt 0 ]; do
    case $1 in
      --scheduler-config) sched_src=$(readlink -f "$2"); shift 2 ;;
      --controller-manager) controller_manager=1; shift ;;
      *) die "unknown option $1" ;;
    esac
  done
  [ -f "$sched_src" ] || die "no scheduler configuration $sched_src"
  command -v openssl >/dev/null || die "openssl is not installed"
  command -v curl >/dev/null || die "curl is not installed"

  local t_start=$SECONDS
  if [ -n "${E2E_BIN_ENV:-}" ]; then
    # shellcheck disable=SC1090
    . "$E2E_BIN_ENV"
  else
    local bins
    bins=$("$root/scripts/k8s-binaries.sh") || die "the Kubernetes binaries are not available (see above)"
    eval "$bins"
  fi
  local b needed=("$ETCD" "$KUBE_APISERVER" "$KUBE_SCHEDULER")
  [ "$controller_manager" = 1 ] && needed+=("${KUBE_CONTROLLER_MANAGER:-}")
  for b in "${needed[@]}"; do [ -x "$b" ] || die "missing binary ${b:-KUBE_CONTROLLER_MANAGER (not set)}"; done

  # A previous cluster in the same directory is stopped and wiped.
  cmd_stop 2>/dev/null || true
  rm -rf "$E2E_DIR"
  mkdir -p "$E2E_DIR/logs" "$E2E_DIR/run" "$E2E_DIR/etcd"
  trap 'rc=$?; if [ $rc -ne 0 ]; then log "start failed; stopping what was started"; cmd_stop; fi' EXIT

  local etcd_port etcd_peer api_port sched_port cm_port
  etcd_port=${E2E_ETCD_PORT:-$(free_port)}
  etcd_peer=$(free_port)
  api_port=${E2E_APISERVER_PORT:-$(free_port)}
  sched_port=$(free_port)
  cm_port=$(free_port)
  KUBE_SERVER=https://127.0.0.1:$api_port

  local t0=$SECONDS
  make_pki
  kubeconfig "$E2E_DIR/admin.kubeconfig" admin
  kubeconfig "$E2E_DIR/scheduler.kubeconfig" scheduler
  kubeconfig "$E2E_DIR/controller-manager.kubeconfig" controller-manager
  kubeconfig "$E2E_DIR/serve.kubeconfig" serve-client
  kubeconfig "$E2E_DIR/hami.kubeconfig" hami-client
  log "certificates in $E2E_DIR/pki ($(( SECONDS - t0 ))s)"

  launch etcd "$ETCD" --name e2e --data-dir "$E2E_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "e2e=http://127.0.0.1:$etcd_peer" --initial-cluster-state new \
    --logger zap --log-level warn
  wait_for etcd "http://127.0.0.1:$etcd_port/health"

  local pki=$E2E_DIR/pki
  # Every request, once it is answered, with who made it
  # (tests/e2e/audit_count.py counts them).
  printf '%s\n' 'apiVersion: audit.k8s.io/v1' 'kind: Policy' 'omitStages: [RequestReceived]' \
    'rules:' '- level: Metadata' >"$E2E_DIR/audit-policy.yaml"
  # Admission: the default set (which includes MutatingAdmissionWebhook and
  # TaintNodesByCondition) except ServiceAccount, since no controller manager
  # creates the namespaces' default service accounts.
  # A static token for the exec-credential checks (a kubeconfig whose
  # credential plugin prints it): user exec-user, an administrator.
  printf '%s\n' 'e2e-exec-token,exec-user,exec-user,"system:masters"' >"$E2E_DIR/tokens.csv"
  launch kube-apiserver "$KUBE_APISERVER" \
    --etcd-servers "http://127.0.0.1:$etcd_port" --token-auth-file "$E2E_DIR/tokens.csv" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --cert-dir "$pki" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 --endpoint-reconciler-type none \
    --authorization-mode RBAC \
    --enable-admission-plugins MutatingAdmissionWebhook,ValidatingAdmissionWebhook,TaintNodesByCondition \
    --disable-admission-plugins ServiceAccount \
    --allow-privileged=true --profiling=false --v=1 \
    --audit-policy-file "$E2E_DIR/audit-policy.yaml" --audit-log-path "$E2E_DIR/logs/audit.log" \
    --audit-log-format json --audit-log-mode batch --audit-log-batch-max-wait 1s
  local curl_admin=(--cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key")
  wait_for kube-apiserver "$KUBE_SERVER/readyz" "${curl_admin[@]}"

  render_config "$sched_src" "$E2E_DIR/scheduler-config.yaml"
  launch kube-scheduler "$KUBE_SCHEDULER" --config "$E2E_DIR/scheduler-config.yaml" \
    --bind-address 127.0.0.1 --secure-port "$sched_port" \
    --authentication-kubeconfig "$E2E_DIR/scheduler.kubeconfig" \
    --authorization-kubeconfig "$E2E_DIR/scheduler.kubeconfig" --v=2
  wait_for kube-scheduler "https://127.0.0.1:$sched_port/healthz" -k

  if [ "$controller_manager" = 1 ]; then
    # User system:kube-controller-manager's default ClusterRole reads all and
    # writes almost nothing (the controllers are meant to write with their
    # service accounts' roles): the ResourceClaim controller's role is bound
    # to the user.
    curl -sSf -o /dev/null --max-time 30 "${curl_admin[@]}" -X POST -H 'Content-Type: application/json' \
      "$KUBE_SERVER/apis/rbac.authorization.k8s.io/v1/clusterrolebindings" --data-binary \
      '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"devshare-e2e:controller-manager:resource-claim-controller"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:controller:resource-claim-controller"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"system:kube-controller-manager"}]}' ||
      die "could not bind system:controller:resource-claim-controller to system:kube-controller-manager"
    launch kube-controller-manager "$KUBE_CONTROLLER_MANAGER" \
      --kubeconfig "$E2E_DIR/controller-manager.kubeconfig" \
      --controllers resourceclaim-controller --leader-elect=false \
      --bind-address 127.0.0.1 --secure-port "$cm_port" \
      --authentication-kubeconfig "$E2E_DIR/controller-manager.kubeconfig" \
      --authorization-kubeconfig "$E2E_DIR/controller-manager.kubeconfig" --v=2 \
      ${E2E_CONTROLLER_MANAGER_QPS:+--kube-api-qps "$E2E_CONTROLLER_MANAGER_QPS"} \
      ${E2E_CONTROLLER_MANAGER_BURST:+--kube-api-burst "$E2E_CONTROLLER_MANAGER_BURST"}
    wait_for kube-controller-manager "https://127.0.0.1:$cm_port/healthz" -k
  fi

  cat > "$E2E_DIR/env" <<EOF
E2E_DIR=$E2E_DIR
K8S_VERSION=$K8S_VERSION
KUBE_SERVER=$KUBE_SERVER
KUBECONFIG=$E2E_DIR/admin.kubeconfig
KUBE_CA=$pki/ca.crt
KUBE_CLIENT_CERT=$pki/admin.crt
KUBE_CLIENT_KEY=$pki/admin.key
CA_BUNDLE=$(base64 -w0 < "$pki/ca.crt")
SERVE_CERT=$pki/serve.crt
SERVE_KEY=$pki/serve.key
SERVE_KUBECONFIG=$E2E_DIR/serve.kubeconfig
HAMI_KUBECONFIG=$E2E_DIR/hami.kubeconfig
AUDIT_LOG=$E2E_DIR/logs/audit.log
SERVE_CLIENT_CERT=$pki/serve-client.crt
SERVE_CLIENT_KEY=$pki/serve-client.key
SCHEDULER_KUBECONFIG=$E2E_DIR/scheduler.kubeconfig
SCHEDULER_CONFIG=$E2E_DIR/scheduler-config.yaml
SCHEDULER_HEALTHZ=https://127.0.0.1:$sched_port/healthz
ETCD_URL=http://127.0.0.1:$etcd_port
E2E_LOGS=$E2E_DIR/logs
EOF
  if [ "$controller_manager" = 1 ]; then
    printf '%s\n' "CONTROLLER_MANAGER_KUBECONFIG=$E2E_DIR/controller-manager.kubeconfig" \
      "CONTROLLER_MANAGER_HEALTHZ=https://127.0.0.1:$cm_port/healthz" >>"$E2E_DIR/env"
  fi
  trap - EXIT
  log "up in $(( SECONDS - t_start ))s: $KUBE_SERVER (Kubernetes $K8S_VERSION); env in $E2E_DIR/env, logs in $E2E_DIR/logs"
}

cmd_run() {
  local start_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do start_args+=("$1"); shift; done
  [ "${1:-}" = "--" ] || die "usage: $0 run [--scheduler-config FILE] [--controller-manager] -- COMMAND [ARGS...]"
  shift
  [ $# -gt 0 ] || die "run: no command"
  trap 'cmd_stop' EXIT
  trap 'exit 130' INT TERM
  cmd_start "${start_args[@]}"
  trap 'cmd_stop' EXIT
  set -a
  # shellcheck disable=SC1091
  . "$E2E_DIR/env"
  set +a
  local rc=0
  "$@" || rc=$?
  return $rc
}

# restart NAME [--kill]: the component stopped and started again as launch
# started it (same binary, arguments and ports); waits until it answers.
cmd_restart() {
  local name=${1:-} pid args=()
  [ -f "$E2E_DIR/run/$name.cmd" ] || die "restart: $name was not started in $E2E_DIR"
  # shellcheck disable=SC1091
  . "$E2E_DIR/env"
  if [ "${2:-}" = --kill ] && alive "$name"; then
    pid=$(cat "$E2E_DIR/run/$name.pid")
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  stop_one "$name"
  mapfile -d '' args < "$E2E_DIR/run/$name.cmd"
  launch "$name" "${args[@]}"
  case $name in
    etcd) wait_for etcd "$ETCD_URL/health" ;;
    kube-apiserver) wait_for kube-apiserver "$KUBE_SERVER/readyz" \
      --cacert "$KUBE_CA" --cert "$KUBE_CLIENT_CERT" --key "$KUBE_CLIENT_KEY" ;;
    kube-scheduler) wait_for kube-scheduler "$SCHEDULER_HEALTHZ" -k ;;
    kube-controller-manager) wait_for kube-controller-manager "$CONTROLLER_MANAGER_HEALTHZ" -k ;;
  esac
}

case ${1:-} in
  restart) shift; cmd_restart "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  run) shift; cmd_run "$@" ;;
  *) sed -n '2,45p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
