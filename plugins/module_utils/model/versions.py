# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each Kubernetes minor version accepts, from docs/settings.md "version table".

Every function takes a Version so callers parse once. Sources are in
/work/shared/kubernetes-facts.md and repeated in docs/settings.md.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import kubeadm_api, kubeadm_api_written
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError

OLDEST_SUPPORTED = (1, 18)
NEWEST_SUPPORTED = (1, 37)

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?$")


class Version(NamedTuple):
    major: int
    minor: int
    patch: int = 0

    @property
    def minor_version(self) -> tuple:
        return (self.major, self.minor)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def parse_version(text) -> Version:
    """Parse "1.35.4", "v1.28.3+rke2r1", "v1.30.2+k3s1" or "1.29"; refuse versions outside the tested range."""
    if not isinstance(text, str):
        raise ProfileError("wrong-type", f"kubernetes_version must be a string like '1.35.4', got {text!r}")
    match = _VERSION.match(text.strip())
    if not match:
        raise ProfileError("unsupported-version", f"cannot read Kubernetes version {text!r}; expected e.g. '1.35.4'")
    version = Version(int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
    if not OLDEST_SUPPORTED <= version.minor_version <= NEWEST_SUPPORTED:
        raise ProfileError(
            "unsupported-version",
            f"Kubernetes {version} is outside the supported range "
            f"{OLDEST_SUPPORTED[0]}.{OLDEST_SUPPORTED[1]} to {NEWEST_SUPPORTED[0]}.{NEWEST_SUPPORTED[1]}",
        )
    return version


def accepts_pod_eviction_timeout(version: Version) -> bool:
    """--pod-eviction-timeout was removed from kube-controller-manager in 1.27 (PR #115840)."""
    return version.minor_version < (1, 27)


def taint_based_evictions_gate(version: Version) -> str:
    """State of the TaintBasedEvictions gate: "locked-on" (GA 1.18-1.19, false kills KCM) or "removed" (1.20+)."""
    return "locked-on" if version.minor_version < (1, 20) else "removed"


def out_of_service_gate(version: Version) -> str:
    """State of the NodeOutOfServiceVolumeDetach gate.

    "absent" before 1.24, "off-by-default" 1.24-1.25 (alpha), "on-by-default" 1.26-1.31 (beta, GA 1.28),
    "removed" from 1.32 (naming it makes the component refuse to start).
    """
    minor = version.minor_version
    if minor < (1, 24):
        return "absent"
    if minor < (1, 26):
        return "off-by-default"
    if minor < (1, 32):
        return "on-by-default"
    return "removed"


def out_of_service_support(version) -> str:
    """Can the out-of-service taint force-detach volumes: "yes", "needs-gate" (1.24-1.25) or "no".

    Takes a Version or a version string, so incident code can pass what it read from the cluster.
    """
    if not isinstance(version, Version):
        version = parse_version(version)
    state = out_of_service_gate(version)
    if state == "absent":
        return "no"
    if state == "off-by-default":
        return "needs-gate"
    return "yes"


def accepts_disable_force_detach_on_timeout(version: Version) -> bool:
    """--disable-force-detach-on-timeout exists from 1.30 (PR #120344)."""
    return version.minor_version >= (1, 30)


def default_grace_seconds(version: Version) -> float:
    """--node-monitor-grace-period default: 40s, 50s from 1.32 (PR #126287)."""
    return 50.0 if version.minor_version >= (1, 32) else 40.0


def kubeadm_api_version(version: Version) -> str:
    """The kubeadm config API a cluster of this version writes by default (table in module_utils/distributions.py).

    v1beta2 (map extraArgs) until 1.21, v1beta3 (map) 1.22-1.30, v1beta4 (list of {name, value}) from 1.31.
    """
    return kubeadm_api_written(version.minor_version).api_version


def kubeadm_accepts_api(version: Version, api_version: str) -> bool:
    """Whether kubeadm of this version reads the given ClusterConfiguration apiVersion."""
    api = kubeadm_api(api_version)
    return api is not None and api.first <= version.minor_version <= api.last


def kubeadm_extra_args_style(api_version: str) -> str:
    """"list" for v1beta4 ([{name, value}]), "map" before."""
    api = kubeadm_api(api_version)
    if api is None:
        raise ProfileError("unsupported-version", f"unknown kubeadm API {api_version!r}")
    return api.extra_args


def accepts_safe_tcp_keepalive_sysctls(version: Version) -> bool:
    """Pod securityContext.sysctls may set tcp_keepalive_* without allow-listing from 1.29 (PR #118846)."""
    return version.minor_version >= (1, 29)


def version_facts(version: Version) -> dict:
    """A summary other parts of the collection (renderers, incident playbooks, audit) can read."""
    api = kubeadm_api_version(version)
    return {
        "version": str(version),
        "pod_eviction_timeout_flag": accepts_pod_eviction_timeout(version),
        "taint_based_evictions_gate": taint_based_evictions_gate(version),
        "out_of_service_gate": out_of_service_gate(version),
        "out_of_service_support": out_of_service_support(version),
        "disable_force_detach_on_timeout_flag": accepts_disable_force_detach_on_timeout(version),
        "default_node_monitor_grace_period": default_grace_seconds(version),
        "kubeadm_api_version": api,
        "kubeadm_extra_args_style": kubeadm_extra_args_style(api),
        "pod_safe_keepalive_sysctls": accepts_safe_tcp_keepalive_sysctls(version),
    }


class Refusal(NamedTuple):
    """A setting this version's component refuses to start with, so the model never renders it."""

    component: str  # "kube-controller-manager"
    kind: str  # "flag" (--name=value) or "gate" (--feature-gates=name=value)
    name: str
    value: str
    reason: str


def refused_settings(version: Version) -> list:
    """What the model refuses to render for this version, each a Refusal the component must reject.

    Derived from the facts above (one home for each fact); the version matrix (make lab-matrix)
    passes each one to the real binary and expects it to refuse to start.
    """
    refused = []
    if not accepts_pod_eviction_timeout(version):
        refused.append(Refusal("kube-controller-manager", "flag", "pod-eviction-timeout", "5m0s",
                               "--pod-eviction-timeout was removed in 1.27"))
    if taint_based_evictions_gate(version) == "locked-on":
        refused.append(Refusal("kube-controller-manager", "gate", "TaintBasedEvictions", "false",
                               "TaintBasedEvictions is GA and locked on in 1.18-1.19"))
    else:
        refused.append(Refusal("kube-controller-manager", "gate", "TaintBasedEvictions", "true",
                               "TaintBasedEvictions was removed in 1.20"))
    gate = out_of_service_gate(version)
    if gate in ("absent", "removed"):
        when = "does not exist before 1.24" if gate == "absent" else "was removed in 1.32"
        refused.append(Refusal("kube-controller-manager", "gate", "NodeOutOfServiceVolumeDetach", "true",
                               f"NodeOutOfServiceVolumeDetach {when}"))
    if not accepts_disable_force_detach_on_timeout(version):
        refused.append(Refusal("kube-controller-manager", "flag", "disable-force-detach-on-timeout", "true",
                               "--disable-force-detach-on-timeout exists from 1.30"))
    return refused
