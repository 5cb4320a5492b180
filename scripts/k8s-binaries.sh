#!/usr/bin/env bash
# Installs or builds what the Kubernetes end-to-end test runs, into a cache:
#   kube-apiserver, kube-scheduler  built from k8s.io/kubernetes (tests/e2e/k8s/go.mod)
#   etcd                            Debian's etcd-server package
# Idempotent: a second run with the same go.mod, go.sum and Go toolchain only
# checks the cache and prints the paths. Prints KEY=VALUE lines on stdout
# (KUBE_APISERVER, KUBE_SCHEDULER, ETCD, K8S_VERSION, K8S_BIN_DIR) so callers can
# `eval "$(scripts/k8s-binaries.sh)"`; progress goes to stderr. Exits non-zero
# with a message naming what could not be had.
#
# Environment:
#   DEVSHARE_CACHE   cache root (default $HOME/.cache/devshare); this script uses
#                    $DEVSHARE_CACHE/k8s-e2e/{gomod,gobuild,bin}
#   K8S_BUILD_JOBS   parallel compile jobs, go build -p (default 2)
#   K8S_NO_INSTALL=1 never run apt-get (fail instead if etcd is missing)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
moddir=$root/tests/e2e/k8s
cache=${DEVSHARE_CACHE:-$HOME/.cache/devshare}/k8s-e2e
jobs=${K8S_BUILD_JOBS:-2}

log() { echo "k8s-binaries: $*" >&2; }
fail() { echo "k8s-binaries: CANNOT PROVIDE THE KUBERNETES BINARIES: $*" >&2; exit 1; }

# --- etcd (Debian) -----------------------------------------------------------
find_etcd() {
  local e
  for e in "${ETCD:-}" /usr/bin/etcd "$(command -v etcd 2>/dev/null || true)"; do
    [ -n "$e" ] && [ -x "$e" ] && { echo "$e"; return 0; }
  done
  return 1
}
etcd_bin=$(find_etcd || true)
if [ -z "$etcd_bin" ]; then
  [ "${K8S_NO_INSTALL:-0}" = 1 ] && fail "etcd is not installed and K8S_NO_INSTALL=1 (apt-get install etcd-server)"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo -n)
  log "installing Debian's etcd-server"
  export DEBIAN_FRONTEND=noninteractive
  { "${sudo_cmd[@]}" apt-get update -qq && \
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends etcd-server; } >&2 \
    || fail "apt-get install etcd-server failed"
  etcd_bin=$(find_etcd) || fail "etcd-server installed but no etcd binary found"
fi

# --- kube-apiserver and kube-scheduler from the Go module proxy ---------------
command -v go >/dev/null || fail "no Go toolchain on PATH (needed to build k8s.io/kubernetes)"
k8s_version=$(awk '$1=="require" && $2=="k8s.io/kubernetes"{print $3} $1=="k8s.io/kubernetes" && $2 ~ /^v1\./{print $2}' "$moddir/go.mod" | head -1)
[ -n "$k8s_version" ] || fail "no k8s.io/kubernetes version in $moddir/go.mod"
need_go=$(awk '$1=="go"{print $2; exit}' "$moddir/go.mod")
have_go=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$need_go" "$have_go" | sort -V | head -1)" != "$need_go" ]; then
  fail "Kubernetes $k8s_version needs Go >= $need_go, this machine has go$have_go"
fi

# The cache key covers everything that changes the binaries.
key=$( { cat "$moddir/go.mod" "$moddir/go.sum"; go env GOVERSION GOOS GOARCH; sed -n '/^# build-recipe/,/^# end-build-recipe/p' "$0"; } | sha256sum | cut -c1-12)
bindir=$cache/bin/$k8s_version-$key
if [ -f "$bindir/.complete" ] && [ -x "$bindir/kube-apiserver" ] && [ -x "$bindir/kube-scheduler" ]; then
  log "cached: $bindir"
else
  mkdir -p "$cache/gomod" "$cache/gobuild" "$cache/bin"
  export GOMODCACHE=$cache/gomod GOCACHE=$cache/gobuild GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
  minor=$(echo "$k8s_version" | cut -d. -f2)
  # build-recipe
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  # end-build-recipe
  tmp=$(mktemp -d "$cache/bin/.build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  start=$(date +%s)
  log "building kube-apiserver and kube-scheduler $k8s_version with go$have_go (-p $jobs); a first build takes long, later ones come from $cache"
  (cd "$moddir" && go mod download) >&2 || fail "could not download the modules of $moddir/go.mod from the Go module proxy"
  for cmd in kube-apiserver kube-scheduler; do
    (cd "$moddir" && go build -p "$jobs" -trimpath -ldflags "$ldflags" -o "$tmp/$cmd" "k8s.io/kubernetes/cmd/$cmd") >&2 \
      || fail "go build k8s.io/kubernetes/cmd/$cmd failed"
    log "built $cmd after $(( $(date +%s) - start ))s"
  done
  touch "$tmp/.complete"
  rm -rf "$bindir"
  mv "$tmp" "$bindir"
  trap - EXIT
  log "built in $(( $(date +%s) - start ))s into $bindir"
fi

echo "K8S_VERSION=$k8s_version"
echo "K8S_BIN_DIR=$bindir"
echo "KUBE_APISERVER=$bindir/kube-apiserver"
echo "KUBE_SCHEDULER=$bindir/kube-scheduler"
echo "ETCD=$etcd_bin"
