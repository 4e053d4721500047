#!/usr/bin/env bash
# Integration tests on a failover lab of their own: a private lab (bench/isolated-lab.sh: its own copy of
# the repository, network namespace and podman storage) started from stock settings, whatever state the
# user's lab (`make demo`, lab/scripts/lab.sh) is in. The suite runs inside it (a failure does not stop
# the others) and the private lab is ALWAYS removed afterwards, even when a test fails or the run is
# interrupted. The user's lab is never touched: the script checks that it is as it was.
#
#   scripts/integration.sh [pytest args...]      e.g. scripts/integration.sh -k controlplane
#   NODEGUARD_TEST_LAB=name                      the private lab's name (default ngtest)
#   NODEGUARD_LAB_KEEP=1 scripts/integration.sh  keep the private lab up afterwards (for debugging;
#                                                bench/isolated-lab.sh down with the same name removes it)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
private_lab=$repo/bench/isolated-lab.sh
export NODEGUARD_BENCH_NAME=${NODEGUARD_TEST_LAB:-ngtest}
# The real-kubelet worker's image is built and loaded, not the worker: the tests that need it add it
# to the lab for their module and remove it afterwards (tests/integration/lab/test_real_kubelet.py).
export NODEGUARD_LAB_REAL_KUBELET_IMAGE=1

# What the user's lab is made of right now: its containers (name, id, state, start time), its network
# and its BMC processes. Compared before and after the run.
users_lab() {
  local names
  names=$(podman ps -a --format '{{.Names}}' | grep -E '^ng-(cp[0-9]+|worker[0-9]+|csi-attacher)$' | sort || true)
  # shellcheck disable=SC2086  # one argument per container name
  if [ -n "$names" ]; then
    podman container inspect --format '{{.Name}} {{.Id}} {{.State.Status}} {{.State.StartedAt}}' $names
  fi
  if podman network exists nodeguard-lab; then echo "network nodeguard-lab"; fi
  pgrep -f "$repo/lab/.state/bmc" | sort || true
}

# What a private lab leaves behind when it is not removed cleanly.
private_leftovers() {
  if ip netns list 2>/dev/null | grep -qw "$NODEGUARD_BENCH_NAME"; then echo "network namespace $NODEGUARD_BENCH_NAME"; fi
  local path
  for path in "/var/tmp/nodeguard-bench-lab-$NODEGUARD_BENCH_NAME" "/run/$NODEGUARD_BENCH_NAME" \
              "/var/lib/$NODEGUARD_BENCH_NAME" "/etc/$NODEGUARD_BENCH_NAME"; do
    if [ -e "$path" ]; then echo "$path"; fi
  done
}

before=$(users_lab)
finish() {
  local status=$?
  trap - EXIT INT TERM
  if [ "${NODEGUARD_LAB_KEEP:-0}" = 1 ]; then
    echo "integration: NODEGUARD_LAB_KEEP=1, the private lab $NODEGUARD_BENCH_NAME stays up"
    exit "$status"
  fi
  "$private_lab" down || status=1
  local left
  left=$(private_leftovers)
  if [ -n "$left" ]; then
    echo "integration: error: the private lab left things behind:" >&2
    echo "$left" >&2
    status=1
  fi
  if [ "$(users_lab)" != "$before" ]; then
    echo "integration: error: the user's lab changed during the run (it must not be touched):" >&2
    diff <(echo "$before") <(users_lab) >&2 || true
    status=1
  fi
  exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

# A private lab left by an interrupted run is removed first: the suite starts from stock settings.
if [ -n "$(private_leftovers)" ]; then
  echo "integration: removing the private lab $NODEGUARD_BENCH_NAME left by an earlier run"
  "$private_lab" down
fi
echo "integration: private lab $NODEGUARD_BENCH_NAME (stock settings); the user's lab is not touched"
"$private_lab" up
"$private_lab" run "$repo/.venv/bin/pytest" -v -rfEs --durations=15 -p no:cacheprovider tests/integration "$@"
