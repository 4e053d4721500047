#!/usr/bin/env bash
# Builds the generic node image localhost/nodeguard-node:bookworm from scratch (no registry):
# debootstrap a minimal Debian bookworm with systemd and python3, then `podman import` it.
#
# The image is the base of every container node (Molecule scenarios, lab nodes); it holds
# nothing distribution-specific: kubeadm/RKE fixtures belong in Molecule prepare steps.
#
# Cached: the image carries a label with the hash of this recipe; when an image with the same
# hash exists the build is skipped. Set NODEGUARD_IMAGE_REBUILD=1 to force a rebuild.
set -euo pipefail

image=${NODEGUARD_NODE_IMAGE:-localhost/nodeguard-node:bookworm}
suite=bookworm
packages=(systemd systemd-sysv procps python3 python3-yaml python3-ruamel.yaml iproute2 ca-certificates curl)

# The Debian mirror this machine already uses (deb822 *.sources or one-line *.list files).
debian_mirror() {
  local uri
  uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  if [ -z "$uri" ]; then
    uri=$(grep -hE "^deb [^ ]+ ${suite} " /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | awk '{print $2; exit}' || true)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}
mirror=$(debian_mirror)

# Everything that shapes the image goes into the recipe hash.
recipe_hash=$( { cat "$0"; echo "$mirror"; } | sha256sum | cut -c1-16)

if [ "${NODEGUARD_IMAGE_REBUILD:-0}" != 1 ] && podman image exists "$image"; then
  have=$(podman image inspect --format '{{ index .Labels "nodeguard.recipe" }}' "$image" 2>/dev/null || true)
  if [ "$have" = "$recipe_hash" ]; then
    echo "build-node-image: $image is up to date (recipe $recipe_hash)"
    exit 0
  fi
  echo "build-node-image: $image has recipe '${have:-none}', want $recipe_hash: rebuilding"
fi

for tool in debootstrap podman; do
  command -v "$tool" >/dev/null || { echo "build-node-image: $tool is missing (run make setup)" >&2; exit 1; }
done

rootfs=$(mktemp -d /var/tmp/nodeguard-rootfs.XXXXXX)
trap 'rm -rf --one-file-system "$rootfs"' EXIT

echo "build-node-image: debootstrap $suite from $mirror"
started=$SECONDS
include=$(IFS=,; echo "${packages[*]}")
debootstrap --variant=minbase --include="$include" "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
  tail -30 "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"

# Make the tree a good container node:
# - an empty machine-id so systemd generates one per container;
# - no units that need real hardware or a tty;
# - apt pointing at the same mirror; no package caches in the image.
: > "$rootfs/etc/machine-id"
echo "deb $mirror $suite main" > "$rootfs/etc/apt/sources.list"
for unit in getty.target systemd-udevd.service systemd-udev-trigger.service \
            systemd-remount-fs.service sys-kernel-debug.mount dev-hugepages.mount; do
  ln -sfn /dev/null "$rootfs/etc/systemd/system/$unit"
done
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log

tar -C "$rootfs" --numeric-owner -c . | podman import --quiet \
  --change 'CMD ["/sbin/init"]' \
  --change 'ENV container=podman' \
  --change 'STOPSIGNAL SIGRTMIN+3' \
  --change "LABEL nodeguard.recipe=$recipe_hash" \
  --change 'LABEL org.opencontainers.image.title=nodeguard-node' \
  - "$image" >/dev/null

echo "build-node-image: built $image (recipe $recipe_hash) in $((SECONDS - started))s"
