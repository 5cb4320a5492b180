#!/usr/bin/env bash
# Builds the HAMi oracle harness into tests/oracle/bin/hami-oracle.
#
# HAMi's code comes from the shared tree beside this repository
# (../shared/hami/v2.10.0, through the replace directive of harness/go.mod),
# never from the module proxy, which does not serve it; HAMi's dependencies
# come from the Go module proxy at the versions harness/go.sum records
# (cached in Go's module and build caches, so only the first build
# downloads: about 4 minutes here).
#
# Exit 0 with the binary built; or exit 0 with tests/oracle/bin/SKIPPED saying
# why, when the reason lies outside this repository: no Go toolchain, one
# older than the go directive of HAMi's go.mod, no shared HAMi tree, or a
# dependency that cannot be downloaded. compare.py then reports the HAMi side
# as skipped with that reason. Any other build failure exits 1: a test failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
hami_tree=$(cd "$root/.." && pwd)/shared/hami/v2.10.0
bin="$here/bin"
mkdir -p "$bin"
rm -f "$bin/SKIPPED"

skip() {
  echo "$*" >"$bin/SKIPPED"
  echo "oracle harness not built: $*"
  exit 0
}

[ -f "$hami_tree/go.mod" ] || skip "no HAMi source tree at $hami_tree"
# The harness's go directive follows HAMi's (a module cannot ask for less
# than its dependencies do).
hami_go=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$hami_tree/go.mod")
harness_go=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$here/harness/go.mod")
if [ "$hami_go" != "$harness_go" ]; then
  echo "build.sh: harness/go.mod says go $harness_go, HAMi's go.mod says go $hami_go: make them agree" >&2
  exit 1
fi

command -v go >/dev/null 2>&1 || skip "no Go toolchain on PATH (HAMi needs go >= $hami_go)"
have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$hami_go" "$have" | sort -V | head -1)" != "$hami_go" ]; then
  skip "Go $have is older than the $hami_go HAMi's go.mod requires"
fi

cd "$here/harness"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# -mod=readonly: go.mod and go.sum are committed; a build never rewrites them.
# GOTOOLCHAIN=local: never download another toolchain.
if ! GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -o "$bin/hami-oracle" . >"$log" 2>&1; then
  if grep -qE 'dial tcp|no such host|i/o timeout|connection refused|proxyconnect|403 Forbidden' "$log"; then
    skip "a dependency could not be downloaded from the Go module proxy: $(grep -m1 -E 'dial tcp|no such host|i/o timeout|connection refused|proxyconnect|403 Forbidden' "$log")"
  fi
  grep -vE 'cgo-gcc-prolog|nvml\.h|DEPRECATED|^ +\||^ *[0-9]+ \||In file included' "$log" >&2 || true
  exit 1
fi
echo "oracle harness built: $bin/hami-oracle (HAMi from $hami_tree)"
