#!/usr/bin/env bash
# The lab's control-plane node ng-cp1: a podman container laid out like a kubeadm node, whose
# static pods (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) are real binaries
# started by static-pod-runner from /etc/kubernetes/manifests.
#
#   lab/controlplane/controlplane.sh up       create and start the node, wait for /readyz; idempotent
#   lab/controlplane/controlplane.sh down     remove the node (its etcd data is gone with it)
#   lab/controlplane/controlplane.sh status   runner units and the live flags of each component
#   lab/controlplane/controlplane.sh flags COMPONENT   live command line, one flag per line
#
# Environment: NODEGUARD_LAB_WORKERS (default 3) sets which worker kubeconfigs are issued.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state=$repo/lab/.state
python=${NODEGUARD_PYTHON:-$repo/.venv/bin/python}
cache=${NODEGUARD_CACHE:-$HOME/.cache/nodeguard}

node=ng-cp1
node_ip=10.89.77.10
lb_ip=10.89.77.5   # lab/lb/lb.sh
network=nodeguard-lab
subnet=10.89.77.0/24
host_port=16443
base_image=${NODEGUARD_NODE_IMAGE:-localhost/nodeguard-node:bookworm}
image=localhost/nodeguard-controlplane:bookworm
components=(etcd kube-apiserver kube-controller-manager kube-scheduler)
workers=${NODEGUARD_LAB_WORKERS:-3}

say() { echo "controlplane: $*"; }
die() { echo "controlplane: error: $*" >&2; exit 1; }

k8s_version=$(awk '/^\tk8s.io\/kubernetes / {print $2; exit}' "$repo/lab/k8s-build/go.mod")
etcd_version=$(awk '/^\tgo.etcd.io\/etcd\/server\/v3 / {print $2; exit}' "$repo/lab/k8s-build/go.mod")
k8s_bin=$cache/k8s/$k8s_version/bin
etcd_bin=$cache/etcd/$etcd_version/bin
kubectl=$k8s_bin/kubectl
kwok=$cache/kwok/${KWOK_VERSION:-v0.7.0}/bin/kwok

ensure_binaries() {
  local missing=0
  for binary in "$k8s_bin"/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl} "$etcd_bin/etcd" "$kwok"; do
    [ -x "$binary" ] || missing=1
  done
  [ "$missing" = 0 ] || "$repo/lab/scripts/build-k8s.sh"
}

