#!/usr/bin/env bash
# Integration tests on a failover lab of their own: a private lab (bench/isolated-lab.sh: its own copy of
# the repository, network namespace and podman storage) started from stock settings, whatever state the
# user's lab (`make demo`, lab/scripts/lab.sh) is in. The suite runs inside it (a failure does not stop
# the others) and the private lab is ALWAYS removed afterwards, even when a test fails or the run is
# interrupted. The user's lab is never touched: the script checks that it is as it was.
#
# The whole suite (no arguments) runs in two private labs side by side, each a fixed part of the test
# directories (SHARDS below): most of its time is spent waiting for Kubernetes' own timers (grace periods,
# Lease renewals), so two labs on two cores take little more than half the time of one. Both labs start at
# once (the images are built first, once); the second lab's output is printed after the first's.
#
#   scripts/integration.sh                       the whole suite, two private labs
#   scripts/integration.sh [pytest args...]      one private lab, e.g. scripts/integration.sh -k controlplane
#                                                or scripts/integration.sh tests/integration/lab/test_workers.py
#   NODEGUARD_TEST_LAB=name                      the (first) private lab's name (default ngtest; the second: <name>2)
#   NODEGUARD_LAB_KEEP=1 scripts/integration.sh  keep the private labs up afterwards (for debugging;
#                                                bench/isolated-lab.sh down with the same name removes one)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
private_lab=$repo/bench/isolated-lab.sh
first_lab=${NODEGUARD_TEST_LAB:-ngtest}
labs=("$first_lab")
if [ $# -eq 0 ]; then labs+=("${first_lab}2"); fi
# The directories each lab runs when the whole suite runs: about the same time each. The whole suite waits for
# the longer one. Measured on 1ab4eb0 (cold, idle machine): lab/ 26:21, the rest 33:17 of which release/ took 3:27.
SHARDS=("tests/integration/lab tests/integration/release tests/integration/awx"
        "tests/integration/bmc tests/integration/eda tests/integration/incident")
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

# What the private lab LAB leaves behind when it is not removed cleanly.
private_leftovers() {
  local lab=$1 path
  if ip netns list 2>/dev/null | grep -qw "$lab"; then echo "network namespace $lab"; fi
  for path in "/var/tmp/nodeguard-bench-lab-$lab" "/run/$lab" "/var/lib/$lab" "/etc/$lab"; do
    if [ -e "$path" ]; then echo "$path"; fi
  done
}
in_lab() { local lab=$1; shift; NODEGUARD_BENCH_NAME=$lab "$private_lab" "$@"; }

before=$(users_lab)
finish() {
  local status=$? lab left pid
  trap - EXIT INT TERM
  for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
  wait || true
  if [ "${NODEGUARD_LAB_KEEP:-0}" = 1 ]; then
    echo "integration: NODEGUARD_LAB_KEEP=1, the private labs ${labs[*]} stay up"
    exit "$status"
  fi
  for lab in "${labs[@]}"; do
    in_lab "$lab" down || status=1
    left=$(private_leftovers "$lab")
    if [ -n "$left" ]; then
      echo "integration: error: the private lab $lab left things behind:" >&2
      echo "$left" >&2
      status=1
    fi
  done
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
for lab in "${labs[@]}"; do
  if [ -n "$(private_leftovers "$lab")" ]; then
    echo "integration: removing the private lab $lab left by an earlier run"
    in_lab "$lab" down
  fi
done
pytest=("$repo/.venv/bin/pytest" -v -rfEs --durations=15 -p no:cacheprovider)

echo "integration: private lab $first_lab (stock settings); the user's lab is not touched"
if [ $# -gt 0 ]; then
  in_lab "$first_lab" up
  # A test path among the arguments says what to run; without one, pytest collects all of tests/integration.
  targets=(tests/integration)
  for arg in "$@"; do
    case $arg in tests/*) targets=(); break ;; esac
  done
  in_lab "$first_lab" run "${pytest[@]}" "${targets[@]}" "$@"
  exit
fi

# The lab's images, built (or found up to date: recipe hashes) once here, outside the private labs, so that
# both labs start at once and neither builds them (make test has built them already: make lab-images).
flock /var/lock/nodeguard-node-image.lock scripts/build-node-image.sh
lab/controlplane/controlplane.sh image
lab/workers/workers.sh image
NODEGUARD_LAB_REAL_KUBELET=1 lab/workers/workers.sh image

# Two labs at once need more inotify instances than the kernel's default of 128 (systemd in every node
# container takes some; a container that finds none left exits at once): raise the limit, as bench/run.sh does.
if [ "$(cat /proc/sys/fs/inotify/max_user_instances)" -lt 512 ]; then
  echo "integration: raising fs.inotify.max_user_instances to 512 (was $(cat /proc/sys/fs/inotify/max_user_instances)) for two labs"
  sysctl -q -w fs.inotify.max_user_instances=512
fi
second_lab=${labs[1]}
second_log=$(mktemp -t nodeguard-integration-XXXXXX.log)
echo "integration: private lab $second_lab beside it for ${SHARDS[1]}, started at the same time (its output follows the first lab's)"
# shellcheck disable=SC2086  # the shard's directories are separate words
{ in_lab "$second_lab" up && in_lab "$second_lab" run "${pytest[@]}" ${SHARDS[1]}; } >"$second_log" 2>&1 &
second_pid=$!
first_status=0
if in_lab "$first_lab" up; then
  # shellcheck disable=SC2086  # the shard's directories are separate words
  in_lab "$first_lab" run "${pytest[@]}" ${SHARDS[0]} || first_status=$?
else
  first_status=$?
  echo "integration: error: the private lab $first_lab did not come up (${SHARDS[0]} not run)" >&2
fi
second_status=0
wait "$second_pid" || second_status=$?
echo "=== integration: private lab $second_lab (${SHARDS[1]})"
cat "$second_log"
rm -f "$second_log"
echo "integration: $first_lab (${SHARDS[0]}) exit $first_status, $second_lab exit $second_status"
[ "$first_status" = 0 ] && [ "$second_status" = 0 ]
