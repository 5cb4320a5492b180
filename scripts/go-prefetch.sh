#!/usr/bin/env bash
# Downloads the modules of every Go module CI builds from (the oracles'
# harnesses, the Kubernetes binaries, helm, HAMi's scheduler) into the shared
# Go module cache (scripts/go-env.sh), without compiling anything: .ci/run
# starts it in the background, so that the downloads overlap the C++ builds
# instead of waiting for the builds that need them. Harmless to run at any
# time (what is cached is not downloaded again); a module that cannot be
# downloaded is reported here and again, with its consequence, by the build
# that needs it. Exits 1 if any download failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/go-env.sh
source "$root/scripts/go-env.sh"
command -v go >/dev/null || { echo "go-prefetch: no Go toolchain on PATH"; exit 1; }
failed=0
for dir in tests/oracle/harness tests/oracle/volcano tests/oracle/volcano112 tests/oracle/dra tests/e2e/k8s tests/e2e/helm \
           tests/e2e/hami; do
  start=$SECONDS
  if (cd "$root/$dir" && GOFLAGS=-mod=readonly go mod download); then
    echo "go-prefetch: $dir in $((SECONDS - start)) s"
  else
    echo "go-prefetch: $dir: download failed"
    failed=1
  fi
done
exit "$failed"
