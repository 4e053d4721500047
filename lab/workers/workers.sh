#!/usr/bin/env bash
# Lab worker nodes (see docs/lab-workers.md): podman containers ng-worker1..N on the lab network,
# each a systemd "node" whose kubelet.service is the kubelet stand-in (lab/workers/standin).
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
kubeconfig=${NODEGUARD_LAB_KUBECONFIG:-$state/admin.kubeconfig}
pki=$state/pki
role_label=nodeguard.lab.role=worker

say() { echo "workers: $*"; }
die() { echo "workers: $*" >&2; exit 1; }
k() { kubectl --kubeconfig "$kubeconfig" --request-timeout=10s "$@"; }

worker_ip() { echo "$subnet.$((100 + $1))"; }   # ng-worker1 = .101; the control plane is below .100

# --- image ------------------------------------------------------------------------------------

ensure_image() {
  podman image exists "$base_image" || "$repo/scripts/build-node-image.sh"
  local recipe
  recipe=$( { podman image inspect --format '{{.Id}}' "$base_image"
              cat "$here/Containerfile" "$here/kubelet.service" "$here"/standin/*.py; } | sha256sum | cut -c1-16)
  if [ "$(podman image inspect --format '{{ index .Labels "nodeguard.recipe" }}' "$image" 2>/dev/null)" = "$recipe" ]; then
    return 0
  fi
  say "building $image (recipe $recipe)"
  podman build -q --label "nodeguard.recipe=$recipe" --build-arg "BASE_IMAGE=$base_image" \
    -t "$image" -f "$here/Containerfile" "$here" >/dev/null
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

cmd_up() {
  local count=${1:-${NODEGUARD_LAB_WORKERS:-3}}
  [ -x "$kwok" ] || die "kwok not found at $kwok (run lab/scripts/build-k8s.sh)"
  [ -f "$kubeconfig" ] || die "no kubeconfig at $kubeconfig: bring the control plane up first"
  podman network exists "$network" || podman network create --subnet "$subnet.0/24" "$network" >/dev/null
  ensure_image
  k apply -f "$here/rbac.yaml" >/dev/null
  local config nodes=() i
  config=$(kubelet_config_file)
  for i in $(seq 1 "$count"); do
    local node="ng-worker$i"
    nodes+=("$node")
    if ! podman container exists "$node"; then
      create_worker "$i" "$config"
    elif [ "$(podman inspect --format '{{.Image}}' "$node")" != "$(podman image inspect --format '{{.Id}}' "$image")" ]; then
      say "note: $node runs an older $image (its files are kept); workers.sh down && up to renew it"
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
    [ "$container" = running ] && timings=$(effective_timings "$node")
    printf '%-12s %-10s %-8s %s\n' "$node" "$container" "${ready:-?}" "$timings"
  done
}

case "${1:-}" in
  up) cmd_up "${2:-}" ;;
  image) ensure_image ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) echo "usage: $0 up [N] | down | status" >&2; exit 2 ;;
esac
