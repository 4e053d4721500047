# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The applied profile: what tune-failover last applied, kept in the cluster as a ConfigMap.

tune-failover writes it after a successful run (``record``), node-outage and node-recover take
their timing defaults from it (``resolve_timing``), and audit-failover compares every node with
it (``drift``). One JSON document under one key, so a reader never assembles it from pieces.
"""

from __future__ import annotations

import json

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediation import POWER_EVENT_LEASE_MARGIN_SECONDS, STOCK_REMEDIATION
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import (
    APISERVER,
    CONTROLLER_MANAGER,
    CONTROLLER_MANAGER_GATES,
    SETTINGS,
    read_settings,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import parse_version

NAMESPACE = "nodeguard-system"
NAME = "nodeguard-applied-profile"
KEY = "profile.json"
FORMAT = 1
TIMING_KEYS = ("not_ready_seconds", "lease_margin_seconds")
# Sections only control-plane hosts (and the RKE1 config host) carry; kubelet and sysctl are on every node.
CONTROL_PLANE_SECTIONS = (CONTROLLER_MANAGER, CONTROLLER_MANAGER_GATES, APISERVER)
WHERE = f"ConfigMap {NAMESPACE}/{NAME}"


def record(profile, collection_version, applied_at, detect_seconds=None, evict_seconds=None, overrides=None,
           previous=None) -> dict:
    """The ConfigMap ``data`` for a profile tune-failover has just applied.

    ``previous`` is the ConfigMap read before (or None): when it records the same profile, its time is
    kept, so a second run writes the same bytes and reports no change.
    """
    if not isinstance(profile, dict) or not isinstance(profile.get("settings"), dict):
        raise ProfileError("wrong-type", f"expected a profile from the failover_profile filter, got {profile!r}")
    document = {
        "format": FORMAT,
        "preset": profile["preset"],
        "targets": {"detect_seconds": detect_seconds, "evict_seconds": evict_seconds},
        "overrides": overrides if isinstance(overrides, dict) else {},
        "settings": profile["settings"],
        "timeline": profile.get("timeline", {}),
        "remediation": profile["remediation"],
        "distribution": profile["distribution"],
        "kubernetes_version": profile["kubernetes_version"],
        "collection_version": str(collection_version),
        "applied_at": str(applied_at),
    }
    try:
        before = read(previous)
    except ProfileError:
        before = None  # an unreadable record is replaced
    if before is not None and json.loads(json.dumps(document)) == dict(before, applied_at=document["applied_at"]):
        document["applied_at"] = before["applied_at"]
    return {KEY: json.dumps(document, indent=2, sort_keys=True)}


def _whole(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProfileError("applied-profile", f"{WHERE}: {name} must be a whole number >= 0, got {value!r}")
    return value


def read(configmap) -> dict | None:
    """The stored profile from the ConfigMap as the API returns it; None when there is none.

    A ConfigMap that exists but cannot be read is refused: guessing would act on the wrong timings.
    """
    if configmap is None:
        return None
    text = ((configmap or {}).get("data") or {}).get(KEY)
    if not isinstance(text, str):
        raise ProfileError("applied-profile", f"{WHERE} has no {KEY} key; run tune-failover again or delete it")
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ProfileError("applied-profile", f"{WHERE}: {KEY} is not JSON ({error})") from error
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ProfileError("applied-profile", f"{WHERE}: {KEY} is not format {FORMAT} (written by another version?)")
    remediation = document.get("remediation")
    if not isinstance(remediation, dict):
        raise ProfileError("applied-profile", f"{WHERE}: remediation must be a mapping, got {remediation!r}")
    for key in TIMING_KEYS:
        _whole(remediation.get(key), f"remediation.{key}")
    if not isinstance(document.get("settings"), dict):
        raise ProfileError("applied-profile", f"{WHERE}: settings must be a mapping")
    return document


def resolve_timing(not_ready_seconds=None, lease_margin_seconds=None, applied=None, power_event=False) -> dict:
    """node-outage's timing values: explicit ones win, then the applied profile, then the stock values.
    On the power-event path (``power_event``) the Lease margin defaults to POWER_EVENT_LEASE_MARGIN_SECONDS,
    whatever the profile: that path measures the Lease against the renew interval, not the duration.

    Returns the two values, ``source`` per value (explicit, applied-profile or stock) and ``detail``,
    the line the run prints so the operator sees where the wait came from.
    """
    explicit = {"not_ready_seconds": not_ready_seconds, "lease_margin_seconds": lease_margin_seconds}
    result = {"source": {}}
    for key in TIMING_KEYS:
        if explicit[key] is not None:
            result[key], result["source"][key] = _whole(explicit[key], key), "explicit"
        elif power_event and key == "lease_margin_seconds":
            result[key], result["source"][key] = POWER_EVENT_LEASE_MARGIN_SECONDS, "power-event path"
        elif applied is not None:
            result[key], result["source"][key] = applied["remediation"][key], "applied-profile"
        else:
            result[key], result["source"][key] = STOCK_REMEDIATION[key], "stock"
    values = ", ".join(f"{key}={result[key]} ({result['source'][key]})" for key in TIMING_KEYS)
    if applied is not None:
        origin = (f"applied profile {applied.get('preset')!r} from {WHERE}, "
                  f"applied {applied.get('applied_at')} by collection {applied.get('collection_version')}")
    else:
        origin = f"the cluster was never tuned ({WHERE} does not exist): stock values"
    result["detail"] = f"timing: {values}; {origin}"
    return result


def _node_sections(role: str) -> list:
    """Which profile sections a host of this role carries."""
    sections = ["kubelet", "sysctl"]
    if role in ("control_plane", "config_host"):
        sections[:0] = list(CONTROL_PLANE_SECTIONS)
    if role == "config_host":  # RKE1 cluster.yml: component and kubelet flags, no sysctls
        sections.remove("sysctl")
    return sections


def _gates(section) -> dict:
    """Gate -> "true"/"false"; absent and null both mean "not named"."""
    return {name: str(value).lower() for name, value in (section or {}).items() if value is not None}


def drift(applied, nodes, kubernetes_version) -> list:
    """Per node, the settings that differ from the applied profile.

    ``nodes`` maps a host to ``{"role": control_plane|node|config_host, "settings": {...}}`` as the audit read
    it; hosts with no settings read are skipped. Values are compared as timings (``10s`` equals ``10.0s``;
    an absent flag equals its default).
    Returns ``[{"node", "setting", "applied", "live"}]``, sorted; empty when nothing drifted.
    """
    if applied is None:
        return []
    version = parse_version(kubernetes_version)
    wanted, problems, _notes = read_settings(applied["settings"], version)
    if problems:
        raise ProfileError("applied-profile", f"{WHERE}: stored settings unreadable: {problems[0][1]}")
    found = []
    for host in sorted(nodes or {}):
        node = nodes[host] or {}
        if not node.get("settings"):  # nothing was read there (an RKE1 node: its settings are in cluster.yml)
            continue
        sections = _node_sections(node.get("role", "node"))
        live = read_settings(node.get("settings") or {}, version)[0]
        for setting in SETTINGS:
            if setting.section in sections and getattr(live, setting.key) != getattr(wanted, setting.key):
                found.append({"node": host, "setting": f"{setting.section}.{setting.name}",
                              "applied": getattr(wanted, setting.key), "live": getattr(live, setting.key)})
        if CONTROLLER_MANAGER_GATES in sections:
            want = _gates(applied["settings"].get(CONTROLLER_MANAGER_GATES))
            have = _gates((node.get("settings") or {}).get(CONTROLLER_MANAGER_GATES))
            for gate in sorted(set(want) | set(have)):
                if want.get(gate) != have.get(gate):
                    found.append({"node": host, "setting": f"{CONTROLLER_MANAGER_GATES}.{gate}",
                                  "applied": want.get(gate), "live": have.get(gate)})
    return found


def audit(configmap, nodes, kubernetes_version) -> dict:
    """What audit-failover reports about the applied profile: which one, when, and the drift per node."""
    document = read(configmap)
    if document is None:
        return {"recorded": False, "drift": [],
                "summary": f"no applied profile ({WHERE} does not exist): the cluster was never tuned by tune-failover"}
    found = drift(document, nodes, kubernetes_version)
    drifted = sorted({entry["node"] for entry in found})
    summary = (f"applied profile {document['preset']!r} ({document['applied_at']}, collection "
               f"{document['collection_version']}, Kubernetes {document['kubernetes_version']}): ")
    summary += f"{len(found)} settings drifted on {', '.join(drifted)}" if found else "every node runs it"
    return {"recorded": True, "preset": document["preset"], "applied_at": document["applied_at"],
            "kubernetes_version": document["kubernetes_version"], "drift": found, "summary": summary}
