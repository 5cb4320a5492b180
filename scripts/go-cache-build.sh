# Sourced by scripts/k8s-binaries.sh and tests/e2e/load.sh: builds Go
# commands of a pinned go.mod into a shared cache, one directory per recipe.
# The caller defines `cache` (the cache root: gomod, gobuild and bin below
# it), `jobs` (go build -p), and `log` and `fail` (fail exits); this file's
# messages go to stderr, so that `$(go_build ...)` captures only the path.

check_go() {
  command -v go >/dev/null || fail "no Go toolchain on PATH (needed to build $1)" >&2
  local need have
  need=$(awk '$1=="go"{print $2; exit}' "$2/go.mod")
  have=$(go env GOVERSION | sed 's/^go//')
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    fail "$1 needs Go >= $need, this machine has go$have" >&2
  fi
}

# go_build MODDIR NAME VERSION LDFLAGS CMD=PACKAGE...: builds each PACKAGE of
# MODDIR's module graph into $cache/bin/NAME-VERSION-KEY/CMD, unless that
# directory is complete already; prints the directory. Without cgo unless
# GO_BUILD_CGO=1 (a command that needs C libraries' headers).
go_build() {
  local dir=$1 name=$2 version=$3 ldflags=$4; shift 4
  local key bindir tmp start spec cmd cgo=${GO_BUILD_CGO:-0}
  # Reproducible binaries (static without cgo); no VCS stamp (the main module is this
  # repository, whose commit does not change the binaries).
  local flags=(-trimpath -buildvcs=false)
  check_go "$name $version" "$dir"
  # The key covers everything that changes the binaries.
  key=$( { cat "$dir/go.mod" "$dir/go.sum"; go env GOVERSION GOOS GOARCH
           echo "CGO_ENABLED=$cgo ${flags[*]} $ldflags $*"; } | sha256sum | cut -c1-12)
  bindir=$cache/bin/$name-$version-$key
  if [ -f "$bindir/.complete" ]; then
    touch "$bindir/.complete"  # marks it in use, see the pruning below
    log "cached: $bindir" >&2
    echo "$bindir"
    return 0
  fi
  mkdir -p "$cache/gomod" "$cache/gobuild" "$cache/bin"
  # One build of NAME at a time (two work trees, or two make runs); whoever
  # waited finds the other's result.
  local lock
  exec {lock}>"$cache/bin/.$name.lock"
  if ! flock -n "$lock"; then
    log "waiting for another build of $name to finish" >&2
    flock "$lock"
  fi
  if [ -f "$bindir/.complete" ]; then
    log "cached: $bindir" >&2
    echo "$bindir"
    return 0
  fi
  # Leftovers of builds that were killed.
  find "$cache/bin" -mindepth 1 -maxdepth 1 -name ".build.$name.*" -exec rm -rf {} +
  tmp=$(mktemp -d "$cache/bin/.build.$name.XXXXXX")
  start=$SECONDS
  log "building $name $version with $(go env GOVERSION) (-p $jobs); a first build takes long, later ones come from $cache" >&2
  if ! (cd "$dir" && GOMODCACHE=$cache/gomod GOFLAGS=-mod=readonly GOTOOLCHAIN=local go mod download) >&2; then
    rm -rf "$tmp"
    fail "could not download the modules of $dir/go.mod from the Go module proxy" >&2
  fi
  for spec in "$@"; do
    cmd=${spec%%=*}
    if ! (cd "$dir" && GOMODCACHE=$cache/gomod GOCACHE=$cache/gobuild GOFLAGS=-mod=readonly \
            GOTOOLCHAIN=local CGO_ENABLED=$cgo \
            go build -p "$jobs" "${flags[@]}" -ldflags "$ldflags" -o "$tmp/$cmd" "${spec#*=}") >&2; then
      rm -rf "$tmp"
      fail "go build ${spec#*=} failed" >&2
    fi
    log "built $cmd after $(( SECONDS - start ))s" >&2
  done
  chmod 755 "$tmp"
  touch "$tmp/.complete"
  rm -rf "$bindir"
  mv "$tmp" "$bindir"
  # Binaries of other versions or recipes that no run has asked for in 14 days.
  # (Not sooner: other work trees of the repository may share the cache with
  # another go.mod, and a running cluster may still use them.)
  find "$cache/bin" -mindepth 2 -maxdepth 2 -path "$cache/bin/$name-*/.complete" -mtime +14 -printf '%h\0' |
    xargs -0 -r rm -rf
  exec {lock}>&-
  log "built $name in $(( SECONDS - start ))s into $bindir" >&2
  echo "$bindir"
}
