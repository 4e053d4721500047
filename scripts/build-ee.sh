#!/usr/bin/env bash
# Builds the execution environment (localhost/nodeguard-ee:latest) and the decision environment
# (localhost/nodeguard-de:latest) from deploy/ee/*.yml with ansible-builder v3, air-gapped:
#   1. the base image localhost/nodeguard-ee-base:bookworm from Debian packages (debootstrap; no registry);
#   2. the collection tarball (ansible-galaxy collection build) into .build/ee/;
#   3. ansible-builder build of each definition (Python packages from PyPI, nothing from Galaxy).
# Cached by content: each image carries a label with the hash of what made it (this script, the definition,
# the collection tarball's file list and bytes); an image with the same hash is not rebuilt.
# NODEGUARD_EE_REBUILD=1 forces a rebuild. Usage: scripts/build-ee.sh [ee|de]... (default: both)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH=$repo/.venv/bin:$PATH
base_image=localhost/nodeguard-ee-base:bookworm
suite=bookworm
base_packages=(python3 python3-pip ca-certificates openssh-client)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ee de)

say() { echo "build-ee: $*"; }
label_of() { podman image inspect --format '{{ index .Labels "nodeguard.recipe" }}' "$1" 2>/dev/null || true; }
for tool in podman debootstrap ansible-builder ansible-galaxy; do
  command -v "$tool" >/dev/null || { echo "build-ee: $tool is missing (run make setup)" >&2; exit 1; }
done

# The Debian mirror this machine already uses (as scripts/build-node-image.sh finds it).
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(grep -hE "^deb [^ ]+ $suite " /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2; exit}' || true)
mirror=${mirror:-http://deb.debian.org/debian}

# 1. The base image. ansible-builder expects a package manager that takes `install -y PKGS` and `clean all`
#    (dnf's verbs): a small wrapper maps them to apt-get. Debian marks its Python externally managed
#    (PEP 668); in this single-purpose image pip installs system-wide, as ansible-builder's scripts do.
base_hash=$( { sed -n '/^# 1\./,/^# 2\./p' "$0"; echo "$mirror ${base_packages[*]}"; } | sha256sum | cut -c1-16)
if [ "${NODEGUARD_EE_REBUILD:-0}" = 1 ] || [ "$(label_of "$base_image")" != "$base_hash" ]; then
  rootfs=$(mktemp -d /var/tmp/nodeguard-ee-rootfs.XXXXXX)
  trap 'rm -rf --one-file-system "$rootfs"' EXIT
  say "debootstrap $suite from $mirror for $base_image"
  include=$(IFS=,; echo "${base_packages[*]}")
  debootstrap --variant=minbase --include="$include" "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
    tail -30 "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
  rm -f "$rootfs.log"
  echo "deb $mirror $suite main" > "$rootfs/etc/apt/sources.list"
  rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED
  cat > "$rootfs/usr/local/sbin/ee-package-manager" <<'WRAPPER'
#!/bin/sh
# ansible-builder calls `PKGMGR install -y [opts] PKGS` and `PKGMGR clean all`: apt-get behind them.
set -e
verb=$1; shift
case "$verb" in
  install) apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -qq --no-install-recommends "$@" ;;
  clean) apt-get clean; rm -rf /var/lib/apt/lists/* ;;
  *) echo "ee-package-manager: unknown verb $verb" >&2; exit 2 ;;
esac
WRAPPER
  chmod 0755 "$rootfs/usr/local/sbin/ee-package-manager"
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log
  tar -C "$rootfs" --numeric-owner -c . | podman import --quiet \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL nodeguard.recipe=$base_hash" \
    --change 'LABEL org.opencontainers.image.title=nodeguard-ee-base' \
    - "$base_image" >/dev/null
  rm -rf --one-file-system "$rootfs"; trap - EXIT
  say "built $base_image (recipe $base_hash)"
else
  say "$base_image is up to date (recipe $base_hash)"
fi

# 2. The collection tarball, under a fixed name the definitions read.
rm -rf .build/ee/dist && mkdir -p .build/ee/dist
ansible-galaxy collection build --output-path .build/ee/dist . >/dev/null
cp .build/ee/dist/nodeguard-failover-*.tar.gz .build/ee/nodeguard-failover.tar.gz
collection_hash=$(tar -xzOf .build/ee/nodeguard-failover.tar.gz | sha256sum | cut -c1-16)

# 3. One ansible-builder build per definition.
host_ca=/etc/ssl/certs/ca-certificates.crt
[ -s "$host_ca" ] || { echo "build-ee: $host_ca is missing (apt-get install ca-certificates)" >&2; exit 1; }
for target in "${targets[@]}"; do
  case "$target" in
    ee) definition=deploy/ee/execution-environment.yml; image=localhost/nodeguard-ee:latest ;;
    de) definition=deploy/ee/decision-environment.yml; image=localhost/nodeguard-de:latest ;;
    *) echo "build-ee: unknown target $target (ee or de)" >&2; exit 2 ;;
  esac
  recipe=$( { cat "$0" "$definition"; echo "$base_hash $collection_hash"; } | sha256sum | cut -c1-16)
  if [ "${NODEGUARD_EE_REBUILD:-0}" != 1 ] && [ "$(label_of "$image")" = "$recipe" ]; then
    say "$image is up to date (recipe $recipe)"
    continue
  fi
  context=.build/ee/context-$target
  rm -rf "$context"
  started=$SECONDS
  say "ansible-builder build -f $definition -> $image"
  # The build's RUN steps reach PyPI with this machine's CA bundle (a TLS-inspecting proxy's CA is trusted
  # there), mounted for the build only: the image keeps Debian's own.
  ansible-builder build --file "$definition" --context "$context" --tag "$image" \
    --container-runtime podman --prune-images \
    --extra-build-cli-args "--label nodeguard.recipe=$recipe --volume $host_ca:/etc/ssl/certs/ca-certificates.crt:ro" \
    -v 2 > ".build/ee/build-$target.log" 2>&1 || { tail -40 ".build/ee/build-$target.log" >&2; exit 1; }
  say "built $image (recipe $recipe) in $((SECONDS - started))s; log .build/ee/build-$target.log"
done
