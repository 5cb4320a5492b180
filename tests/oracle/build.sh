#!/usr/bin/env bash
# Builds the oracle harnesses: tests/oracle/bin/hami-oracle (harness/, HAMi
# v2.10.0), tests/oracle/bin/volcano-oracle (volcano/, Volcano ed72c7c8),
# tests/oracle/bin/volcano112-oracle (volcano112/, Volcano v1.12.4's handshake
# and node lock), and tests/oracle/bin/dra-oracle (dra/, Kubernetes' structured allocator of
# k8s.io/dynamic-resource-allocation v0.37.1, all from the module proxy).
#
# HAMi's and Volcano's code come from the shared trees beside this repository
# (../shared/hami/v2.10.0, ../shared/volcano/ed72c7c8 and v1.12.4, through the replace
# directives of each go.mod), never from the module proxy, which does not
# serve them; their dependencies come from the Go module proxy at the
# versions each committed go.sum records (cached in the Go caches every
# Go-built tool of devshare shares, scripts/go-env.sh: only the first build
# downloads). Each harness is built as the command of the end-to-end tests
# that shares its module graph (scripts/k8s-binaries.sh): the DRA oracle as
# kube-apiserver (without cgo), HAMi's and Volcano's as HAMi's scheduler
# (with cgo), with the same flags, so one compiles what the other reuses.
#
# For each harness: exit status unaffected and bin/<name>.SKIPPED saying why,
# when the reason lies outside this repository: no Go toolchain, one older
# than the go directive of the tree's go.mod, no shared tree, or a dependency
# that cannot be downloaded. compare.py then reports that side as skipped
# with the reason. Any other build failure exits 1: a test failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/go-env.sh
source "$here/../../scripts/go-env.sh"
shared=$(cd "$here/../../.." && pwd)/shared
bin="$here/bin"
mkdir -p "$bin"
failed=0

# build NAME DIR TREE CGO [MIN]: the harness in $here/DIR against the shared
# TREE, with CGO_ENABLED=CGO. MIN: the harness's go directive may be above the
# tree's (its Kubernetes modules, shared with the other harnesses, ask more).
build() {
  local name=$1 dir=$2 tree=$3 cgo=$4 min=${5:-}
  local skipped="$bin/$name.SKIPPED"
  rm -f "$skipped"
  skip() {
    echo "$*" >"$skipped"
    echo "oracle harness $name not built: $*"
  }
  if [ ! -f "$tree/go.mod" ]; then skip "no source tree at $tree"; return; fi
  # The harness's go directive follows the tree's (a module cannot ask for
  # less than its dependencies do).
  local tree_go harness_go have
  tree_go=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$tree/go.mod")
  harness_go=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$here/$dir/go.mod")
  if [ -n "$min" ] && [ "$(printf '%s\n%s\n' "$tree_go" "$harness_go" | sort -V | head -1)" = "$tree_go" ]; then
    tree_go=$harness_go
  fi
  if [ "$tree_go" != "$harness_go" ]; then
    echo "build.sh: $dir/go.mod says go $harness_go, $tree/go.mod says go $tree_go: make them agree" >&2
    failed=1
    return
  fi
  if ! command -v go >/dev/null 2>&1; then skip "no Go toolchain on PATH (the tree needs go >= $tree_go)"; return; fi
  have=$(go env GOVERSION | sed 's/^go//')
  if [ "$(printf '%s\n%s\n' "$tree_go" "$have" | sort -V | head -1)" != "$tree_go" ]; then
    skip "Go $have is older than the $tree_go the tree's go.mod requires"
    return
  fi
  local log
  log=$(mktemp)
  # -mod=readonly: go.mod and go.sum are committed; a build never rewrites
  # them.
  if ! (cd "$here/$dir" && GOFLAGS=-mod=readonly CGO_ENABLED=$cgo \
          go build "${devshare_go_flags[@]}" -o "$bin/$name" .) >"$log" 2>&1; then
    if grep -qE 'dial tcp|no such host|i/o timeout|connection refused|proxyconnect|403 Forbidden' "$log"; then
      skip "a dependency could not be downloaded from the Go module proxy: $(grep -m1 -E 'dial tcp|no such host|i/o timeout|connection refused|proxyconnect|403 Forbidden' "$log")"
    else
      grep -vE 'cgo-gcc-prolog|nvml\.h|DEPRECATED|^ +\||^ *[0-9]+ \||In file included' "$log" >&2 || true
      failed=1
    fi
    rm -f "$log"
    return
  fi
  rm -f "$log"
  echo "oracle harness built: $bin/$name (from $tree)"
}

build hami-oracle harness "$shared/hami/v2.10.0" 1
build volcano-oracle volcano "$shared/volcano/ed72c7c8" 1
# Volcano v1.12.4 asks go 1.23.0; the harness uses the Kubernetes modules of
# volcano/ (v0.36.1, go 1.26.0), so that their compiled packages are shared.
build volcano112-oracle volcano112 "$shared/volcano/v1.12.4" 1 min
# The DRA oracle has no shared tree: every module it needs, Kubernetes' own
# included, comes from the Go module proxy at the versions dra/go.sum records,
# so its own go.mod stands for the tree (the Go it asks for is checked the same
# way, and a module the proxy cannot deliver skips it the same way).
build dra-oracle dra "$here/dra" 0
exit "$failed"
