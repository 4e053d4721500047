# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safety rules checked before any proof: they refuse runs that would make things worse.

- storm: too many nodes NotReady at once is an apiserver/load-balancer problem, not dead machines.
  The target node counts as unhealthy even while it is still Ready (the power-event path).
- control-plane: refused unless allowed, never if the remaining control plane would lose etcd quorum.
  Nodes that run etcd (an etcd static pod, or the RKE2/k3s etcd role label) count as control plane.
- one-control-plane-at-a-time: never two control-plane nodes out of service together.
- version: the out-of-service taint needs Kubernetes >= 1.26 (1.24-1.25 with the feature gate).
- other remediator: never on a node another remediator owns (medik8s, or an out-of-service taint nodeguard did
  not write): two remediators would fence, taint and untaint against each other.
"""

from __future__ import annotations

import re

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError, ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import (
    has_out_of_service_taint,
    is_control_plane,
    is_ready,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.pods import is_mirror
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import out_of_service_support

_LIMIT = re.compile(r"^\s*(\d+)\s*(%?)\s*$")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)")


def allowed_unhealthy(max_unhealthy, total: int) -> int:
    """How many NotReady nodes ``max_unhealthy`` allows: a count ("2", 2) or a share ("40%", rounded down)."""
    match = _LIMIT.match(str(max_unhealthy))
    if not match:
        raise RefusedError("bad-input", f"max_unhealthy must be a count like 2 or a share like '40%', got {max_unhealthy!r}")
    value = int(match.group(1))
    if match.group(2):
        if value > 100:
            raise RefusedError("bad-input", f"max_unhealthy {max_unhealthy!r} is more than 100%")
        return (total * value) // 100
    return value


def check_storm(nodes: list, max_unhealthy, down=()) -> None:
    """``down``: names counted as unhealthy whatever their Ready condition says (the target of a run, which
    on the power-event path may still be Ready in the API)."""
    unhealthy = sorted(n["metadata"]["name"] for n in nodes if not is_ready(n) or n["metadata"]["name"] in down)
    allowed = allowed_unhealthy(max_unhealthy, len(nodes))
    if len(unhealthy) > allowed:
        raise RefusedError(
            "storm",
            f"{len(unhealthy)} of {len(nodes)} nodes are NotReady ({', '.join(unhealthy)}), more than "
            f"max_unhealthy={max_unhealthy} allows ({allowed}). Many nodes failing at once usually means the "
            "control plane or its load balancer lost them, not that they are off; check that first.",
        )


ETCD_POD_NAMESPACE = "kube-system"
ETCD_POD_SELECTOR = "component=etcd"  # kubeadm's and RKE2's etcd static pods


def etcd_nodes(pods: list) -> frozenset:
    """Names of the nodes that run an etcd static pod (its mirror pod in kube-system carries component=etcd)."""
    return frozenset((p.get("spec") or {}).get("nodeName") for p in pods if is_mirror(p) and (p.get("spec") or {}).get("nodeName"))


def check_control_plane(target: dict, nodes: list, allow_control_plane: bool, etcd=frozenset()) -> None:
    """``etcd``: names of the nodes that run an etcd static pod (etcd_nodes)."""
    if not is_control_plane(target, etcd):
        return
    name = target["metadata"]["name"]
    if not allow_control_plane:
        raise RefusedError("control-plane", f"{name} is a control-plane or etcd node; set allow_control_plane to remediate it")
    members = [n for n in nodes if is_control_plane(n, etcd)]
    others = [n for n in members if n["metadata"]["name"] != name]
    busy = [n["metadata"]["name"] for n in others if has_out_of_service_taint(n)]
    if busy:
        raise RefusedError(
            "control-plane",
            f"control-plane node(s) {', '.join(busy)} already carry the out-of-service taint; one at a time",
        )
    quorum = len(members) // 2 + 1
    healthy = sum(1 for n in others if is_ready(n))
    if healthy < quorum:
        raise RefusedError(
            "etcd-quorum",
            f"only {healthy} other control-plane node(s) are Ready, etcd quorum of {len(members)} "
            f"(stacked etcd assumed) needs {quorum}; restore the control plane first",
        )


def out_of_service_supported(version: str) -> str:
    """'yes', 'needs-gate' or 'no' for a server gitVersion; versions newer than the model knows are 'yes'."""
    try:
        return out_of_service_support(version)
    except ProfileError:
        match = _VERSION.match(version or "")
        if match and (int(match.group(1)), int(match.group(2))) >= (1, 26):
            return "yes"
        return "no"


def check_version(version: str, gate_enabled: bool) -> None:
    support = out_of_service_supported(version)
    if support == "yes":
        return
    if support == "needs-gate":
        if gate_enabled:
            return
        raise RefusedError(
            "version",
            f"Kubernetes {version} needs the NodeOutOfServiceVolumeDetach feature gate on kube-controller-manager "
            "for the out-of-service taint; enable it and set out_of_service_gate_enabled=true",
        )
    raise RefusedError("version", f"Kubernetes {version} does not support the out-of-service taint (needs >= 1.24)")


# medik8s (Node Healthcheck, Fence Agents Remediation, Self Node Remediation): its per-node Lease, the objects
# of k8s/services.py MEDIK8S_RESOURCES, and the annotation naming the node of a remediation CR.
MEDIK8S_LEASE_NAMESPACE = "medik8s-leases"
MEDIK8S_NODE_ANNOTATION = "remediation.medik8s.io/node-name"
_KINDS = {"fenceagentsremediations": "FenceAgentsRemediation", "selfnoderemediations": "SelfNodeRemediation"}


def selects(selector: dict, labels: dict) -> bool:
    """Does a Kubernetes LabelSelector (matchLabels, matchExpressions) select an object with ``labels``?
    An empty selector selects everything; an unknown operator counts as selecting (the safe side here)."""
    selector = selector or {}
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def _names(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


def other_remediators(cluster, node: dict) -> list:
    """What else claims ``node``, one phrase each ([] when nothing does). A medik8s API that is not served (404)
    means that operator is not installed. Raises ClusterError when a read fails otherwise."""
    name = node["metadata"]["name"]
    labels = (node.get("metadata") or {}).get("labels") or {}
    found = []
    if records.decide(node, records.read(node))[0] == records.ADOPT:
        found.append("an out-of-service taint that nodeguard did not write (no open nodeguard incident record on the node)")
    for check in cluster.list_medik8s("nodehealthchecks") or []:
        if selects((check.get("spec") or {}).get("selector"), labels):
            found.append(f"medik8s NodeHealthCheck {_names(check)} selects it")
    lease = cluster.get_lease(MEDIK8S_LEASE_NAMESPACE, f"node-{name}")
    holder = ((lease or {}).get("spec") or {}).get("holderIdentity")
    if holder:
        found.append(f"medik8s Lease {MEDIK8S_LEASE_NAMESPACE}/node-{name} is held by {holder}")
    for plural, kind in _KINDS.items():
        for remediation in cluster.list_medik8s(plural) or []:
            meta = remediation.get("metadata") or {}
            if name in (meta.get("name"), (meta.get("annotations") or {}).get(MEDIK8S_NODE_ANNOTATION)):
                found.append(f"medik8s {kind} {_names(remediation)} remediates it")
    return found


def check_other_remediators(cluster, node: dict) -> None:
    """Refuse when another remediator owns ``node`` (other_remediators), naming it."""
    name = node["metadata"]["name"]
    try:
        owners = other_remediators(cluster, node)
    except ClusterError as e:
        raise RefusedError(
            "other-remediator",
            f"cannot tell whether another remediator (medik8s) owns {name}: {e}. deploy/rbac/ grants these reads (docs/rbac.md). Nothing was changed",
        ) from e
    if owners:
        raise RefusedError(
            "other-remediator",
            f"{name} is handled by another remediator: {'; '.join(owners)}. Two remediators on one node fence, taint "
            "and untaint against each other; choose one per node (docs/runbooks/node-outage.md, 'One remediator per "
            "node'). Nothing was changed",
        )
