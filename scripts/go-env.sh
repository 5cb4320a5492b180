# Sourced by every script that runs the Go toolchain (scripts/go-cache-build.sh,
# tests/oracle/build.sh, scripts/go-prefetch.sh, tests/e2e/k8s/update-gomod.sh):
# one module cache and one build cache for all of devshare's Go-built tools,
# and one set of build flags, so that a package compiled for one tool (say
# k8s.io/api for kube-apiserver) is found compiled by the others (the DRA
# oracle) instead of being compiled again.
#
#   $DEVSHARE_CACHE/go/mod     GOMODCACHE
#   $DEVSHARE_CACHE/go/build   GOCACHE
#   $DEVSHARE_CACHE/go/bin     commands built by go_build (scripts/go-cache-build.sh)
#
# DEVSHARE_CACHE defaults to $HOME/.cache/devshare. GOTOOLCHAIN=local: never
# download another Go toolchain.
devshare_go_cache=${DEVSHARE_CACHE:-$HOME/.cache/devshare}/go
export GOMODCACHE=$devshare_go_cache/mod GOCACHE=$devshare_go_cache/build GOTOOLCHAIN=local
# Reproducible binaries; no VCS stamp (the main modules are this repository's
# test modules, whose commit does not change the binaries).
devshare_go_flags=(-trimpath -buildvcs=false)
# The compiler and linker collect garbage only near GOMEMLIMIT: for
# k8s.io/api/{core,apps,resource}/v1 from a cold cache 68 CPU-s against 85 at
# GOGC=400 (itself 16-27 % less than Go's default), the largest compile
# process 1.1 GB against 650 MB. GOMEMLIMIT keeps each process below 4 GiB whatever a
# package needs. The built binaries do not change.
export GOGC=${GOGC:-off} GOMEMLIMIT=${GOMEMLIMIT:-4GiB}
