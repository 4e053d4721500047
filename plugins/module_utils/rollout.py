# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tune-failover's last step: the running pods that keep the not-ready/unreachable tolerations they were admitted
with (model/tolerations.py), and, when asked, rolling their owners one at a time so that new pods get the cluster's
defaults (k8s/workloads.py). Module failover_toleration_rollout; docs/tune-failover.md."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.waiters import Clock, wait_until
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.workloads import ROLLABLE, owner_of, rollout_status
from ansible_collections.nodeguard.failover.plugins.module_utils.model.tolerations import admitted_with_old_defaults

FINISHED = ("Succeeded", "Failed")


class RolloutError(ClusterError):
    """A workload did not finish rolling out in time; the ones after it were not touched."""


def stale_pods(workloads, defaults: dict, namespaces=()) -> list:
    """Every running pod (of ``namespaces``, or of all) that keeps a not-ready/unreachable toleration a new pod of its
    owner would not get:
    [{namespace, name, owner: {kind, namespace, name} or None, rollable, tolerations: [{key, seconds, default}]}].
    ``rollable``: its owner is a Deployment, StatefulSet or DaemonSet that a restart recreates it through."""
    cache, found = {}, []
    for pod in workloads.list_pods_in(namespaces):
        if (pod.get("status") or {}).get("phase") in FINISHED:
            continue
        owner = owner_of(workloads, pod, cache)
        workload = (owner or {}).get("object")
        template = ((workload or {}).get("spec") or {}).get("template", {}).get("spec") if workload else None
        stale = admitted_with_old_defaults(pod, template, defaults)
        if stale:
            metadata = pod["metadata"]
            found.append({"namespace": metadata.get("namespace", ""), "name": metadata.get("name", ""),
                          "owner": None if owner is None else {key: owner[key] for key in ("kind", "namespace", "name")},
                          "rollable": workload is not None, "tolerations": stale})
    return found


def targets(pods: list) -> list:
    """The workloads to roll, once each, in the order their first pod was listed: [{kind, namespace, name, pods}]."""
    by_owner = {}
    for pod in pods:
        if pod["rollable"]:
            owner = pod["owner"]
            key = (owner["kind"], owner["namespace"], owner["name"])
            by_owner.setdefault(key, {**owner, "pods": []})["pods"].append(pod["name"])
    return list(by_owner.values())


def restart_command(workload: dict) -> str:
    return f"kubectl -n {workload['namespace']} rollout restart {workload['kind'].lower()}/{workload['name']}"


def roll(workloads, to_roll: list, at: str, timeout: float, interval: float, clock: Clock | None = None) -> list:
    """Restart each workload and wait until its rollout is done before the next one (one at a time, as a person
    would); raises RolloutError naming the first that is not done within ``timeout`` seconds (monotonic clock)."""
    rolled = []
    for workload in to_roll:
        kind, namespace, name = workload["kind"], workload["namespace"], workload["name"]
        workloads.restart(kind, namespace, name, at)
        seen = {}
        if not wait_until(_rolled_out(workloads, workload, seen), timeout, interval, clock):
            raise RolloutError(f"{kind} {namespace}/{name} did not finish rolling out within {timeout:g} s "
                               f"({seen.get('left', 'not read')}); rolled before it: "
                               f"{', '.join(_named(w) for w in rolled) or 'none'}; the ones after it were not touched")
        rolled.append(workload)
    return rolled


def _rolled_out(workloads, workload: dict, seen: dict):
    """A check for wait_until: the workload's rollout is done; ``seen["left"]`` keeps what its last reading said."""
    def done():
        current = workloads.get_workload(workload["kind"], workload["namespace"], workload["name"]) or {}
        finished, seen["left"] = rollout_status(workload["kind"], current)
        return finished
    return done


def _named(workload: dict) -> str:
    return f"{workload['kind']} {workload['namespace']}/{workload['name']}"


# What report_lines says before the commands, by what the module did with them.
COMMANDS_HEADING = {
    "listed": "to give them the new defaults, roll their owners (or run tune-failover with -e failover_roll_workloads=true):",
    "would-roll": "would roll, one at a time, each to the end of its rollout:",
    "rolled": "rolled, one at a time, each to the end of its rollout:",
}


def report_lines(pods: list, to_roll: list, defaults: dict, done: str) -> list:
    """What the user reads, one line each: the pods, what keeps them, and the commands. ``done``: a key of
    COMMANDS_HEADING."""
    seconds = ", ".join(f"{key.rsplit('/', 1)[-1]} {value} s" for key, value in sorted(defaults.items()))
    if not pods:
        return [f"every running pod has the cluster's default tolerations ({seconds}) or sets its own"]
    lines = [f"{len(pods)} running pods keep the tolerations they were admitted with; new pods get {seconds}:"]
    for pod in pods:
        owner = pod["owner"]
        whose = f"{owner['kind']} {owner['namespace']}/{owner['name']}" if owner else "a bare pod"
        held = ", ".join(f"{entry['key'].rsplit('/', 1)[-1]} {entry['seconds']}" for entry in pod["tolerations"])
        lines.append(f"  {pod['namespace']}/{pod['name']} ({whose}): {held}")
    if to_roll:
        lines.append(COMMANDS_HEADING[done])
        lines += [f"  {restart_command(workload)}" for workload in to_roll]
    others = [pod for pod in pods if not pod["rollable"]]
    if others:
        lines.append(f"{len(others)} of them have no {' or '.join(ROLLABLE)} to roll: they keep these tolerations "
                     "until they are deleted and created again")
    return lines
