#!/usr/bin/env bash
# Checks the image scripts/build-image.sh wrote (no container daemon here): the
# OCI layout unpacks (umoci), devshare runs from its root file system under
# chroot as the image's user, the image config names that user and the
# entrypoint, and the chart's default image is the one built. Prints the image
# size and "image: N passed, N failed" last; with RESULTS, appends
# "image P F S" to it. Where a tool is missing it says so and counts a skip,
# never a pass.
#
#   tests/deploy/check_image.sh IMAGE_DIR [RESULTS]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:?usage: check_image.sh IMAGE_DIR [RESULTS]}
results=${2:-}
passed=0 failed=0 skipped=0
check() {
  local what=$1; shift
  if "$@" >/dev/null 2>&1; then passed=$((passed + 1)); echo "ok: $what"
  else failed=$((failed + 1)); echo "FAILED: $what"; fi
}
finish() {
  echo "image: $passed passed, $failed failed$([ "$skipped" -gt 0 ] && echo ", $skipped skipped")"
  [ -n "$results" ] && echo "image $passed $failed $skipped" >>"$results"
  [ "$failed" -eq 0 ]
  exit
}
for tool in umoci chroot; do
  if ! command -v "$tool" >/dev/null; then
    echo "image: SKIPPED: $tool is not installed (scripts/build-image.sh installs umoci)"
    skipped=1
    finish
  fi
done
if [ ! -f "$dir/image.env" ]; then
  echo "FAILED: no image in $dir (run scripts/build-image.sh $dir)"
  failed=1
  finish
fi
# shellcheck disable=SC1091
. "$dir/image.env"
version=${IMAGE_REF#*:}
echo "image: $IMAGE_REF, $OCI_ARCHIVE: $((ARCHIVE_BYTES / 1024 / 1024)) MiB compressed, root file system $((ROOTFS_BYTES / 1024 / 1024)) MiB"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check "the OCI archive unpacks into a layout" tar -C "$work" -xf "$OCI_ARCHIVE" --one-top-level=layout
check "the layout holds the tag $version" bash -c "umoci ls --layout '$work/layout' | grep -qx '$version'"
check "umoci unpacks the image" umoci unpack --image "$work/layout:$version" "$work/bundle"
rootfs=$work/bundle/rootfs
# The image config as a runtime spec (umoci unpack writes it).
config_user() { grep -q '"uid": *65532' "$work/bundle/config.json" && grep -q '"gid": *65532' "$work/bundle/config.json"; }
check "the image runs as 65532:65532" config_user
entrypoint() { grep -q '"devshare"' "$work/bundle/config.json"; }
check "its entrypoint is devshare" entrypoint
version_out() { [ "$(chroot --userspec=65532:65532 "$rootfs" /usr/local/bin/devshare --version)" = "$version" ]; }
check "devshare --version in its root file system, as user 65532, says $version" version_out
serve_help() { chroot --userspec=65532:65532 "$rootfs" devshare serve --help | grep -q -- '--listen'; }
check "devshare serve --help runs (every library resolves)" serve_help
no_compiler() { [ ! -e "$rootfs/usr/bin/g++" ] && [ ! -d "$rootfs/usr/local/include" ]; }
check "no compiler or headers in it" no_compiler
chart_image() {
  grep -q '^    repository: "devshare"$' "$root/charts/devshare/values.yaml" &&
    [ "$(sed -n 's/^appVersion: "\(.*\)"$/\1/p' "$root/charts/devshare/Chart.yaml")" = "$version" ]
}
check "the chart's default image is $IMAGE_REF (repository devshare, tag = appVersion)" chart_image
finish
