#!/usr/bin/env bash
# Lab storage (see docs/lab-workers.md): the CSI driver objects (csi.yaml) and the external-attacher
# stand-in (csi_attacher.py) in its own container ng-csi-attacher on the lab network.
#
#   storage.sh up       apply csi.yaml, start the attacher; idempotent
#   storage.sh down     remove the attacher container (API objects go with the cluster)
#   storage.sh status   attacher container state and VolumeAttachments
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
lab=$(dirname "$here")
state=${NODEGUARD_LAB_STATE:-$lab/.state}
kubeconfig=${NODEGUARD_LAB_KUBECONFIG:-$state/admin.kubeconfig}
network=nodeguard-lab
container=ng-csi-attacher
image=localhost/nodeguard-lab-worker:latest   # built by workers.sh: python3-kubernetes is in it
identity=nodeguard:csi-attacher

say() { echo "storage: $*"; }
k() { kubectl --kubeconfig "$kubeconfig" --request-timeout=10s "$@"; }

cmd_up() {
  k apply -f "$here/csi.yaml" >/dev/null
  local conf="$state/storage/attacher.conf"
  "$lab/workers/client-kubeconfig.sh" "$conf" "$identity"
  if ! podman container exists "$container"; then
    podman create --name "$container" --hostname "$container" --network "$network" \
      --label nodeguard.lab.role=storage --restart on-failure \
      -v "$here/csi_attacher.py:/opt/nodeguard/storage/csi_attacher.py:ro" \
      -v "$conf:/etc/kubernetes/attacher.conf:ro" \
      "$image" python3 /opt/nodeguard/storage/csi_attacher.py --kubeconfig /etc/kubernetes/attacher.conf >/dev/null
  fi
  podman start "$container" >/dev/null
  say "attacher running ($container); CSIDriver lab.csi.nodeguard.dev, StorageClass lab-rwo"
}

cmd_down() {
  if podman container exists "$container"; then
    podman rm -f -t 0 "$container" >/dev/null
    say "removed $container"
  fi
  rm -rf "$state/storage"
}

cmd_status() {
  echo "attacher: $(podman inspect --format '{{.State.Status}}' "$container" 2>/dev/null || echo absent)"
  k get volumeattachments 2>/dev/null || true
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) echo "usage: $0 up | down | status" >&2; exit 2 ;;
esac
