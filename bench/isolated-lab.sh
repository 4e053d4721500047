#!/usr/bin/env bash
# A private copy of the failover lab for the benchmark, so that other users of the shared lab
# (integration tests powering nodes off, lab.sh down) cannot disturb a measurement, and it
# cannot disturb them. Same scripts, same images, same names, in their own namespaces:
#   - a copy of the repository (its own lab/.state: kubeconfig, inventory, PKI, BMC state);
#   - a network namespace named after the lab (own loopback: apiserver 127.0.0.1:16443, BMC :8443);
#   - a mount namespace pinned at /run/<name>/ns/mnt, where netavark's IPAM directory
#     (/run/containers/networks) is private;
#   - podman storage, state and network configs of its own (/etc/<name>, /var/lib/<name>).
#
#   bench/isolated-lab.sh up          copy the repo, create the namespaces, load images, lab.sh up
#   bench/isolated-lab.sh run CMD...  run CMD inside (cwd: the copy)
#   bench/isolated-lab.sh down        lab.sh down inside, then remove namespaces, storage and the copy
#
# NODEGUARD_BENCH_NAME (default ngbench) names one private lab; labs with different names run side
# by side (bench/run.sh measures several profiles at once this way).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
name=${NODEGUARD_BENCH_NAME:-ngbench}
case "$name" in *[!a-z0-9]*|"") echo "NODEGUARD_BENCH_NAME must be lowercase letters and digits" >&2; exit 2 ;; esac
copy=${NODEGUARD_BENCH_LAB:-/var/tmp/nodeguard-bench-lab-$name}
netns=$name
conf=/etc/$name
run=/run/$name
mntns=$run/ns/mnt
images=(localhost/nodeguard-node:bookworm localhost/nodeguard-controlplane:bookworm localhost/nodeguard-lab-worker:latest)
# NODEGUARD_LAB_LB=1 (passed on to lab.sh up): the lab with its API server load balancer (lab/lb).
[ "${NODEGUARD_LAB_LB:-0}" = 1 ] && images+=(localhost/nodeguard-lab-lb:latest)
# NODEGUARD_LAB_REAL_KUBELET=1 (passed on to lab.sh up): one more worker with the real kubelet;
# NODEGUARD_LAB_REAL_KUBELET_IMAGE=1: only its image, for tests that add that worker themselves.
real_kubelet_image=0
if [ "${NODEGUARD_LAB_REAL_KUBELET:-0}" = 1 ] || [ "${NODEGUARD_LAB_REAL_KUBELET_IMAGE:-0}" = 1 ]; then
  real_kubelet_image=1
  images+=(localhost/nodeguard-lab-worker-kubelet:latest)
fi
# NODEGUARD_LAB_EE_IMAGE=1: the execution and decision environments (scripts/build-ee.sh) too, for tests/integration/ee.
if [ "${NODEGUARD_LAB_EE_IMAGE:-0}" = 1 ]; then images+=(localhost/nodeguard-ee:latest localhost/nodeguard-de:latest); fi
export CONTAINERS_CONF=$conf/containers.conf CONTAINERS_STORAGE_CONF=$conf/storage.conf

say() { echo "isolated-lab $name: $*"; }

inside() {
  # shellcheck disable=SC2016  # $0 and $@ belong to the inner shell
  nsenter --mount="$mntns" --net="/run/netns/$netns" \
    env CONTAINERS_CONF="$CONTAINERS_CONF" CONTAINERS_STORAGE_CONF="$CONTAINERS_STORAGE_CONF" \
    NODEGUARD_PYTHON="$repo/.venv/bin/python" sh -c 'cd "$0" && exec "$@"' "$copy" "$@"
}

write_podman_config() {
  mkdir -p "$conf/networks" "/var/lib/$name/storage" "$run/libpod" "$run/networks"
  cat > "$conf/containers.conf" <<CONF
# podman for the benchmark's private lab (bench/isolated-lab.sh)
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
tmp_dir = "$run/libpod"
[network]
network_config_dir = "$conf/networks"
CONF
  cat > "$conf/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "/var/lib/$name/storage"
runroot = "$run/storage"
CONF
}

make_namespaces() {
  ip netns list 2>/dev/null | grep -qw "$netns" || ip netns add "$netns"
  ip netns exec "$netns" ip link set lo up
  mkdir -p "$run/ns"
  if ! mountpoint -q "$run/ns"; then
    mount --bind "$run/ns" "$run/ns"
    mount --make-private "$run/ns"
  fi
  if ! mountpoint -q "$mntns"; then
    touch "$mntns"
    unshare --mount="$mntns" --propagation slave true
    nsenter --mount="$mntns" mount --bind "$run/networks" /run/containers/networks
  fi
}

copy_repo() {
  mkdir -p "$copy"
  tar -C "$repo" --exclude=./.git --exclude=./.venv --exclude=./.build --exclude=./lab/.state \
    --exclude=__pycache__ -cf - . | tar -C "$copy" -xf -
  ln -sfn "$repo/.venv" "$copy/.venv"
  # A repository of its own, nothing committed: `git ls-files --others --exclude-standard` then lists
  # what the repository's own would (the release test asks git which files a build may hold).
  [ -d "$copy/.git" ] || git -C "$copy" init -q
  mkdir -p "$copy/.build/collections/ansible_collections/nodeguard"
  ln -sfn "$copy" "$copy/.build/collections/ansible_collections/nodeguard/failover"
}

# The lab's images are built (or found up to date) in the machine's own podman storage, where the
# network reaches Debian's mirror, then copied into the private storage: inside the private network
# namespace a build could not download its packages.
build_images() {
  local outside=(env -u CONTAINERS_CONF -u CONTAINERS_STORAGE_CONF)
  "${outside[@]}" "$copy/scripts/build-node-image.sh" >/dev/null
  "${outside[@]}" "$copy/lab/controlplane/controlplane.sh" image >/dev/null
  "${outside[@]}" "$copy/lab/workers/workers.sh" image >/dev/null
  if [ "$real_kubelet_image" = 1 ]; then
    "${outside[@]}" NODEGUARD_LAB_REAL_KUBELET=1 "$copy/lab/workers/workers.sh" image >/dev/null
  fi
  if [ "${NODEGUARD_LAB_LB:-0}" = 1 ]; then "${outside[@]}" "$copy/lab/lb/lb.sh" image >/dev/null; fi
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
    build_images
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
    if mountpoint -q "$run/ns"; then umount "$run/ns"; fi
    if ip netns list 2>/dev/null | grep -qw "$netns"; then ip netns delete "$netns"; fi
    podman rm -a -f >/dev/null 2>&1 || true
    podman rmi -a -f >/dev/null 2>&1 || true
    # A lab killed in the middle can leave its podman storage mounted here (an overlay on /var/lib/<name>/storage):
    # rm then fails with "Device or resource busy" and every later run of this lab refuses to start. Unmount what
    # is left under the lab's own storage, deepest first.
    awk -v root="/var/lib/$name/" 'index($2, root) == 1 {print $2}' /proc/mounts | sort -r | while read -r mount; do
      umount "$mount" 2>/dev/null || umount -l "$mount"
    done
    rm -rf "$copy" "$run" "/var/lib/$name" "$conf"
    say "down"
    ;;
  *) echo "usage: $0 up | run CMD... | down" >&2; exit 2 ;;
esac
