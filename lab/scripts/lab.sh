#!/usr/bin/env bash
# The failover lab in one command (see docs/lab.md).
#
#   lab/scripts/lab.sh up       control plane, workers, BMCs, workloads, kubeconfig + inventory; idempotent
#   lab/scripts/lab.sh status   nodes, BMC power per node, live control-plane flags
#   lab/scripts/lab.sh down     remove every lab container, the lab network and the BMC processes
#
# Environment: NODEGUARD_LAB_WORKERS (default 3); NODEGUARD_LAB_REAL_KUBELET=1 adds ng-worker<N+1> with
# the real kubelet and containerd (docs/lab-workers.md); NODEGUARD_LAB_LB=1 puts an API server load balancer
# (lab/lb, haproxy) between every kubelet and the API server, from the lab's creation on (docs/lab.md).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
lab=$repo/lab
state=$lab/.state
python=${NODEGUARD_PYTHON:-$repo/.venv/bin/python}
network=nodeguard-lab
control_plane=ng-cp1
workers=${NODEGUARD_LAB_WORKERS:-3}
export NODEGUARD_LAB_WORKERS=$workers
worker_nodes=()
for i in $(seq 1 "$workers"); do worker_nodes+=("ng-worker$i"); done
# NODEGUARD_LAB_REAL_KUBELET=1: one more worker runs the real kubelet with containerd (docs/lab-workers.md).
if [ "${NODEGUARD_LAB_REAL_KUBELET:-0}" = 1 ]; then worker_nodes+=("ng-worker$((workers + 1))"); fi

say() { echo "lab: $*"; }

k8s_version=$(awk '/^\tk8s.io\/kubernetes / {print $2; exit}' "$lab/k8s-build/go.mod")
kubectl=${NODEGUARD_CACHE:-$HOME/.cache/nodeguard}/k8s/$k8s_version/bin/kubectl
[ -x "$kubectl" ] || kubectl=kubectl
# The worker and storage scripts call plain kubectl: let them find the same one.
if [ "$kubectl" != kubectl ]; then PATH="$(dirname "$kubectl"):$PATH"; export PATH; fi
k() { "$kubectl" --kubeconfig "$state/admin.kubeconfig" "$@"; }

# Run a part owned by another script if it exists yet; say so when it does not.
part() {
  local script=$1
  shift
  if [ -x "$script" ]; then
    "$script" "$@" 8>&- 9>&-  # long-lived children (BMC emulators) must not inherit the lab locks
  else
    say "skipping ${script#"$repo"/} $1: not there yet"
  fi
}

timings=()
phase() {  # phase NAME COMMAND...: run and record its duration
  local name=$1 started=$SECONDS
  shift
  "$@"
  timings+=("$name=$((SECONDS - started))s")
}

# The lab is a cluster with this collection installed: the remediation job's namespace,
# ServiceAccount and least-privilege roles from deploy/rbac/ (docs/rbac.md), as a user applies them.
apply_remediation_rbac() {
  k apply -f "$repo/deploy/rbac" >/dev/null
}

