#!/usr/bin/env bash
# Lab worker nodes (see docs/lab-workers.md): podman containers ng-worker1..N on the lab network,
# each a systemd "node" whose kubelet.service is the kubelet stand-in (lab/workers/standin).
# With NODEGUARD_LAB_REAL_KUBELET=1 one more, ng-worker<N+1>, runs the REAL kubelet with containerd
# (lab/workers/kubelet); by default nothing changes.
#
#   workers.sh up [N]     create/start N workers (default $NODEGUARD_LAB_WORKERS or 3), wait until
#                         their Nodes are Ready, then bring up lab storage (lab/storage/storage.sh)
#   workers.sh down [N]   remove every worker container, their Node objects and lab storage
#   workers.sh status     one line per worker: container state, Node Ready, heartbeat settings
#
# Idempotent. A worker that exists keeps its files (the tune role may have edited its
# /var/lib/kubelet/config.yaml); a stopped one (BMC power-off) is started again by `up`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
lab=$(dirname "$here")
repo=$(dirname "$lab")
state=${NODEGUARD_LAB_STATE:-$lab/.state}
network=nodeguard-lab
subnet=10.89.77
image=localhost/nodeguard-lab-worker:latest
base_image=localhost/nodeguard-node:bookworm
cache=${NODEGUARD_CACHE:-$HOME/.cache/nodeguard}
kwok=${NODEGUARD_KWOK:-$cache/kwok/v0.7.0/bin/kwok}
# The real-kubelet worker: its image, and the binaries lab/scripts/build-k8s.sh caches.
real_kubelet=${NODEGUARD_LAB_REAL_KUBELET:-0}
real_image=localhost/nodeguard-lab-worker-kubelet:latest
k8s_version=$(awk '($1 == "k8s.io/kubernetes" || ($1 == "require" && $2 == "k8s.io/kubernetes")) {print $NF; exit}' "$lab/k8s-build/go.mod")
kubelet_bin=$cache/k8s/$k8s_version/bin/kubelet
pause_bin=$cache/pause/$(sha256sum "$lab/k8s-build/pause/main.go" | cut -c1-16)/bin/pause
csinode_bin=$cache/csinode/$(cat "$lab"/k8s-build/csinode/*.go | sha256sum | cut -c1-16)/bin/nodeguard-csi-node
python=${NODEGUARD_PYTHON:-$repo/.venv/bin/python}
kubeconfig=${NODEGUARD_LAB_KUBECONFIG:-$state/admin.kubeconfig}
pki=$state/pki
role_label=nodeguard.lab.role=worker

say() { echo "workers: $*"; }
die() { echo "workers: $*" >&2; exit 1; }
k() { kubectl --kubeconfig "$kubeconfig" --request-timeout=10s "$@"; }

worker_ip() { echo "$subnet.$((100 + $1))"; }   # ng-worker1 = .101; the control plane is below .100

# --- image ------------------------------------------------------------------------------------

# build_image IMAGE DIR FILE...: builds DIR/Containerfile unless IMAGE carries the hash of its inputs.
build_image() {
  local target=$1 dir=$2 recipe
  shift 2
  recipe=$( { podman image inspect --format '{{.Id}}' "$base_image"; cat "$@"; } | sha256sum | cut -c1-16)
  if [ "$(podman image inspect --format '{{ index .Labels "nodeguard.recipe" }}' "$target" 2>/dev/null)" = "$recipe" ]; then
    return 0
  fi
  say "building $target (recipe $recipe)"
  podman build -q --label "nodeguard.recipe=$recipe" --build-arg "BASE_IMAGE=$base_image" \
    -t "$target" -f "$dir/Containerfile" "$dir" >/dev/null
}

ensure_image() {
  podman image exists "$base_image" || "$repo/scripts/build-node-image.sh"
  build_image "$image" "$here" "$here/Containerfile" "$here/kubelet.service" "$here"/standin/*.py
  if [ "$real_kubelet" = 1 ]; then
    build_image "$real_image" "$here/kubelet" "$here"/kubelet/*
  fi
}

# --- per-node files ---------------------------------------------------------------------------

# The kubelet's kubeconfig: identity system:node:<name> (group system:nodes), as after TLS bootstrap.
# The control plane's pki.py writes one per expected worker; extra workers get one signed here.
node_kubeconfig() {
  local node=$1
  if [ -f "$pki/nodes/$node.conf" ]; then
    echo "$pki/nodes/$node.conf"
    return
  fi
  NODEGUARD_LAB_CLIENT_SERVER=$(awk '/server:/ {print $2; exit}' "$pki/kubernetes/kubelet.conf") \
    "$here/client-kubeconfig.sh" "$state/workers/$node/kubelet.conf" "system:node:$node" system:nodes
  echo "$state/workers/$node/kubelet.conf"
}

# What `kubeadm join` writes to /var/lib/kubelet/config.yaml: the cluster's kube-system/kubelet-config
# ConfigMap. Without one (a bare control plane) the kubeadm defaults in kubelet-config.yaml.
kubelet_config_file() {
  local out="$state/workers/config.yaml"
  mkdir -p "$state/workers"
  if ! k -n kube-system get configmap kubelet-config -o 'jsonpath={.data.kubelet}' >"$out" 2>/dev/null || [ ! -s "$out" ]; then
    cp "$here/kubelet-config.yaml" "$out"
  fi
  echo "$out"
}

# --- commands ---------------------------------------------------------------------------------

create_worker() {
  local i=$1 node="ng-worker$1" config=$2
  local conf ca
  conf=$(node_kubeconfig "$node")
  ca="$pki/kubernetes/pki/ca.crt"
  podman create --name "$node" --hostname "$node" --network "$network" --ip "$(worker_ip "$i")" \
    --label "$role_label" --privileged --systemd=always --runtime runc \
    --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
    -v "$kwok:/usr/local/bin/kwok:ro" "$image" >/dev/null
  podman cp "$config" "$node:/var/lib/kubelet/config.yaml"
  podman cp "$conf" "$node:/etc/kubernetes/kubelet.conf"
  [ -f "$ca" ] && podman cp "$ca" "$node:/etc/kubernetes/pki/ca.crt"
  local extra
  extra=$(mktemp)
  echo "KUBELET_EXTRA_ARGS=--pod-cidr=10.244.$i.0/24" >"$extra"
  podman cp "$extra" "$node:/etc/default/kubelet"
  # The machine's SMBIOS UUID (a kubelet reads /sys/class/dmi/id/product_uuid): the one its lab BMC reports.
  python3 "$lab/bmc/system_uuid.py" "$node" >"$extra"
  podman cp "$extra" "$node:/etc/nodeguard/product_uuid"
  rm -f "$extra"
  say "created $node ($(worker_ip "$i"))"
}

# The real kubelet's node: the files `kubeadm join` leaves, with the lab's node-specific settings
# (kubeadm's place for them: patches and kubeadm-flags.env):
#  - config.yaml: the cluster's KubeletConfiguration + cgroupfs, failCgroupV1: false (the host is
#    cgroup v1, which kubelet v1.35 refuses without it), containerd's socket, and eviction thresholds in
#    bytes: the node's filesystems are the host's disk, shared with everything else on the machine, and the
#    kubelet's default (imagefs.available<15%) evicted every lab pod once the host disk had less than 15% of its
#    size free (DiskPressure);
#  - kubeadm-flags.env: --node-ip (the node runs every lab workload, db included: its CSI node
#    plugin nodeguard-csi-node stages and publishes the db volumes, docs/lab.md);
#  - the CNI bridge with the node's pod CIDR 10.244.N.0/24;
#  - the SMBIOS UUID its BMC reports, also as /etc/machine-id (kubelet/nodeguard-node-identity.sh).
# Own cgroup namespace (--cgroupns=private): the kubelet's kubepods hierarchy stays inside the node.
create_real_worker() {
  local i=$1 node="ng-worker$1" config=$2
  local conf ca files
  conf=$(node_kubeconfig "$node")
  ca="$pki/kubernetes/pki/ca.crt"
  podman create --name "$node" --hostname "$node" --network "$network" --ip "$(worker_ip "$i")" \
    --label "$role_label" --label nodeguard.lab.kubelet=real \
    --privileged --cgroupns=private --systemd=always --runtime runc \
    --ulimit nofile=16384:16384 --ulimit nproc=8192:8192 \
    -v "$kubelet_bin:/usr/local/bin/kubelet:ro" -v "$pause_bin:/usr/local/bin/pause:ro" \
    -v "$csinode_bin:/usr/local/bin/nodeguard-csi-node:ro" "$real_image" >/dev/null
  files=$(mktemp -d)
  "$python" - "$config" "$files/config.yaml" <<'PY'
import sys, yaml
config = yaml.safe_load(open(sys.argv[1]))
config.update(cgroupDriver="cgroupfs", failCgroupV1=False,
              containerRuntimeEndpoint="unix:///run/containerd/containerd.sock",
              evictionHard={"memory.available": "100Mi", "nodefs.available": "1Gi", "imagefs.available": "1Gi",
                            "nodefs.inodesFree": "5%", "imagefs.inodesFree": "5%"})
open(sys.argv[2], "w").write(yaml.safe_dump(config, sort_keys=True))
PY
  echo "KUBELET_KUBEADM_ARGS=\"--node-ip=$(worker_ip "$i")\"" \
    >"$files/kubeadm-flags.env"
  echo 'KUBELET_EXTRA_ARGS=' >"$files/kubelet"
  sed "s|@POD_CIDR@|10.244.$i.0/24|" "$here/kubelet/10-lab-bridge.conflist" >"$files/10-lab-bridge.conflist"
  python3 "$lab/bmc/system_uuid.py" "$node" >"$files/product_uuid"
  tr -d '-' <"$files/product_uuid" >"$files/machine-id"
  podman cp "$files/config.yaml" "$node:/var/lib/kubelet/config.yaml"
  podman cp "$files/kubeadm-flags.env" "$node:/var/lib/kubelet/kubeadm-flags.env"
  podman cp "$files/kubelet" "$node:/etc/default/kubelet"
  podman cp "$files/10-lab-bridge.conflist" "$node:/etc/cni/net.d/10-lab-bridge.conflist"
  podman cp "$files/product_uuid" "$node:/etc/nodeguard/product_uuid"
  podman cp "$files/machine-id" "$node:/etc/machine-id"
  podman cp "$conf" "$node:/etc/kubernetes/kubelet.conf"
  [ -f "$ca" ] && podman cp "$ca" "$node:/etc/kubernetes/pki/ca.crt"
  rm -rf "$files"
  say "created $node ($(worker_ip "$i"), real kubelet $k8s_version)"
}

cmd_up() {
  local count=${1:-${NODEGUARD_LAB_WORKERS:-3}}
  [ -x "$kwok" ] || die "kwok not found at $kwok (run lab/scripts/build-k8s.sh)"
  if [ "$real_kubelet" = 1 ]; then
    local binary
    for binary in "$kubelet_bin" "$pause_bin" "$csinode_bin"; do
      [ -x "$binary" ] ||
        die "kubelet, pause or nodeguard-csi-node not in the cache ($kubelet_bin, $pause_bin, $csinode_bin): run lab/scripts/build-k8s.sh"
    done
  fi
  [ -f "$kubeconfig" ] || die "no kubeconfig at $kubeconfig: bring the control plane up first"
  podman network exists "$network" || podman network create --subnet "$subnet.0/24" "$network" >/dev/null
  ensure_image
  k apply -f "$here/rbac.yaml" >/dev/null
  local config nodes=() i
  config=$(kubelet_config_file)
  local last=$count
  [ "$real_kubelet" = 1 ] && last=$((count + 1))
  for i in $(seq 1 "$last"); do
    local node="ng-worker$i" kind=create_worker node_image=$image
    [ "$i" -gt "$count" ] && kind=create_real_worker node_image=$real_image
    nodes+=("$node")
    if ! podman container exists "$node"; then
      "$kind" "$i" "$config"
    elif [ "$(podman inspect --format '{{.Image}}' "$node")" != "$(podman image inspect --format '{{.Id}}' "$node_image")" ]; then
      say "note: $node runs an older $node_image (its files are kept); workers.sh down && up to renew it"
    fi
    if [ "$(podman inspect --format '{{.State.Running}}' "$node")" != true ]; then
      podman start "$node" >/dev/null
      say "started $node"
    fi
  done
  say "waiting for ${nodes[*]} to be Ready"
  local deadline=$((SECONDS + 180))
  until k wait --for=condition=Ready --timeout=10s "${nodes[@]/#/node/}" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { cmd_status; die "workers not Ready after 180s (journalctl -u kubelet in the container)"; }
    sleep 2
  done
  say "Ready: ${nodes[*]}"
  "$lab/storage/storage.sh" up
}

cmd_down() {
  "$lab/storage/storage.sh" down || true
  local node
  for node in $(podman ps -a --filter "label=$role_label" --format '{{.Names}}'); do
    podman rm -f -t 0 "$node" >/dev/null
    # Best effort: with the control plane still up, a removed worker should not linger as NotReady.
    k delete node "$node" --wait=false >/dev/null 2>&1 || true
    say "removed $node"
  done
  rm -rf "$state/workers"
}

# Effective heartbeat settings of a worker's config.yaml, read with the stand-in's own rules.
effective_timings() {
  podman exec "$1" python3 -c '
import sys
sys.path.insert(0, "/opt/nodeguard/standin")
import kubelet_config
s = kubelet_config.load("/var/lib/kubelet/config.yaml")
print(f"update={s.status_update_seconds:g}s report={s.status_report_seconds:g}s lease={s.lease_duration_seconds}s (renew {s.lease_renew_seconds:g}s)")
' 2>/dev/null || echo "-"
}

cmd_status() {
  printf '%-12s %-10s %-8s %s\n' NODE CONTAINER READY "HEARTBEAT (effective config.yaml)"
  local node
  for node in $(podman ps -a --filter "label=$role_label" --format '{{.Names}}' | sort -V); do
    local container ready timings="-"
    container=$(podman inspect --format '{{.State.Status}}' "$node")
    ready=$(k get node "$node" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || echo "?")
    if [ "$(podman inspect --format '{{ index .Config.Labels "nodeguard.lab.kubelet" }}' "$node")" = real ]; then
      timings="real kubelet (its /var/lib/kubelet/config.yaml)"
    elif [ "$container" = running ]; then
      timings=$(effective_timings "$node")
    fi
    printf '%-12s %-10s %-8s %s\n' "$node" "$container" "${ready:-?}" "$timings"
  done
}

case "${1:-}" in
  up) cmd_up "${2:-}" ;;
  image) ensure_image ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) echo "usage: $0 up [N] | image | down | status" >&2; exit 2 ;;
esac
