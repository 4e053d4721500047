# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the failover profile model (plugins/module_utils/model): profile, timeline, table, applied profile;
what a role puts back after a failed change (module_utils/files.py); which running processes carry a role's
flags (renderers/flags.py)."""

from __future__ import annotations

import json
import os

from ansible.errors import AnsibleFilterError
from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import distribution
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError, ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.files import rollback_plan
from ansible_collections.nodeguard.failover.plugins.module_utils.model import applied, ownership, report
from ansible_collections.nodeguard.failover.plugins.module_utils.model import risks as risk_rules
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import DEFAULT_PRESET
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import audit_timeline, build_profile
from ansible_collections.nodeguard.failover.plugins.module_utils.model.table import timeline_table
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags, kubelet


def failover_profile(facts, preset=None, detect_seconds=None, evict_seconds=None, overrides=None,
                     network_rtt_ms=None, heartbeat_budget=None, assumptions=None):
    try:
        profile = build_profile(facts, preset=preset, detect_seconds=detect_seconds, evict_seconds=evict_seconds,
                                overrides=overrides, network_rtt_ms=network_rtt_ms,
                                heartbeat_budget=heartbeat_budget, assumptions=assumptions)
        if "rke1_kubelet_settings" in profile:
            # RKE1 sets the kubelet with flags only: a field without a flag is refused here, in the plan.
            profile["flags"]["kubelet_rke1"] = kubelet.settings_to_flags(
                profile["rke1_kubelet_settings"], "RKE1 kubelet (services.kubelet.extra_args)")
    except (ProfileError, FileEditError) as error:
        raise AnsibleFilterError(str(error)) from error
    return profile


def failover_timeline(current_settings, facts, network_rtt_ms=None, heartbeat_budget=None, assumptions=None):
    try:
        return audit_timeline(current_settings, facts, network_rtt_ms=network_rtt_ms,
                              heartbeat_budget=heartbeat_budget, assumptions=assumptions)
    except ProfileError as error:
        raise AnsibleFilterError(str(error)) from error


def failover_timeline_table(profile_before, profile_after):
    try:
        return timeline_table(profile_before, profile_after)
    except ProfileError as error:
        raise AnsibleFilterError(str(error)) from error


def collection_version() -> str:
    """This collection's version: MANIFEST.json when installed from an artifact, else galaxy.yml of the source tree."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    manifest = os.path.join(root, "MANIFEST.json")
    if os.path.exists(manifest):
        with open(manifest, encoding="utf-8") as handle:
            return str(json.load(handle)["collection_info"]["version"])
    galaxy = os.path.join(root, "galaxy.yml")
    if os.path.exists(galaxy):
        with open(galaxy, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("version:"):
                    return line.split(":", 1)[1].strip().strip("'\"")
    return "unknown"


def failover_distribution(name):
    try:
        return distribution(name)._asdict()
    except ProfileError as error:
        raise AnsibleFilterError(str(error)) from error


def failover_rollback_plan(edits, removed=None, removed_backup=""):
    try:
        return rollback_plan(list(edits or []), removed, removed_backup)
    except FileEditError as error:
        raise AnsibleFilterError(str(error)) from error


def failover_processes_with_flags(process_lines, wanted_flags, component="process"):
    try:
        return flags.processes_with_flags(process_lines, wanted_flags, str(component))
    except FileEditError as error:
        raise AnsibleFilterError(str(error)) from error


def failover_applied_profile(profile, applied_at, detect_seconds=None, evict_seconds=None, overrides=None, previous=None):
    try:
        return applied.record(profile, collection_version(), applied_at, detect_seconds, evict_seconds, overrides,
                              previous or None)
    except ProfileError as error:
        raise AnsibleFilterError(str(error)) from error


def failover_profile_drift(configmap, nodes, kubernetes_version):
    try:
        return applied.audit(configmap or None, nodes, kubernetes_version)
    except ProfileError as error:
        raise AnsibleFilterError(str(error)) from error


def failover_audit_risks(timeline, unaudited_hosts=None, nodes=None, node_hosts=None, endpoints=None,
                         kubelet_servers=None, pods=None, max_examples=20, preset=None, node_infos=None):
    if not isinstance(timeline, dict):
        raise AnsibleFilterError(f"failover_audit_risks: expected the failover_timeline of the cluster, got {timeline!r}")
    try:
        return risk_rules.audit_risks(
            timeline, unaudited_hosts or [], nodes or [], node_hosts or [], endpoints or [],
            kubelet_servers or [], pods or [], int(max_examples), preset or DEFAULT_PRESET, node_infos or {},
        )
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"failover_audit_risks: unreadable input ({error!r})") from error


def failover_audit_disagreements(nodes, node_hosts=None):
    if not isinstance(nodes, dict):
        raise AnsibleFilterError(f"failover_audit_disagreements: expected host -> {{role, settings}}, got {nodes!r}")
    try:
        return report.disagreements(nodes, list(node_hosts or []))
    except (AttributeError, TypeError) as error:
        raise AnsibleFilterError(f"failover_audit_disagreements: unreadable input ({error!r})") from error


def failover_audit_report(timeline, kubernetes_default=None, facts=None, risks=None, applied=None, disagreements=None,
                          nodes=None, generated_at="", fail_on="none", path="", ignore=None):
    for name, value in (("the input", timeline), ("kubernetes_default", kubernetes_default), ("facts", facts)):
        if not isinstance(value, dict):
            raise AnsibleFilterError(f"failover_audit_report: {name} must be a mapping, got {value!r}")
    try:
        return report.build(timeline, kubernetes_default, facts, risks or [], applied or None, disagreements or [],
                            nodes or {}, str(generated_at or ""), str(fail_on or "none"), str(path or ""), ignore)
    except ProfileError as error:
        raise AnsibleFilterError(str(error)) from error
    except (KeyError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"failover_audit_report: unreadable input ({error!r})") from error


def failover_plan_checks(node_infos, profile):
    if not isinstance(node_infos, dict) or not isinstance(profile, dict):
        raise AnsibleFilterError("failover_plan_checks: expected host -> failover_node_info result, and the profile")
    try:
        return ownership.plan_checks(node_infos, profile)
    except (AttributeError, KeyError, TypeError) as error:
        raise AnsibleFilterError(f"failover_plan_checks: unreadable input ({error!r})") from error


def failover_managed_control_plane(nodes):
    if not isinstance(nodes, list):
        raise AnsibleFilterError(f"failover_managed_control_plane: expected a list of Node objects, got {nodes!r}")
    return ownership.managed_control_plane(nodes)


class FilterModule:
    """nodeguard.failover failover model filters."""

    def filters(self):
        return {
            "failover_profile": failover_profile,
            "failover_timeline": failover_timeline,
            "failover_timeline_table": failover_timeline_table,
            "failover_applied_profile": failover_applied_profile,
            "failover_profile_drift": failover_profile_drift,
            "failover_distribution": failover_distribution,
            "failover_audit_risks": failover_audit_risks,
            "failover_audit_report": failover_audit_report,
            "failover_audit_disagreements": failover_audit_disagreements,
            "failover_plan_checks": failover_plan_checks,
            "failover_managed_control_plane": failover_managed_control_plane,
            "failover_rollback_plan": failover_rollback_plan,
            "failover_processes_with_flags": failover_processes_with_flags,
        }