# The control-plane image: the generic node image + the lab's kubelet stand-in (lab/workers) + the
# static pod runner. Rebuilt when any of them changes.
ensure_image() {
  if ! podman image exists "$base_image"; then
    [ -x "$repo/scripts/build-node-image.sh" ] || die "$base_image is missing and scripts/build-node-image.sh does not exist"
    "$repo/scripts/build-node-image.sh"
  fi
  local recipe have
  recipe=$( { podman image inspect --format '{{.Id}}' "$base_image"
              cat "$here/Containerfile" "$here/static-pod-runner.py" "$here/static-pod-runner.service" \
                  "$repo"/lab/workers/standin/*.py "$repo/lab/workers/kubelet.service"; } |
            sha256sum | cut -c1-16)
  have=$(podman image inspect --format '{{ index .Labels "nodeguard.recipe" }}' "$image" 2>/dev/null || true)
  [ "$have" = "$recipe" ] && return 0
  say "building $image"
  local log
  log=$(mktemp)
  podman build --build-arg "BASE=$base_image" --label "nodeguard.recipe=$recipe" \
    -t "$image" -f "$here/Containerfile" "$repo/lab" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; die "image build failed"; }
  rm -f "$log"
}

ensure_network() {
  podman network exists "$network" && return 0
  say "creating podman network $network ($subnet)"
  podman network create --subnet "$subnet" "$network" >/dev/null
}

worker_names() { for i in $(seq 1 "$workers"); do echo "ng-worker$i"; done; }

# Certificates, kubeconfigs and manifests, rendered on the host into lab/.state.
render() {
  # The apiserver certificate names the lab's load balancer (lab/lb) whether it runs or not; with
  # NODEGUARD_LAB_LB=1 every kubelet.conf (ng-cp1's too) points at it.
  local node_server=()
  [ "${NODEGUARD_LAB_LB:-0}" = 1 ] && node_server=(--node-server "https://$lb_ip:6443")
  # shellcheck disable=SC2046
  "$python" "$here/pki.py" --state "$state" --node "$node" --ip "$node_ip" --host-port "$host_port" \
    --lb-sans "$lb_ip" ng-lb "${node_server[@]}" --workers $(worker_names)
  rm -rf "$state/controlplane"
  "$python" "$here/render.py" --ip "$node_ip" --node "$node" --out "$state/controlplane/manifests" "$here"/manifests/*.yaml
  "$python" "$here/render.py" --ip "$node_ip" --node "$node" --out "$state/controlplane/cluster" "$here"/cluster/*.yaml
  # What `kubeadm init` writes to /var/lib/kubelet/config.yaml: the kubelet-config ConfigMap's content.
  "$python" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["data"]["kubelet"], end="")' \
    "$state/controlplane/cluster/kubelet-config.yaml" > "$state/controlplane/kubelet-config.yaml"
  echo "KUBELET_EXTRA_ARGS=--pod-cidr=10.244.0.0/24" > "$state/controlplane/kubelet.env"
}

create_node() {
  say "creating $node ($node_ip), apiserver published on 127.0.0.1:$host_port"
  podman create --name "$node" --hostname "$node" \
    --network "$network" --ip "$node_ip" --publish "127.0.0.1:$host_port:6443" \
    --privileged --systemd=always --runtime runc \
    --ulimit nofile=16384:16384 --ulimit nproc=4096:4096 \
    --tmpfs /var/lib/etcd:rw,mode=0700 \
    --label nodeguard.lab=controlplane \
    -v "$k8s_bin/kube-apiserver:/usr/local/bin/kube-apiserver:ro" \
    -v "$k8s_bin/kube-controller-manager:/usr/local/bin/kube-controller-manager:ro" \
    -v "$k8s_bin/kube-scheduler:/usr/local/bin/kube-scheduler:ro" \
    -v "$k8s_bin/kubectl:/usr/local/bin/kubectl:ro" \
    -v "$etcd_bin/etcd:/usr/local/bin/etcd:ro" \
    -v "$kwok:/usr/local/bin/kwok:ro" \
    "$image" >/dev/null
  # Certificates and kubeconfigs first, manifests last: the runner starts what it finds.
  podman cp "$state/pki/kubernetes/." "$node:/etc/kubernetes/"
  podman cp "$state/controlplane/kubelet-config.yaml" "$node:/var/lib/kubelet/config.yaml"
  podman cp "$state/controlplane/kubelet.env" "$node:/etc/default/kubelet"
  podman cp "$state/controlplane/manifests/." "$node:/etc/kubernetes/manifests/"
  podman start "$node" >/dev/null
}

wait_ready() {
  local deadline=$((SECONDS + 150))
  until "$kubectl" --kubeconfig "$state/admin.kubeconfig" --request-timeout=3s get --raw /readyz >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      podman exec "$node" journalctl -u kube-apiserver -u etcd -n 30 --no-pager >&2 || true
      die "kube-apiserver did not become ready on https://127.0.0.1:$host_port"
    fi
    sleep 1
  done
}

# What `kubeadm init` does once the API answers: upload RBAC, kubeadm-config and kubelet-config,
# then mark the node as control plane (label + NoSchedule taint) once its kubelet registered it.
bootstrap_objects() {
  local k=("$kubectl" --kubeconfig "$state/super-admin.kubeconfig" --request-timeout=10s)
  "${k[@]}" apply --server-side --field-manager=kubeadm -f "$state/controlplane/cluster/rbac.yaml" >/dev/null
  # Created once, never overwritten: the tune role persists its flags in them.
  local configmap
  for configmap in kubeadm-config kubelet-config; do
    "${k[@]}" -n kube-system get configmap "$configmap" >/dev/null 2>&1 ||
      "${k[@]}" create -f "$state/controlplane/cluster/$configmap.yaml" >/dev/null
  done
  # The extra permissions the kubelet stand-in needs (owned by lab/workers).
  [ -f "$repo/lab/workers/rbac.yaml" ] && "${k[@]}" apply -f "$repo/lab/workers/rbac.yaml" >/dev/null
  local deadline=$((SECONDS + 90))
  until "${k[@]}" get node "$node" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { podman exec "$node" journalctl -u kubelet -n 20 --no-pager >&2; die "the kubelet on $node did not register its Node"; }
    sleep 1
  done
  "${k[@]}" label --overwrite node "$node" node-role.kubernetes.io/control-plane= \
    node.kubernetes.io/exclude-from-external-load-balancers= >/dev/null
  "${k[@]}" taint --overwrite node "$node" node-role.kubernetes.io/control-plane:NoSchedule >/dev/null
  "${k[@]}" wait --for=condition=Ready --timeout=60s "node/$node" >/dev/null || die "Node $node is not Ready"
}

cmd_up() {
  local started=$SECONDS
  ensure_binaries
  ensure_image
  ensure_network
  render
  case "$(podman container inspect --format '{{.State.Status}}' "$node" 2>/dev/null || echo absent)" in
    running) say "$node is already running" ;;
    absent) create_node ;;
    *) say "re-creating the stopped $node (its etcd was on tmpfs: the cluster starts empty)"; podman rm -f "$node" >/dev/null; create_node ;;
  esac
  wait_ready
  bootstrap_objects
  say "ready in $((SECONDS - started))s: kubectl --kubeconfig $state/admin.kubeconfig"
}

cmd_down() {
  if podman container exists "$node"; then
    podman rm -f -t 0 "$node" >/dev/null
    say "removed $node"
  fi
  rm -rf "$state/controlplane"
}

# The live command line of a component, read from /proc inside the node, one argument per line.
cmd_flags() {
  local component=$1 pid
  pid=$(podman exec "$node" systemctl show --property=MainPID --value "$component.service")
  if [ -z "$pid" ] || [ "$pid" = 0 ]; then
    echo "$component: not running" >&2
    return 1
  fi
  podman exec "$node" cat "/proc/$pid/cmdline" | tr '\0' '\n'
}

cmd_status() {
  if [ "$(podman container inspect --format '{{.State.Status}}' "$node" 2>/dev/null)" != running ]; then
    say "$node: not running"
    return 3
  fi
  local component state
  for component in "${components[@]}"; do
    state=$(podman exec "$node" systemctl is-active "$component.service" 2>/dev/null || true)
    echo "== $component ($state)"
    cmd_flags "$component" 2>/dev/null | sed -n '2,$p' | sed 's/^/    /' || true
  done
}

case "${1:-}" in
  up) cmd_up ;;
  image) ensure_image ;;
  down) cmd_down ;;
  status) cmd_status ;;
  flags) shift; [ $# = 1 ] || die "usage: $0 flags COMPONENT"; cmd_flags "$1" ;;
  *) echo "usage: $0 up | down | status | flags COMPONENT" >&2; exit 2 ;;
esac
