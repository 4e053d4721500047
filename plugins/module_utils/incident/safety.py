# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safety rules checked before any proof: they refuse runs that would make things worse.

- storm: too many nodes NotReady at once is an apiserver/load-balancer problem, not dead machines.
  The target node counts as unhealthy even while it is still Ready (the power-event path).
- control-plane: refused unless allowed, never if the remaining control plane would lose etcd quorum.
  Nodes that run etcd (an etcd static pod, or the RKE2/k3s etcd role label) count as control plane.
- one-control-plane-at-a-time: never two control-plane nodes out of service together.
- version: the out-of-service taint needs Kubernetes >= 1.26 (1.24-1.25 with the feature gate).
"""

from __future__ import annotations

import re

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
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
