# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's known risks: what audit-failover reports beyond the settings themselves.

Each rule reads plain data (the current timeline, Node, Endpoints and Pod objects as the API returns
them, the kubelets' API server URLs) and returns ``{"risk", "severity", "summary", "fix", "message", ...}``
entries: ``summary`` is the one line the report prints, ``fix`` what to change, ``message`` the full story.
docs/audit-failover.md explains every risk and what to do about it.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import DEFAULT_PRESET
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import STOCK as STOCK_PRESET
from ansible_collections.nodeguard.failover.plugins.module_utils.model.table import format_seconds
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import APISERVER
from ansible_collections.nodeguard.failover.plugins.module_utils.model.tolerations import (
    API_SERVER_DEFAULTS,
    NOT_READY,
    UNREACHABLE,
    by_design,
    mismatches,
)

TOLERATION_FLAGS = {NOT_READY: "default-not-ready-toleration-seconds", UNREACHABLE: "default-unreachable-toleration-seconds"}
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# the apiserver's default-unreachable-toleration-seconds when nobody sets it (the same in every version)
STOCK_UNREACHABLE_TOLERATION_SECONDS = API_SERVER_DEFAULTS[UNREACHABLE]
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")
# Severities, lowest first. low: a trade-off a preset makes on purpose; medium: failover slower or less safe than
# the timeline says; high: a failure the cluster cannot fail over from, or settings that contradict each other.
SEVERITIES = ("low", "medium", "high")
# Model warnings that are trade-offs a preset makes knowingly; every other warning is medium.
LOW_WARNINGS = ("tcp-retries-rfc1122",)
# Rule fixes beyond "tune with a preset": what the preset cannot do for you.
RULE_FIXES = {
    "http2-health-check": "give the kubelet the profile's kubelet_environment (kubelet_heartbeat role)",
}


def _minor(text):
    """(major, minor, patch) of a kubelet version such as v1.14.3-eks-1; None when unreadable."""
    match = _VERSION.match(str(text or "").strip())
    return tuple(int(part or 0) for part in match.groups()) if match else None


def unaudited(hosts) -> list:
    hosts = sorted(hosts or [])
    if not hosts:
        return []
    return [{"risk": "nodes-not-audited", "severity": "high", "nodes": hosts,
             "summary": f"not audited (unreachable or failed): {', '.join(hosts)}",
             "fix": "make these hosts reachable (connection, python3, privileges) and audit again",
             "message": "these hosts could not be read (unreachable or failed): their settings are unknown"}]


def kubelet_versions(nodes, fallback_hosts=(), cluster_version="") -> dict:
    """Node name -> kubelet version from Node objects, else every host on the cluster version."""
    found = {n["metadata"]["name"]: n.get("status", {}).get("nodeInfo", {}).get("kubeletVersion", "")
             for n in nodes or [] if isinstance(n, dict) and "metadata" in n}
    return found or {host: cluster_version for host in fallback_hosts}


def kubelet_risks(versions: dict) -> list:
    """Kubelets that keep a dead API connection open after a load balancer or API server failure."""
    found = []
    for node, raw in sorted(versions.items()):
        version = _minor(raw)
        if version is None:
            continue
        if version < (1, 11):
            message = (f"kubelet {raw} predates PR #63492: it keeps a dead connection to a failed load balancer "
                       "and the node goes NotReady until the kernel gives up (tcp_retries2)")
            found.append({"risk": "kubelet-dead-connection", "severity": "high", "node": node, "message": message,
                          "summary": f"{node}: kubelet {raw} keeps a dead API connection open",
                          "fix": "upgrade the kubelet (1.11 or later)"})
        elif (1, 14) <= version < (1, 15):
            message = (f"kubelet {raw}: 1.14 lost the close-connections-on-heartbeat-failure fix when client certificate "
                       "rotation is off (PR #71174); fixed by PR #78016 (1.14 cherry-pick #78281): check the patch release")
            found.append({"risk": "kubelet-dead-connection", "severity": "high", "node": node, "message": message,
                          "summary": f"{node}: kubelet {raw} may keep a dead API connection open",
                          "fix": "upgrade the kubelet (1.14: a patch release with PR #78016)"})
        elif version < (1, 19):
            message = (f"kubelet {raw} has no client-go HTTP/2 health check (PR #95981, 1.20, backport 1.19): "
                       "a silently dead API connection is noticed only by the kernel")
            found.append({"risk": "kubelet-no-http2-health-check", "severity": "medium", "node": node, "message": message,
                          "summary": f"{node}: kubelet {raw} has no HTTP/2 health check",
                          "fix": "upgrade the kubelet (1.19 or later); until then a preset lowers net.ipv4.tcp_retries2"})
    return found


def endpoint_ips(endpoints) -> list:
    """API server addresses from the kubernetes Service's Endpoints objects."""
    ips = []
    for endpoint in endpoints or []:
        for subset in endpoint.get("subsets") or []:
            for address in subset.get("addresses") or []:
                if address.get("ip") and address["ip"] not in ips:
                    ips.append(address["ip"])
    return ips


def endpoint_risks(ips: list, kubelet_servers) -> list:
    """One API server, or every kubelet pointed at one address that is not a load balancer."""
    found = []
    if len(ips) == 1:
        found.append({"risk": "single-apiserver", "severity": "high",
                      "summary": f"one API server ({ips[0]}): the control plane has no failover",
                      "fix": "run three control-plane nodes behind a VIP or load balancer",
                      "message": f"the kubernetes Service has one endpoint ({ips[0]}): one API server, no failover for the control plane"})
    servers = sorted({urlsplit(url).hostname for url in kubelet_servers or [] if url and urlsplit(url).hostname})
    if len(servers) == 1 and servers[0] not in LOOPBACK:
        server = servers[0]
        if server in ips and len(ips) > 1:
            found.append({"risk": "kubelets-on-one-apiserver", "severity": "high",
                          "summary": f"every kubelet talks to the API server {server}, not to a VIP",
                          "fix": "point the kubelets' kubeconfig server at a VIP or load balancer over every API server",
                          "message": f"every kubelet talks to {server}, one of the API servers, not a VIP or load balancer: "
                                     "if that node dies every node goes NotReady"})
        else:
            found.append({"risk": "single-apiserver-address", "severity": "medium",
                          "summary": f"every kubelet talks to one address, {server}",
                          "fix": f"make {server} a highly available VIP or load balancer",
                          "message": f"every kubelet talks to one address, {server}: make sure it is a highly available VIP or "
                                     "load balancer; its failover leaves dead connections that only the HTTP/2 health check "
                                     "or tcp_retries2 ends"})
    return found


def one_address_outage_risks(timeline: dict, kubelet_servers) -> list:
    """Short unreachable tolerations while every kubelet reaches the API through one address.

    If that address stops forwarding, every node goes NotReady at once. The controller-manager's full
    disruption mode stops taint-based evictions, but an unreachable taint it adds in the moment it enters
    that mode can stay until the node is Ready again; with a short toleration its pods are deleted (seen on
    the lab's load-balancer drill: docs/benchmarks/lb-drill.md). The stock 300 s outlasts such an outage.
    """
    servers = sorted({urlsplit(url).hostname for url in kubelet_servers or [] if url and urlsplit(url).hostname})
    seconds = _cluster_default_seconds(timeline)[UNREACHABLE]
    if len(servers) != 1 or servers[0] in LOOPBACK or seconds >= STOCK_UNREACHABLE_TOLERATION_SECONDS:
        return []
    return [{"risk": "short-tolerations-one-address", "severity": "medium",
             "summary": f"pods tolerate unreachable for {seconds} s, every kubelet uses {servers[0]}",
             "fix": f"make {servers[0]} redundant, or preset {STOCK_PRESET} ({STOCK_UNREACHABLE_TOLERATION_SECONDS} s) "
                    "and the power-event path",
             "message": f"every kubelet talks to {servers[0]} and pods tolerate unreachable for {seconds} s: if that address "
                        "stops forwarding for longer, pods can be deleted although no node died (the controller-manager's "
                        "full disruption mode does not always lift the first node's taint). Make the address redundant, or "
                        f"keep the stock {STOCK_UNREACHABLE_TOLERATION_SECONDS} s and fail powered-off nodes over with the "
                        "power-event path"}]


def _cluster_default_seconds(timeline: dict) -> dict:
    """The default tolerations the API server adds, from the audited timeline's settings (explicit values)."""
    apiserver = (timeline.get("settings") or {}).get(APISERVER) or {}
    return {key: int(apiserver[flag]) for key, flag in TOLERATION_FLAGS.items()}


def toleration_risks(pods, timeline: dict, max_examples: int = 20) -> list:
    """Pods that tolerate not-ready/unreachable for other than the cluster's default seconds, or without limit.

    DaemonSet pods tolerate without limit by design and mirror pods are never evicted: neither is a finding.
    """
    defaults = _cluster_default_seconds(timeline)
    overridden = []
    for pod in pods or []:
        if by_design(pod):
            continue
        metadata = pod.get("metadata") or {}
        overridden += [{"pod": f"{metadata.get('namespace')}/{metadata.get('name')}", **entry}
                       for entry in mismatches(pod.get("spec") or {}, defaults)]
    if not overridden:
        return []
    pods_count = len({entry["pod"] for entry in overridden})
    return [{"risk": "tolerations-overridden", "severity": "medium", "examples": overridden[:max_examples],
             "summary": f"{pods_count} pods tolerate not-ready/unreachable other than the cluster default",
             "fix": "recreate them (kubectl rollout restart) or fix their tolerations (names in the JSON report)",
             "message": f"{pods_count} pods tolerate not-ready/unreachable for other than the default seconds or without "
                        "limit; they leave a dead node later (or never). Pods created before a change of the defaults keep "
                        "the old value until they are recreated."}]


def _first_clause(message: str, limit: int = 60) -> str:
    """The start of a rule's message, for one screen line: up to its first ':', ';' or ', or', at most ``limit``."""
    cut = min([index for index in (message.find(sep) for sep in (": ", "; ", ", or ")) if index > 0] + [len(message)])
    text = message[:cut]
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def _expected(timeline: dict, event: str) -> str:
    window = (timeline.get("timeline") or {}).get(event)
    return format_seconds(window.get("expected")) if isinstance(window, dict) else "never"


def kubernetes_defaults_risks(timeline: dict, preset: str = DEFAULT_PRESET) -> list:
    """Kubernetes' own defaults, by their effect: what a dead node costs on them (not "settings that contradict").

    Reported when the settings break a rule exactly as the version's defaults do (``upstream_default``)."""
    upstream = [v for v in timeline.get("violations") or [] if v.get("upstream_default")]
    if not upstream:
        return []
    replaced, statefulset = _expected(timeline, "deployment_replaced"), _expected(timeline, "statefulset_replaced")
    rules_broken = "; ".join(f"{v['rule']}: {v['message']}" for v in upstream)
    return [{"risk": "kubernetes-defaults", "severity": "medium",
             "summary": f"pods leave a dead node after {replaced}; StatefulSet RWO pods never move without remediation",
             "fix": f"tune-failover -e failover_preset={preset}; StatefulSets: node_outage.yml (docs/runbooks/node-outage.md)",
             "message": f"the cluster runs Kubernetes' defaults: a dead node is NotReady after {_expected(timeline, 'not_ready')} "
                        f"and its Deployment pods are replaced after {replaced}; StatefulSet pods with ReadWriteOnce "
                        f"volumes never move without remediation (node_outage.yml replaces them after {statefulset}). "
                        f"The defaults also break the model's rules ({rules_broken}): upstream's choice, not settings "
                        "of this cluster that contradict each other"}]


def rule_risks(timeline: dict, preset: str = DEFAULT_PRESET) -> list:
    """The model's broken rules and warnings for the settings the cluster runs; the fix names ``preset``.

    Rules broken exactly as Kubernetes' defaults break them are reported by kubernetes_defaults_risks instead."""
    retune = f"tune-failover -e failover_preset={preset}"
    found = kubernetes_defaults_risks(timeline, preset)
    found += [{"risk": "inconsistent-settings", "rule": v["rule"], "severity": "high", "message": v["message"],
               "summary": f"{v['rule']}: {_first_clause(v['message'])}", "fix": RULE_FIXES.get(v["rule"], retune)}
              for v in timeline.get("violations") or [] if not v.get("upstream_default")]
    found += [{"risk": "model-warning", "rule": w["rule"], "message": w["message"],
               "severity": "low" if w["rule"] in LOW_WARNINGS else "medium",
               "summary": f"{w['rule']}: {_first_clause(w['message'])}",
               "fix": RULE_FIXES.get(w["rule"], "none if chosen: a preset's trade-off (docs/settings.md)")}
              for w in timeline.get("warnings") or []]
    return found


def override_risks(node_infos) -> list:
    """Kubelet flags that override the config file tune-failover writes (failover_node_info ``overrides``).

    One finding per flag, value and file; the hosts that share it on one line."""
    grouped = {}
    for host, info in sorted((node_infos or {}).items()):
        for entry in (info or {}).get("overrides") or []:
            key = (entry["flag"], str(entry["value"]), entry["source"].rsplit(":", 1)[0] if ":" in entry["source"]
                   else entry["source"], entry["setting"])
            grouped.setdefault(key, []).append((host, entry["source"]))
    found = []
    for (flag, value, path, setting), where in grouped.items():
        hosts = [host for host, _source in where]
        shown = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
        source = where[0][1]
        found.append({"risk": "kubelet-flag-override", "severity": "medium", "nodes": hosts, "flag": flag,
                      "value": value, "setting": setting, "source": source,
                      "summary": f"{flag}={value} ({source}) overrides the kubelet config file on {shown}",
                      "fix": f"remove {flag} from {path} and restart the kubelet; tune-failover then sets {setting}",
                      "message": f"the kubelet on {', '.join(hosts)} runs with {flag}={value}, set in {source}: a "
                                 f"command-line flag wins over the kubelet config file, so the {setting} tune-failover "
                                 "writes there does not apply"})
    return found


def audit_risks(timeline: dict, unaudited_hosts=(), nodes=(), node_hosts=(), endpoints=(), kubelet_servers=(),
                pods=(), max_examples: int = 20, preset: str = DEFAULT_PRESET, node_infos=None) -> list:
    """Every known risk, in report order: unaudited hosts, kubelets, API server endpoints, tolerations, overrides, rules.

    ``preset`` is the one a fix for broken rules names: the applied one when tune-failover recorded it.
    ``node_infos`` maps each audited host to what failover_node_info read (its ``overrides``)."""
    versions = kubelet_versions(nodes, node_hosts, timeline.get("kubernetes_version", ""))
    return (unaudited(unaudited_hosts) + kubelet_risks(versions)
            + endpoint_risks(endpoint_ips(endpoints), kubelet_servers) + one_address_outage_risks(timeline, kubelet_servers)
            + toleration_risks(pods, timeline, max_examples) + override_risks(node_infos) + rule_risks(timeline, preset))
