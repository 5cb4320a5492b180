#!/usr/bin/env bash
# Builds the HAMi oracle harness into tests/oracle/bin/hami-oracle.
#
# Exit 0 with the binary built, or exit 0 with tests/oracle/bin/SKIPPED saying
# why it could not be built for a reason outside this repository (no Go
# toolchain, one older than HAMi's go.mod asks for, or HAMi's module cannot
# be downloaded); compare.py then reports the HAMi side as skipped with that
# reason. A compile error in the harness itself exits 1.
#
# Modules are cached in Go's module cache ($GOMODCACHE, default ~/go/pkg/mod)
# and builds in Go's build cache, so only the first build downloads.
set -euo pipefail

HAMI_MODULE=github.com/Project-HAMi/HAMi
# HAMi v2.10.0 (the behaviour spec's reference commit).
HAMI_COMMIT=${HAMI_COMMIT:-4707fb02c91c545bc7343ce26dba4c32919f9a3e}
HAMI_GO=1.25.5   # the go directive of HAMi's go.mod at that commit
# HAMi's go.mod replaces these by local paths; a dependency's replace
# directives do not apply to us, so they are required at the same commit.
HAMI_NESTED=(pkg/api pkg/device-plugin test/utils)

here=$(cd "$(dirname "$0")" && pwd)
bin="$here/bin"
mkdir -p "$bin"
rm -f "$bin/SKIPPED"

skip() {
  echo "$*" >"$bin/SKIPPED"
  echo "oracle harness not built: $*"
  exit 0
}

command -v go >/dev/null 2>&1 || skip "no Go toolchain on PATH (HAMi needs go >= $HAMI_GO)"
have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$HAMI_GO" "$have" | sort -V | head -1)" != "$HAMI_GO" ]; then
  skip "Go $have is older than the $HAMI_GO HAMi's go.mod requires"
fi

cd "$here/harness"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

if ! grep -q "$HAMI_MODULE " go.mod; then
  # First build: resolve the pinned commit (and the nested modules) to
  # pseudo-versions and write go.sum.
  args=("$HAMI_MODULE@$HAMI_COMMIT")
  for m in "${HAMI_NESTED[@]}"; do
    if GOFLAGS=-mod=mod go list -m -json "$HAMI_MODULE/$m@$HAMI_COMMIT" >/dev/null 2>&1; then
      args+=("$HAMI_MODULE/$m@$HAMI_COMMIT")
    fi
  done
  if ! go get "${args[@]}" >"$log" 2>&1; then
    if grep -qE '403 Forbidden|404 Not Found|not available|dial tcp|no such host|i/o timeout|connection refused|Could not resolve' "$log"; then
      skip "$HAMI_MODULE@$HAMI_COMMIT could not be downloaded from the Go module proxy: $(grep -m1 -oE '(403 Forbidden|404 Not Found|not available|dial tcp.*|no such host|i/o timeout|connection refused|Could not resolve host.*)' "$log")"
    fi
    cat "$log" >&2
    exit 1
  fi
  go mod tidy >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
fi

if ! go build -o "$bin/hami-oracle" . >"$log" 2>&1; then
  if grep -qE '403 Forbidden|not available|dial tcp|no such host|i/o timeout' "$log"; then
    skip "a module could not be downloaded: $(grep -m1 -E '403 Forbidden|not available|dial tcp|no such host|i/o timeout' "$log")"
  fi
  cat "$log" >&2
  exit 1
fi
echo "oracle harness built: $bin/hami-oracle (HAMi $HAMI_COMMIT)"
