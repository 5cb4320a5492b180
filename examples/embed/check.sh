#!/usr/bin/env bash
# Checks a devshare installed under STAGE (a `meson install --destdir STAGE`):
# the installed executable runs, and examples/embed builds against it with
# meson and with CMake, and runs.
set -euo pipefail
stage=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

prefix=$(find "$stage" -name devshare.pc -path '*/pkgconfig/*' -printf '%h\n' | head -1)
[ -n "$prefix" ] || { echo "embed: no devshare.pc under $stage" >&2; exit 1; }
cmake_dir=$(find "$stage" -name devshareConfig.cmake -printf '%h\n' | head -1)
libdir=$(find "$stage" -name 'libdevshare.so*' -printf '%h\n' | head -1)

# The installed executable runs with only what was installed (its internal
# libraries are linked in).
echo "embed: the installed devshare runs"
exe=$(find "$stage" -path "*/bin/devshare" -type f | head -1)
installed=$(LD_LIBRARY_PATH="$libdir" "$exe" --version)
[ -n "$installed" ] || { echo "embed: the installed devshare printed no version" >&2; exit 1; }
echo "embed: kubectl-devshare, the kubectl plugin, runs devshare"
plugin=$(dirname "$exe")/kubectl-devshare
[ "$(LD_LIBRARY_PATH="$libdir" "$plugin" --version)" = "$installed" ] ||
  { echo "embed: $plugin is missing or is not devshare" >&2; exit 1; }

# The shared library exports the public API only: no internal helper, no
# third-party type in an exported name (weak template instances aside).
echo "embed: the library exports the public API only"
lib=$(find "$stage" -name 'libdevshare.so.*.*' -type f | head -1)
exported=$(nm -D --defined-only -C "$lib" | awk '$2 ~ /^[TDBR]$/ { $1 = ""; $2 = ""; sub(/^  /, ""); print }')
leaks=$(grep -vE '^devshare::' <<<"$exported"; grep -E 'devshare::internal|YAML::' <<<"$exported" || true)
if [ -n "$leaks" ]; then
  echo "embed: exported beyond the public API:" >&2
  head -5 <<<"$leaks" >&2
  exit 1
fi
[ "$(wc -l <<<"$exported")" -gt 50 ] || { echo "embed: too few exported symbols in $lib" >&2; exit 1; }

echo "embed: meson, dependency('devshare')"
PKG_CONFIG_PATH="$prefix" PKG_CONFIG_SYSROOT_DIR="$stage" \
  meson setup "$work/meson" "$here" >/dev/null
ninja -C "$work/meson" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/meson/embed"

echo "embed: cmake, find_package(devshare)"
cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$(dirname "$(dirname "$cmake_dir")")" \
  -Ddevshare_DIR="$cmake_dir" >/dev/null
cmake --build "$work/cmake" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake/embed"
