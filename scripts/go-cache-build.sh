# Sourced by scripts/k8s-binaries.sh and tests/e2e/load.sh: builds Go
# commands of a pinned go.mod into the shared cache (scripts/go-env.sh), one
# directory per recipe under $devshare_go_cache/bin. The caller defines `jobs`
# (go build -p), and `log` and `fail` (fail exits); this file's messages go
# to stderr, so that `$(go_build ...)` captures only the path.
# shellcheck source=scripts/go-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/go-env.sh"

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
# MODDIR's module graph into $devshare_go_cache/bin/NAME-VERSION-KEY/CMD, unless
# that directory is complete already; prints the directory. All of them in one
# `go build`, so that their packages compile and their links run side by side.
# Without cgo unless GO_BUILD_CGO=1 (a command that needs C libraries' headers).
go_build() {
  local dir=$1 name=$2 version=$3 ldflags=$4; shift 4
  local key bindir tmp start spec cgo=${GO_BUILD_CGO:-0} bins=$devshare_go_cache/bin
  local flags=("${devshare_go_flags[@]}") packages=()
  check_go "$name $version" "$dir"
  # The key covers everything that changes the binaries.
  key=$( { cat "$dir/go.mod" "$dir/go.sum"; go env GOVERSION GOOS GOARCH
           echo "CGO_ENABLED=$cgo ${flags[*]} $ldflags $*"; } | sha256sum | cut -c1-12)
  bindir=$bins/$name-$version-$key
  if [ -f "$bindir/.complete" ]; then
    touch "$bindir/.complete"  # marks it in use, see the pruning below
    log "cached: $bindir" >&2
    echo "$bindir"
    return 0
  fi
  mkdir -p "$GOMODCACHE" "$GOCACHE" "$bins"
  # One build of NAME at a time (two work trees, or two make runs); whoever
  # waited finds the other's result.
  local lock
  exec {lock}>"$bins/.$name.lock"
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
  find "$bins" -mindepth 1 -maxdepth 1 -name ".build.$name.*" -exec rm -rf {} +
  tmp=$(mktemp -d "$bins/.build.$name.XXXXXX")
  start=$SECONDS
  log "building $name $version with $(go env GOVERSION) (-p $jobs); a first build takes long, later ones come from $devshare_go_cache" >&2
  if ! (cd "$dir" && GOFLAGS=-mod=readonly go mod download) >&2; then
    rm -rf "$tmp"
    fail "could not download the modules of $dir/go.mod from the Go module proxy" >&2
  fi
  # `go build -o DIR/` names each command after the last element of its
  # package path (the one before a major version suffix, /v3): a CMD of
  # another name is renamed after.
  for spec in "$@"; do packages+=("${spec#*=}"); done
  if ! (cd "$dir" && GOFLAGS=-mod=readonly CGO_ENABLED=$cgo \
          go build -p "$jobs" "${flags[@]}" -ldflags "$ldflags" -o "$tmp/" "${packages[@]}") >&2; then
    rm -rf "$tmp"
    fail "go build ${packages[*]} failed" >&2
  fi
  local package elem
  for spec in "$@"; do
    package=${spec#*=} elem=${spec##*/}
    [[ $elem =~ ^v[0-9]+$ ]] && { package=${package%/*}; elem=${package##*/}; }
    [ "$elem" = "${spec%%=*}" ] || mv "$tmp/$elem" "$tmp/${spec%%=*}"
  done
  log "built ${*%%=*} after $(( SECONDS - start ))s" >&2
  chmod 755 "$tmp"
  touch "$tmp/.complete"
  rm -rf "$bindir"
  mv "$tmp" "$bindir"
  # Binaries of other versions or recipes that no run has asked for in 14 days.
  # (Not sooner: other work trees of the repository may share the cache with
  # another go.mod, and a running cluster may still use them.)
  find "$bins" -mindepth 2 -maxdepth 2 -path "$bins/$name-*/.complete" -mtime +14 -printf '%h\0' |
    xargs -0 -r rm -rf
  exec {lock}>&-
  log "built $name in $(( SECONDS - start ))s into $bindir" >&2
  echo "$bindir"
}
