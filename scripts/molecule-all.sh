#!/usr/bin/env bash
# Runs every Molecule scenario (molecule/*/molecule.yml) on local podman container nodes.
# Ensures the node image first; fails if any scenario
# fails; always destroys the scenario containers, also on failure or Ctrl-C.
#   scripts/molecule-all.sh            # all scenarios
#   scripts/molecule-all.sh rke2 rke1  # some
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
export PATH="$repo/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$repo/ansible.cfg"
export ANSIBLE_FORCE_COLOR=0 PY_COLORS=0

if [ $# -gt 0 ]; then
  scenarios=("$@")
else
  mapfile -t scenarios < <(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -n1 basename | sort)
fi
# Scenarios marked molecule/<s>/requires-lab run against the lab from tests/integration, not here.
for i in "${!scenarios[@]}"; do
  [ -e "molecule/${scenarios[$i]}/requires-lab" ] && { echo "molecule-all: skip ${scenarios[$i]} (needs the lab)"; unset 'scenarios[i]'; }
done
scenarios=("${scenarios[@]}")

destroy_all() {
  # Nothing left (every scenario ends with destroy): skip the slow per-scenario destroy.
  [ -n "$(podman ps -aq --filter label=owner=molecule)" ] || return 0
  for s in "${scenarios[@]}"; do
    molecule destroy -s "$s" >/dev/null 2>&1 || echo "molecule-all: destroy $s failed" >&2
  done
}
trap destroy_all EXIT
trap 'exit 130' INT TERM

# The scenarios put their containers on a podman network of their own, nodeguard-molecule, which
# the podman driver creates (on a free subnet) and deletes with the scenario.
# (flock: one build at a time; make test may be building it beside this, see the Makefile's images)
flock /var/lock/nodeguard-node-image.lock scripts/build-node-image.sh || exit 1

started=$SECONDS
failed=()
summary=()
# Ansible prints "FAILED - RETRYING" while an until loop (the podman driver's "Wait for instance(s)")
# waits: not a failure. The line is reworded so that the first FAILED in a CI log is a real one.
not_a_failure='s/^FAILED - RETRYING: /retrying (an until loop, not a failure): /'
for s in "${scenarios[@]}"; do
  echo "=== molecule test -s $s"
  t0=$SECONDS
  if molecule test -s "$s" 2>&1 | sed -u "$not_a_failure"; then
    summary+=("$s: passed in $((SECONDS - t0))s")
  else
    summary+=("$s: FAILED after $((SECONDS - t0))s")
    failed+=("$s")
  fi
done

echo "=== molecule summary (wall time $((SECONDS - started))s)"
printf '  %s\n' "${summary[@]}"
[ ${#failed[@]} -eq 0 ] || { echo "molecule-all: failed: ${failed[*]}" >&2; exit 1; }
