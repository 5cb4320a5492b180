#!/usr/bin/env bash
# Installs or builds what the Kubernetes end-to-end test runs, into a cache:
#   kube-apiserver, kube-scheduler, built from k8s.io/kubernetes (tests/e2e/k8s/go.mod);
#   kube-controller-manager         the last for tests/e2e/control-plane.sh --controller-manager
#                                   (which runs only its ResourceClaim controller)
#   helm                            built from helm.sh/helm/v3 (tests/e2e/helm/go.mod),
#                                   for the chart test (charts/devshare)
#   HAMi's scheduler                cmd/scheduler of ../shared/hami/v2.10.0 (tests/e2e/hami/go.mod
#                                   replaces HAMi by that tree; cgo, for go-nvml), to run
#                                   beside devshare serve; left out, with HAMI_SCHEDULER
#                                   empty, when the shared tree is absent or it fails
#                                   to build
#   etcd                            Debian's etcd-server package, or built from
#                                   go.etcd.io/etcd/server/v3 (tests/e2e/k8s/etcd/go.mod)
# Idempotent: a second run with the same go.mod, go.sum and Go toolchain only
# checks the cache and prints the paths. Prints KEY=VALUE lines on stdout
# (K8S_VERSION, K8S_BIN_DIR, KUBE_APISERVER, KUBE_SCHEDULER, KUBE_CONTROLLER_MANAGER, ETCD,
# HELM, HAMI_SCHEDULER) so callers can `eval "$(scripts/k8s-binaries.sh)"`;
# progress goes to stderr. Exits non-zero with a message naming what could not
# be had.
#
# Environment:
#   DEVSHARE_CACHE   cache root (default $HOME/.cache/devshare); this script uses
#                    the Go caches of scripts/go-env.sh, $DEVSHARE_CACHE/go/{mod,build,bin}
#   K8S_BUILD_JOBS   parallel compile jobs, go build -p (default 2)
#   K8S_ETCD         auto (default): Debian's etcd, installed with apt-get if
#                    missing, else built with Go; debian: Debian's only; go: built
#   K8S_NO_INSTALL=1 never run apt-get
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
moddir=$root/tests/e2e/k8s
jobs=${K8S_BUILD_JOBS:-2}
etcd_mode=${K8S_ETCD:-auto}

log() { echo "k8s-binaries: $*" >&2; }
fail() { echo "k8s-binaries: CANNOT PROVIDE THE KUBERNETES BINARIES: $*" >&2; exit 1; }

# check_go and go_build
# shellcheck source=scripts/go-cache-build.sh
source "$root/scripts/go-cache-build.sh"

# --- etcd ----------------------------------------------------------------------
debian_etcd() {
  if [ ! -x /usr/bin/etcd ]; then
    [ "${K8S_NO_INSTALL:-0}" = 1 ] && { log "Debian's etcd-server is not installed (K8S_NO_INSTALL=1)"; return 1; }
    command -v apt-get >/dev/null || { log "no apt-get to install Debian's etcd-server"; return 1; }
    local sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo -n)
    log "installing Debian's etcd-server"
    { DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends etcd-server; } >&2 ||
      { log "apt-get install etcd-server failed"; return 1; }
  fi
  [ -x /usr/bin/etcd ] || { log "etcd-server is installed but /usr/bin/etcd is missing"; return 1; }
  echo /usr/bin/etcd
}

go_etcd() {
  local dir=$moddir/etcd version
  version=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2} $1=="require" && $2=="go.etcd.io/etcd/server/v3"{print $3}' "$dir/go.mod" | head -1)
  [ -n "$version" ] || fail "no go.etcd.io/etcd/server/v3 version in $dir/go.mod"
  local bindir
  bindir=$(go_build "$dir" etcd "$version" "-s -w" etcd=go.etcd.io/etcd/server/v3) || exit 1
  echo "$bindir/etcd"
}

case $etcd_mode in
  debian) etcd_bin=$(debian_etcd) || fail "Debian's etcd-server is not available (K8S_ETCD=debian)" ;;
  go) etcd_bin=$(go_etcd) ;;
  auto)
    if ! etcd_bin=$(debian_etcd); then
      log "falling back to building etcd from the Go module proxy"
      etcd_bin=$(go_etcd)
    fi ;;
  *) fail "K8S_ETCD must be auto, debian or go, not '$etcd_mode'" ;;
