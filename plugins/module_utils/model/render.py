# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Timings to the profile's settings: what each component must be told, in the form its version accepts.

Flags and gates use null for "remove": a flag equal to the version's default is removed so the
cluster follows Kubernetes when an upgrade changes the default (the grace period went 40s -> 50s
in 1.32). Kubelet fields and sysctls are always written out, both are plain files.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.model.durations import format_duration
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import (
    APISERVER,
    CONTROLLER_MANAGER,
    CONTROLLER_MANAGER_GATES,
    KUBELET,
    SETTINGS,
    SYSCTL,
    Timings,
    kubernetes_defaults,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import (
    Version,
    accepts_pod_eviction_timeout,
    out_of_service_gate,
)


def _text(kind: str, value) -> str:
    if kind == "duration":
        return format_duration(value)
    if kind == "bool":
        return "true" if value else "false"
    return str(value)


def render_settings(timings: Timings, version: Version, stock: bool = False, explicit: bool = False) -> dict:
    """The settings section of a profile.

    stock=True is the kubernetes-default preset: gates go back to stock too. explicit=True writes
    default values out instead of null, for reports of what a cluster runs.
    """
    defaults = kubernetes_defaults(version)
    settings = {KUBELET: {}, CONTROLLER_MANAGER: {}, CONTROLLER_MANAGER_GATES: {}, APISERVER: {}, SYSCTL: {}}
    for setting in SETTINGS:
        value = getattr(timings, setting.key)
        if setting.section == KUBELET:
            settings[KUBELET][setting.name] = value if setting.kind == "int" else format_duration(value)
        elif setting.section == SYSCTL:
            settings[SYSCTL][setting.name] = str(value)
        elif setting.key == "disable_force_detach_on_timeout":
            settings[CONTROLLER_MANAGER][setting.name] = "true" if value else None
        else:
            same = value == getattr(defaults, setting.key) and not explicit
            settings[setting.section][setting.name] = None if same else _text(setting.kind, value)

    # Before 1.27 --pod-eviction-timeout still exists; it only matters if the taint manager is
    # turned off, and then it should agree with the tolerations. From 1.27 the flag kills KCM.
    eviction = timings.unreachable_toleration_seconds
    keep_eviction_flag = accepts_pod_eviction_timeout(version) and eviction != defaults.unreachable_toleration_seconds
    settings[CONTROLLER_MANAGER]["pod-eviction-timeout"] = format_duration(eviction) if keep_eviction_flag else None

    # TaintBasedEvictions is locked on (1.18-1.19) or gone (1.20+): naming it can only hurt.
    settings[CONTROLLER_MANAGER_GATES]["TaintBasedEvictions"] = None
    gate = out_of_service_gate(version)
    if gate == "off-by-default":
        settings[CONTROLLER_MANAGER_GATES]["NodeOutOfServiceVolumeDetach"] = None if stock else True
    elif gate == "removed":
        settings[CONTROLLER_MANAGER_GATES]["NodeOutOfServiceVolumeDetach"] = None
    return settings


def component_flags(settings: dict) -> dict:
    """Complete flag maps per component, the form every file editor takes.

    The controller manager's feature gates ride in its map as ``feature-gates: {Gate: true|null}`` (merged gate
    by gate into what the file has), so roles pass one map and never merge gates themselves.
    """
    controller_manager = dict(settings[CONTROLLER_MANAGER])
    if settings.get(CONTROLLER_MANAGER_GATES):
        controller_manager["feature-gates"] = dict(settings[CONTROLLER_MANAGER_GATES])
    return {CONTROLLER_MANAGER: controller_manager, APISERVER: dict(settings[APISERVER])}


def rke1_kubelet_settings(settings: dict, version: Version) -> dict:
    """The kubelet fields RKE1 must carry as flags: only those that differ from the version's default.

    RKE1 sets the kubelet with flags only. An explicit update frequency alone would make every update a
    full status report (the kubelet copies it into an unset report frequency), so the report frequency
    goes with it; a field without a kubelet flag (nodeLeaseDurationSeconds) is refused by the flag renderer.
    """
    stock = render_settings(kubernetes_defaults(version), version)[KUBELET]
    wanted = settings[KUBELET]
    changed = {field: value for field, value in wanted.items() if stock.get(field) != value}
    if "nodeStatusUpdateFrequency" in changed:
        changed["nodeStatusReportFrequency"] = wanted["nodeStatusReportFrequency"]
    return changed
