#!/usr/bin/env bash
# A private copy of the failover lab for the benchmark, so that other users of the shared lab
# (integration tests powering nodes off, lab.sh down) cannot disturb a measurement, and it
# cannot disturb them. Same scripts, same images, same names, in their own namespaces:
#   - a copy of the repository (its own lab/.state: kubeconfig, inventory, PKI, BMC state);
#   - a network namespace "ngbench" (own loopback: apiserver 127.0.0.1:16443, BMC :8443);
#   - a mount namespace pinned at /run/ngbench/ns/mnt, where netavark's IPAM directory
#     (/run/containers/networks) is private;
#   - podman storage, state and network configs of its own (/etc/ngbench, /var/lib/ngbench).
#
#   bench/isolated-lab.sh up          copy the repo, create the namespaces, load images, lab.sh up
#   bench/isolated-lab.sh run CMD...  run CMD inside (cwd: the copy)
#   bench/isolated-lab.sh down        lab.sh down inside, then remove namespaces, storage and the copy
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
copy=${NODEGUARD_BENCH_LAB:-/var/tmp/nodeguard-bench-lab}
netns=ngbench
conf=/etc/ngbench
mntns=/run/ngbench/ns/mnt
images=(localhost/nodeguard-node:bookworm localhost/nodeguard-controlplane:bookworm localhost/nodeguard-lab-worker:latest)
export CONTAINERS_CONF=$conf/containers.conf CONTAINERS_STORAGE_CONF=$conf/storage.conf

say() { echo "isolated-lab: $*"; }

inside() {
  # shellcheck disable=SC2016  # $0 and $@ belong to the inner shell
  nsenter --mount="$mntns" --net="/run/netns/$netns" \
    env CONTAINERS_CONF="$CONTAINERS_CONF" CONTAINERS_STORAGE_CONF="$CONTAINERS_STORAGE_CONF" \
    NODEGUARD_PYTHON="$repo/.venv/bin/python" sh -c 'cd "$0" && exec "$@"' "$copy" "$@"
}

write_podman_config() {
  mkdir -p "$conf/networks" /var/lib/ngbench/storage /run/ngbench/libpod /run/ngbench/networks
  cat > "$conf/containers.conf" <<CONF
# podman for the benchmark's private lab (bench/isolated-lab.sh)
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
tmp_dir = "/run/ngbench/libpod"
[network]
network_config_dir = "$conf/networks"
CONF
  cat > "$conf/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "/var/lib/ngbench/storage"
runroot = "/run/ngbench/storage"
CONF
}

make_namespaces() {
  ip netns list | grep -qw "$netns" || ip netns add "$netns"
  ip netns exec "$netns" ip link set lo up
  mkdir -p /run/ngbench/ns
  if ! mountpoint -q /run/ngbench/ns; then
    mount --bind /run/ngbench/ns /run/ngbench/ns
    mount --make-private /run/ngbench/ns
  fi
  if ! mountpoint -q "$mntns"; then
    touch "$mntns"
    unshare --mount="$mntns" --propagation slave true
    nsenter --mount="$mntns" mount --bind /run/ngbench/networks /run/containers/networks
  fi
}

copy_repo() {
  mkdir -p "$copy"
  tar -C "$repo" --exclude=./.git --exclude=./.venv --exclude=./.build --exclude=./lab/.state \
    --exclude=__pycache__ -cf - . | tar -C "$copy" -xf -
  ln -sfn "$repo/.venv" "$copy/.venv"
  mkdir -p "$copy/.build/collections/ansible_collections/nodeguard"
  ln -sfn "$copy" "$copy/.build/collections/ansible_collections/nodeguard/failover"
}

load_images() {
  local image
  for image in "${images[@]}"; do
    if env -u CONTAINERS_CONF -u CONTAINERS_STORAGE_CONF podman image exists "$image"; then
      env -u CONTAINERS_CONF -u CONTAINERS_STORAGE_CONF podman save "$image" | podman load -q >/dev/null
    fi
  done
}

case "${1:-}" in
  up)
    write_podman_config
    make_namespaces
    copy_repo
    load_images
    inside lab/scripts/lab.sh up
    ;;
  run)
    shift
    inside "$@"
    ;;
  down)
    if mountpoint -q "$mntns" && [ -d "$copy" ]; then
      inside lab/scripts/lab.sh down || true
    fi
    if mountpoint -q "$mntns"; then umount "$mntns"; fi
    if mountpoint -q /run/ngbench/ns; then umount /run/ngbench/ns; fi
    if ip netns list | grep -qw "$netns"; then ip netns delete "$netns"; fi
    podman rm -a -f >/dev/null 2>&1 || true
    podman rmi -a -f >/dev/null 2>&1 || true
    rm -rf "$copy" /run/ngbench /var/lib/ngbench "$conf"
    say "down"
    ;;
  *) echo "usage: $0 up | run CMD... | down" >&2; exit 2 ;;
esac