esac

# --- kube-apiserver, kube-scheduler and kube-controller-manager ------------------
k8s_version=$(awk '$1=="require" && $2=="k8s.io/kubernetes"{print $3} $1=="k8s.io/kubernetes" && $2 ~ /^v1\./{print $2}' "$moddir/go.mod" | head -1)
[ -n "$k8s_version" ] || fail "no k8s.io/kubernetes version in $moddir/go.mod"
minor=$(echo "$k8s_version" | cut -d. -f2)
check_go "kubernetes $k8s_version" "$moddir"
# The release's commit and date, as the proxy records them.
mkdir -p "$GOMODCACHE"
info=$(cd "$moddir" && GOFLAGS=-mod=readonly go mod download -json "k8s.io/kubernetes@$k8s_version" 2>&1) ||
  fail "could not download k8s.io/kubernetes@$k8s_version from the Go module proxy: $info"
commit=$(sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)".*/\1/p' <<<"$info" | head -1)
infofile=$(sed -n 's/^[[:space:]]*"Info": "\([^"]*\)".*/\1/p' <<<"$info" | head -1)
date=$(sed -n 's/.*"Time": *"\([^"]*\)".*/\1/p' "$infofile" 2>/dev/null | head -1)
# What the release's own build stamps into the binaries (kube-apiserver's
# /version, the compatibility version the components derive from it).
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  [ -n "$commit" ] && ldflags+=" -X $pkg.gitCommit=$commit"
  [ -n "$date" ] && ldflags+=" -X $pkg.buildDate=$date"
done
bindir=$(go_build "$moddir" kubernetes "$k8s_version" "$ldflags" \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager)

# --- helm ----------------------------------------------------------------------------
# tests/e2e/helm/go.mod requires the Kubernetes modules at the release above
# (v0.37.1 for v1.37.1), and tests/e2e/k8s/go.mod the golang.org/x modules at
# helm's versions, so that the packages both build (client-go, apimachinery
# and what they import) are compiled once, for kube-apiserver, and found in
# the build cache by helm's build. Keep them so when either moves.
helmdir=$root/tests/e2e/helm
helm_version=$(awk '$1=="helm.sh/helm/v3"{print $2} $1=="require" && $2=="helm.sh/helm/v3"{print $3}' "$helmdir/go.mod" | head -1)
[ -n "$helm_version" ] || fail "no helm.sh/helm/v3 version in $helmdir/go.mod"
# As helm's Makefile: the Kubernetes version `helm template` and `helm lint`
# assume is the one of the client-go it is built with (v0.37 -> 1.37).
client_go=$(awk '$1=="k8s.io/client-go"{print $2}' "$helmdir/go.mod" | head -1)
[ -n "$client_go" ] || fail "no k8s.io/client-go version in $helmdir/go.mod"
kube_minor=$(echo "$client_go" | cut -d. -f2)
helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  helm_ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kube_minor"
done
helm_bindir=$(go_build "$helmdir" helm "$helm_version" "$helm_ldflags" helm=helm.sh/helm/v3/cmd/helm)

# --- HAMi's scheduler ----------------------------------------------------------------
hamidir=$root/tests/e2e/hami
hami_scheduler=
if [ -f "$root/../shared/hami/v2.10.0/go.mod" ]; then
  # Not fatal here: the suites of devshare itself still run; hami-smoke.sh
  # fails when the tree is there and the binary is not.
  if hami_bindir=$(GO_BUILD_CGO=1 go_build "$hamidir" hami-scheduler v2.10.0 "-s -w" \
                     scheduler=github.com/Project-HAMi/HAMi/cmd/scheduler); then
    hami_scheduler=$hami_bindir/scheduler
  else
    log "HAMi's scheduler could not be built (see above)"
  fi
else
  log "no HAMi source tree at $root/../shared/hami/v2.10.0: HAMi's scheduler left out"
fi

echo "K8S_VERSION=$k8s_version"
echo "K8S_BIN_DIR=$bindir"
echo "KUBE_APISERVER=$bindir/kube-apiserver"
echo "KUBE_SCHEDULER=$bindir/kube-scheduler"
echo "KUBE_CONTROLLER_MANAGER=$bindir/kube-controller-manager"
echo "ETCD=$etcd_bin"
echo "HELM=$helm_bindir/helm"
echo "HAMI_SCHEDULER=$hami_scheduler"