apply_workloads() {
  shopt -s nullglob
  local files=("$lab"/workloads/*.yaml)
  shopt -u nullglob
  if [ ${#files[@]} = 0 ]; then
    say "no workloads in lab/workloads yet"
    return 0
  fi
  local args=()
  for file in "${files[@]}"; do args+=(-f "$file"); done
  k apply "${args[@]}" >/dev/null
  say "applied ${#files[@]} workload file(s); waiting for their rollout"
  local object
  for object in $(k -n failover-lab get deployment,statefulset,daemonset -o name 2>/dev/null); do
    k -n failover-lab rollout status "$object" --timeout=120s >/dev/null || say "warning: $object is not ready"
  done
}

# A control plane re-created under running workers starts with an empty etcd: their kubelets
# registered with the old one. Restarting the kubelet makes it register again, as a real kubelet
# does when its Node object is gone.
rejoin_workers() {
  local node
  for node in "${worker_nodes[@]}"; do
    [ "$(podman container inspect --format '{{.State.Status}}' "$node" 2>/dev/null)" = running ] || continue
    k get node "$node" >/dev/null 2>&1 && continue
    say "$node runs but has no Node object (new control plane): restarting its kubelet"
    podman exec "$node" systemctl restart kubelet.service
  done
}

write_inventory() {
  "$python" "$lab/scripts/inventory.py" --state "$state" --control-plane "$control_plane" \
    --workers "${worker_nodes[@]}" --kubernetes-version "${k8s_version#v}"
  say "inventory: $state/inventory.yml"
}

cmd_up() {
  local started=$SECONDS
  mkdir -p "$state"
  phase build "$lab/scripts/build-k8s.sh" >/dev/null
  # Before the control plane: ng-cp1's kubelet registers its Node through it.
  if [ "${NODEGUARD_LAB_LB:-0}" = 1 ]; then phase lb part "$lab/lb/lb.sh" up; fi
  phase control-plane part "$lab/controlplane/controlplane.sh" up
  rejoin_workers
  phase workers part "$lab/workers/workers.sh" up "$workers"
  phase bmc part "$lab/bmc/bmc.sh" up "${worker_nodes[@]}"
  phase remediation-rbac apply_remediation_rbac
  phase workloads apply_workloads
  write_inventory
  say "up in $((SECONDS - started))s (${timings[*]})"
  printf '%s\n' "${timings[@]}" "total=$((SECONDS - started))s" > "$state/up-timings.txt"
  say "kubectl --kubeconfig $state/admin.kubeconfig get nodes"
}

cmd_status() {
  if ! podman container exists "$control_plane"; then
    say "down"
    return 3
  fi
  echo "== nodes"
  k get nodes -o wide || true
  echo
  echo "== BMC power"
  part "$lab/bmc/bmc.sh" status "${worker_nodes[@]}" || true
  if podman container exists ng-lb; then
    echo
    echo "== API server load balancer"
    part "$lab/lb/lb.sh" status || true
  fi
  echo
  echo "== live control-plane flags (/proc/<pid>/cmdline in $control_plane)"
  "$lab/controlplane/controlplane.sh" status
}

cmd_down() {
  part "$lab/bmc/bmc.sh" down || true
  part "$lab/workers/workers.sh" down "$workers" || true
  part "$lab/controlplane/controlplane.sh" down
  part "$lab/lb/lb.sh" down || true
  # Anything else still attached to the lab network is a lab leftover.
  if podman network exists "$network"; then
    podman ps -a --filter "network=$network" --format '{{.Names}}' | while read -r name; do
      say "removing leftover container $name"
      podman rm -f -t 0 "$name" >/dev/null
    done
    podman network rm "$network" >/dev/null
    say "removed network $network"
  fi
  rm -f "$state/inventory.yml" "$state/up-timings.txt"
  say "down"
}

# One `up` or `down` at a time: tests, demos and people share this lab; a second caller waits
# and then finds the lab as the first one left it.
lock() {
  mkdir -p "$state"
  exec 9>"$state/.lab.lock"
  if ! flock --nonblock 9; then
    say "another lab.sh up/down is running; waiting for it"
    flock 9
  fi
}

# Test sessions using the lab hold a shared lock on .lab.users (tests/integration/conftest.py):
# `down` waits for them to finish rather than pulling the lab away in the middle of a test.
wait_for_users() {
  exec 8>>"$state/.lab.users"
  if ! flock --nonblock 8; then
    say "test sessions are using the lab; waiting for them to finish (Ctrl-C to give up)"
    flock 8
  fi
}

case "${1:-}" in
  up) lock; cmd_up ;;
  status) cmd_status ;;
  down) lock; wait_for_users; cmd_down ;;
  *) echo "usage: $0 up | status | down" >&2; exit 2 ;;
esac
