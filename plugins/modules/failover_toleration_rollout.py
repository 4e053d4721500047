# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module failover_toleration_rollout: running pods that keep old default tolerations, and rolling their owners
(logic in module_utils/rollout.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: failover_toleration_rollout
short_description: List the running pods that keep old default tolerations, and roll their owners
version_added: 0.1.0
description:
  - The API server adds the C(node.kubernetes.io/not-ready) and C(node.kubernetes.io/unreachable) NoExecute
    tolerations, with its C(--default-not-ready-toleration-seconds) and C(--default-unreachable-toleration-seconds),
    to a pod when the pod is created, and the pod keeps them. After tune-failover changes these defaults, the pods
    that were already running still leave a dead node after the old seconds (300 by default) until they are created
    again.
  - This module lists those pods, with the workload that owns each (a ReplicaSet is followed to its Deployment) and
    the C(kubectl rollout restart) command that recreates them. A pod whose own template sets the toleration is not
    listed (a restart would keep it), nor a DaemonSet pod (it tolerates without limit by design) or a static pod.
  - With O(roll=true) it restarts each owning Deployment, StatefulSet and DaemonSet as C(kubectl rollout restart)
    does (a new C(kubectl.kubernetes.io/restartedAt) annotation on the pod template) one at a time, and waits until
    its rollout is done before the next one. A pod without such an owner (a bare pod, a Job's) is never deleted; it
    is listed.
  - Needs, besides what reading needs (pods in every namespace, ReplicaSets, the three workload kinds), C(patch) on
    Deployments, StatefulSets and DaemonSets for O(roll=true), that is the credentials tune-failover runs with, not the
    incident remediator's ServiceAccount.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.k8s_auth
attributes:
  check_mode:
    support: full
    description: With O(roll=true), lists and reports RV(ignore:changed) for the workloads it would restart, and restarts none.
  diff_mode:
    support: full
    description: With O(roll=true), the restart annotation of each workload's pod template, before and after.
options:
  not_ready_toleration_seconds:
    description:
      - The cluster's C(--default-not-ready-toleration-seconds) now (the applied profile's
        C(settings.kube_apiserver)). Omitted or null, the API server's own default, 300.
    type: int
  unreachable_toleration_seconds:
    description:
      - The cluster's C(--default-unreachable-toleration-seconds) now. Omitted or null, the API server's own default, 300.
    type: int
  namespaces:
    description:
      - Only the pods of these namespaces, and so only the workloads there. Empty, every namespace.
    type: list
    elements: str
    default: []
  roll:
    description:
      - Restart the owning workloads one at a time and wait for each rollout. V(false) only lists them.
    type: bool
    default: false
  timeout:
    description: Seconds to wait for one workload's rollout; the module fails naming it, and rolls none after it.
    type: int
    default: 600
  interval:
    description: Seconds between two readings of a rollout's state.
    type: int
    default: 5
seealso:
  - module: nodeguard.failover.failover_node_info
"""

EXAMPLES = r"""
- name: List the pods that keep the tolerations they were admitted with
  nodeguard.failover.failover_toleration_rollout:
    not_ready_toleration_seconds: 20
    unreachable_toleration_seconds: 20
  register: stale
  delegate_to: localhost

- name: Show them
  ansible.builtin.debug:
    msg: "{{ stale.lines }}"

- name: Roll their Deployments, StatefulSets and DaemonSets, one at a time
  nodeguard.failover.failover_toleration_rollout:
    not_ready_toleration_seconds: 20
    unreachable_toleration_seconds: 20
    roll: true
  delegate_to: localhost
"""

RETURN = r"""
pods:
  description: The running pods that keep a not-ready or unreachable toleration a new pod would not get (before any roll).
  returned: always
  type: list
  elements: dict
  sample: [{"namespace": "shop", "name": "web-7c9d-x2x4", "owner": {"kind": "Deployment", "namespace": "shop", "name": "web"},
            "rollable": true, "tolerations": [{"key": "node.kubernetes.io/unreachable", "seconds": 300, "default": 20}]}]
workloads:
  description: The workloads whose pods are listed and that a restart recreates them through, once each.
  returned: always
  type: list
  elements: dict
  sample: [{"kind": "Deployment", "namespace": "shop", "name": "web", "pods": ["web-7c9d-x2x4"]}]
commands:
  description: The C(kubectl rollout restart) command of each of RV(workloads).
  returned: always
  type: list
  elements: str
  sample: ["kubectl -n shop rollout restart deployment/web"]
rolled:
  description: The workloads restarted and rolled out by this call (none without O(roll), none in check mode).
  returned: always
  type: list
  elements: dict
lines:
  description: What to show the user, one line each.
  returned: always
  type: list
  elements: str
  sample: ["1 running pods keep the tolerations they were admitted with; new pods get not-ready 20 s, unreachable 20 s:",
           "  shop/web-7c9d-x2x4 (Deployment shop/web): unreachable 300"]
"""

from datetime import datetime, timezone

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.nodeguard.failover.plugins.module_utils import rollout
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.args import K8S_AUTH_ARGUMENT_SPEC, auth_params
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.client import HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR, build_api_client
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.names import why_not_object_name
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.workloads import RESTARTED_AT, Workloads
from ansible_collections.nodeguard.failover.plugins.module_utils.model.tolerations import cluster_defaults

OPTIONS = {
    "not_ready_toleration_seconds": {"type": "int"},
    "unreachable_toleration_seconds": {"type": "int"},
    "namespaces": {"type": "list", "elements": "str", "default": []},
    "roll": {"type": "bool", "default": False},
    "timeout": {"type": "int", "default": 600},
    "interval": {"type": "int", "default": 5},
}


def run(workloads, params: dict, check_mode: bool, now: str, clock=None) -> dict:
    """The module's work without AnsibleModule; raises NodeguardError. ``clock``: k8s.waiters.Clock, a fake in tests."""
    defaults = cluster_defaults(params["not_ready_toleration_seconds"], params["unreachable_toleration_seconds"])
    pods = rollout.stale_pods(workloads, defaults, params["namespaces"])
    to_roll = rollout.targets(pods)
    rolling = params["roll"] and bool(to_roll)
    result = {"pods": pods, "workloads": to_roll, "commands": [rollout.restart_command(w) for w in to_roll], "rolled": [],
              "changed": rolling, "diff": _diff(workloads, to_roll, now) if rolling else {"before": {}, "after": {}}}
    if rolling and not check_mode:
        result["rolled"] = rollout.roll(workloads, to_roll, now, params["timeout"], params["interval"], clock)
    done = "listed" if not params["roll"] else ("would-roll" if check_mode else "rolled")
    result["lines"] = rollout.report_lines(pods, to_roll, defaults, done)
    return result


def _diff(workloads, to_roll: list, now: str) -> dict:
    """The restart annotation of each workload's pod template, as read now and as the restart writes it."""
    before, after = {}, {}
    for workload in to_roll:
        where = f"{workload['kind']} {workload['namespace']}/{workload['name']}"
        current = workloads.get_workload(workload["kind"], workload["namespace"], workload["name"]) or {}
        annotations = ((current.get("spec") or {}).get("template") or {}).get("metadata", {}).get("annotations") or {}
        before[where] = {RESTARTED_AT: annotations.get(RESTARTED_AT)}
        after[where] = {RESTARTED_AT: now}
    return {"before": before, "after": after}


def main():
    module = AnsibleModule(argument_spec=dict(K8S_AUTH_ARGUMENT_SPEC, **OPTIONS), supports_check_mode=True)
    p = module.params
    empty = {"pods": [], "workloads": [], "commands": [], "rolled": [], "lines": []}
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=KUBERNETES_IMPORT_ERROR, **empty)
    try:
        seconds = [p[key] for key in ("not_ready_toleration_seconds", "unreachable_toleration_seconds") if p[key] is not None]
        if min(seconds, default=0) < 0 or p["timeout"] < 1 or p["interval"] < 1:
            raise ValueError("toleration seconds must be 0 or more, timeout and interval 1 or more")
        wrong = [why for why in (why_not_object_name(name, "namespace") for name in p["namespaces"]) if why]
        if wrong:
            raise ValueError(wrong[0])
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        result = run(Workloads(build_api_client(auth_params(p))), p, module.check_mode, now)
    except (NodeguardError, ValueError) as e:
        module.fail_json(msg=f"failover_toleration_rollout: {e}", **empty)
    diff = result.pop("diff")
    if module._diff:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
