#!/usr/bin/env bash
# Builds the devshare container image as an OCI archive, without a registry or a
# container daemon: the same image the Containerfile describes (Debian bookworm,
# devshare installed in /usr/local, user 65532, entrypoint `devshare`).
#
#   scripts/build-image.sh [OUT_DIR [BUILD_DIR]]     (default: build-image, OUT_DIR/build)
#
# BUILD_DIR is a meson build of devshare that is a release build with the
# prefix /usr/local (`make image` passes the release build of `make build`);
# a missing one is configured so. Any other build type or prefix is refused.
#
# Steps: a release build of devshare (meson); a
# root file system from Debian's packages with `debootstrap --variant=minbase`
# plus the runtime libraries (no base image is pulled: registries cannot be
# reached from every machine that builds this, Debian's mirror can); devshare
# installed into it (`meson install --destdir`), ldconfig; the package manager's
# caches and documentation removed; then umoci writes the OCI layout (one layer,
# user, entrypoint, labels) and tar packs it:
#
#   OUT_DIR/devshare-<version>.oci.tar    OCI archive holding the tag <version>; load it as
#                                         devshare:<version>, the chart's default image, e.g.
#                                         `skopeo copy oci-archive:FILE:<version> docker-daemon:devshare:<version>`
#                                         or `ctr -n k8s.io images import --base-name devshare FILE`
#   OUT_DIR/image.env                     IMAGE_REF, OCI_ARCHIVE, ROOTFS_BYTES, ARCHIVE_BYTES
#
# The tools (debootstrap, umoci) are Debian packages; they are installed with
# apt-get when missing (as root), and the script stops naming what it lacks
# otherwise. Needs root (debootstrap and chroot).
#
# Environment: DEBIAN_MIRROR (default: the first deb URI of the machine's apt
# sources, else http://deb.debian.org/debian).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/build-image}" && cd "${1:-$root/build-image}" && pwd)
build=${2:-$out/build}
log() { echo "build-image: $*" >&2; }
fail() { echo "build-image: CANNOT BUILD THE IMAGE: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "run as root (debootstrap and chroot need it)"
version=$(sed -n "s/^  version: '\([^']*\)'.*/\1/p" "$root/meson.build" | head -1)
[ -n "$version" ] || fail "no version in meson.build"
ref=devshare:$version
# What the image needs at run time besides minbase (libstdc++ and libc are in it).
runtime=libfmt9,libboost-json1.81.0,libyaml-cpp0.7,libssl3,ca-certificates

# --- tools ------------------------------------------------------------------------
missing=()
for tool in debootstrap:debootstrap umoci:umoci; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; }
  } >/dev/null || fail "apt-get could not install ${missing[*]}"
fi

mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)
  [ -n "$mirror" ] || mirror=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
fi

# --- devshare, release build ---------------------------------------------------------
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$root" --buildtype=release --prefix=/usr/local -Dtests=disabled >/dev/null
fi
options=$(meson introspect "$build" --buildoptions | python3 -c '
import json, sys
options = {o["name"]: o["value"] for o in json.load(sys.stdin)}
print(options["buildtype"], options["prefix"], options["b_ndebug"])')
[ "$options" = "release /usr/local if-release" ] ||
  fail "$build is not a release build with the prefix /usr/local (buildtype, prefix, b_ndebug: $options)"
ninja -C "$build" >/dev/null || fail "the release build failed (ninja -C $build)"

# --- root file system ------------------------------------------------------------------
rootfs=$out/rootfs
rm -rf "$rootfs"
t0=$SECONDS
log "debootstrap --variant=minbase bookworm from $mirror"
debootstrap --variant=minbase --include="$runtime" bookworm "$rootfs" "$mirror" >"$out/debootstrap.log" 2>&1 ||
  fail "debootstrap failed (see $out/debootstrap.log)"
log "root file system in $((SECONDS - t0))s"
meson install -C "$build" --destdir "$rootfs" --quiet --no-rebuild
# The image runs the executable: no headers, build metadata or Python package.
rm -rf "$rootfs/usr/local/include" "$rootfs/usr/local/lib/x86_64-linux-gnu/pkgconfig" \
  "$rootfs/usr/local/lib/x86_64-linux-gnu/cmake" "$rootfs"/usr/local/lib/python3*
chroot "$rootfs" /sbin/ldconfig
# The user the chart runs as; no home, no shell.
echo 'devshare:x:65532:' >>"$rootfs/etc/group"
echo 'devshare:x:65532:65532::/nonexistent:/usr/sbin/nologin' >>"$rootfs/etc/passwd"
# What only building the image needed.
rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
  "$rootfs"/tmp/* "$rootfs"/var/tmp/*
# Reproducible: the same files carry the same times.
epoch=$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)
find "$rootfs" -exec touch --no-dereference --date="@$epoch" {} + 2>/dev/null || true

# --- OCI image -------------------------------------------------------------------------
layout=$out/oci
rm -rf "$layout" "$out/bundle"
umoci init --layout "$layout"
umoci new --image "$layout:$version"
umoci unpack --image "$layout:$version" "$out/bundle" >/dev/null
rm -rf "$out/bundle/rootfs"
mv "$rootfs" "$out/bundle/rootfs"
umoci repack --image "$layout:$version" "$out/bundle"
umoci config --image "$layout:$version" \
  --config.user 65532:65532 --config.workingdir / \
  --config.entrypoint devshare --config.cmd serve \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.label org.opencontainers.image.title=devshare \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)" \
  --config.exposedports 8443/tcp \
  --architecture amd64 --os linux
umoci gc --layout "$layout"
archive=$out/devshare-$version.oci.tar
tar -C "$layout" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -cf "$archive" .
rootfs_bytes=$(du -sb "$out/bundle/rootfs" | cut -f1)
archive_bytes=$(stat -c %s "$archive")
cat >"$out/image.env" <<EOF
IMAGE_REF=$ref
OCI_LAYOUT=$layout
OCI_ARCHIVE=$archive
ROOTFS_BYTES=$rootfs_bytes
ARCHIVE_BYTES=$archive_bytes
EOF
rm -rf "$out/bundle"
log "$ref: $archive ($((archive_bytes / 1024 / 1024)) MiB compressed, root file system $((rootfs_bytes / 1024 / 1024)) MiB)"
