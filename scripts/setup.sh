#!/usr/bin/env bash
# Installs every system package devshare needs to build and test, and nothing else.
# Idempotent and quick when everything is present: it asks dpkg first and only runs
# apt-get for what is missing. Run as root (or with sudo available).
#
#   scripts/setup.sh         what `make` needs (build, `make test`, `make lint`)
#   scripts/setup.sh --ci    also what the rest of .ci/run installs on first use
#                            (etcd, the image tools, promtool, libfaketime), all
#                            at once before it starts jobs side by side, so that
#                            no two apt-get runs meet
set -euo pipefail

packages=(
  # build
  g++ meson ninja-build pkg-config cmake
  # core and adapters (Boost must be the versioned 1.81 packages: 1.74 has no Boost.JSON)
  libfmt-dev libboost1.81-dev libboost-json1.81-dev libyaml-cpp-dev libssl-dev
  # tests, fuzzing, benchmarks
  doctest-dev libbenchmark-dev clang-14 libclang-rt-14-dev
  # make lint
  clang-format-14 clang-tidy-22
  # python bindings
  pybind11-dev
  # command line
  libcli11-dev
  # end-to-end: the chart test reads rendered manifests (Debian's python3),
  # runs a pod's containers in namespaces, and writes TLS material
  python3-yaml util-linux openssl curl
)
if [ "${1:-}" = --ci ]; then
  # etcd (scripts/k8s-binaries.sh), the image (scripts/build-image.sh), the
  # alert rules' check (tests/deploy/check_observability.py), the soak's clocks
  # (tests/e2e/soak.sh)
  packages+=(etcd-server debootstrap umoci prometheus libfaketime)
elif [ $# -gt 0 ]; then
  echo "usage: scripts/setup.sh [--ci]" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done

# The Python package builds in a venv of the `python3` on PATH; Debian's own
# interpreter needs its venv and header packages for that.
if ! python3 -c 'import ensurepip, sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null; then
  missing+=(python3-venv python3-dev)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
