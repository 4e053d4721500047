# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit report: every finding (risk, drift, disagreement) with its severity and fix, highest first.

``build`` returns what audit-failover shows and writes: the screen (a few lines: the findings, then the
before/after timeline), the full report as JSON, its Markdown rendering, the file paths, and the gate that
fails the run when a finding is at or above ``audit_fail_on``. The role only wires these into tasks.
"""

from __future__ import annotations

import json
import os

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import DEFAULT_PRESET
from ansible_collections.nodeguard.failover.plugins.module_utils.model.risks import SEVERITIES
from ansible_collections.nodeguard.failover.plugins.module_utils.model.table import LABELS, format_seconds, timeline_table
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timeline import EVENTS
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import APISERVER, CONTROLLER_MANAGER, CONTROLLER_MANAGER_GATES

NO_GATE = "none"
FAIL_ON_CHOICES = (NO_GATE, *SEVERITIES)
# Within one severity: risks first (their rules' order), then drift, then disagreements.
KINDS = ("risk", "drift", "disagreement")
# Hosts named on one screen line; the rest are counted (the JSON report names them all).
HOSTS_SHOWN = 3
# Sections only control-plane hosts carry: compared across control-plane hosts only (kubelet and sysctl across all nodes).
CONTROL_PLANE_SECTIONS = (CONTROLLER_MANAGER, CONTROLLER_MANAGER_GATES, APISERVER)
# What a host that does not set a setting shows in a disagreement.
UNSET = "(default)"


def _hosts(hosts) -> str:
    hosts = list(hosts)
    shown = ", ".join(hosts[:HOSTS_SHOWN])
    return f"{shown} and {len(hosts) - HOSTS_SHOWN} more" if len(hosts) > HOSTS_SHOWN else shown


def _retune(applied) -> str:
    """The tune-failover run that puts the recorded profile back (the default preset when none was recorded)."""
    preset = (applied or {}).get("preset") if (applied or {}).get("recorded") else None
    return f"tune-failover -e failover_preset={preset or DEFAULT_PRESET}"


def _flat(settings) -> dict:
    """One level: "section name" -> the value as text, for comparing hosts."""
    return {f"{section} {name}": str(value) for section, values in (settings or {}).items() if isinstance(values, dict)
            for name, value in values.items()}


def disagreements(nodes: dict, node_hosts) -> list:
    """Settings whose value differs across hosts: ``[{setting, values: {host: value}}]``, sorted by setting.

    ``nodes`` maps each audited host to ``{role, settings}`` (failover_node_info); ``node_hosts`` are the cluster's
    nodes (control_plane and workers). Control-plane sections are compared across the hosts whose role is
    control_plane, the rest across ``node_hosts``; a host that does not set a setting shows ``(default)``.
    """
    flats = {host: _flat((node or {}).get("settings")) for host, node in (nodes or {}).items()}
    control_plane = [host for host, node in (nodes or {}).items() if (node or {}).get("role") == "control_plane"]
    found = []
    for setting in sorted({key for flat in flats.values() for key in flat}):
        hosts = control_plane if setting.split(" ")[0] in CONTROL_PLANE_SECTIONS else list(node_hosts or [])
        values = [flats.get(host, {}).get(setting) or UNSET for host in hosts]
        if len(set(values)) > 1:
            found.append({"setting": setting, "values": dict(zip(hosts, values))})
    return found


def drift_findings(applied) -> list:
    """One finding per drifted setting and value pair; the nodes that share it on one line."""
    grouped = {}
    for entry in (applied or {}).get("drift") or []:
        key = (entry["setting"], str(entry["applied"]), str(entry["live"]))
        grouped.setdefault(key, []).append(entry["node"])
    return [{"kind": "drift", "name": "drift", "severity": "medium", "setting": setting, "applied": wanted,
             "live": live, "nodes": nodes,
             "summary": f"{setting} is {live} on {_hosts(nodes)}, the applied profile says {wanted}",
             "fix": _retune(applied),
             "message": f"{setting} on {', '.join(nodes)} runs {live}, not the applied profile's {wanted}: a node changed "
                        "or re-installed after tune-failover; its failover follows the live value"}
            for (setting, wanted, live), nodes in grouped.items()]


def disagreement_findings(disagreements, applied) -> list:
    """One finding per setting whose value differs across nodes."""
    found = []
    for entry in disagreements or []:
        by_value = {}
        for host, value in (entry.get("values") or {}).items():
            by_value.setdefault(str(value), []).append(host)
        values = "; ".join(f"{value} on {_hosts(hosts)}" for value, hosts in by_value.items())
        found.append({"kind": "disagreement", "name": "disagreement", "severity": "medium",
                      "setting": entry["setting"], "values": entry.get("values") or {},
                      "summary": f"{entry['setting']} differs: {values}",
                      "fix": f"{_retune(applied)} (every node gets one value)",
                      "message": f"{entry['setting']} is not the same on every node ({values}): the failover of a node "
                                 "follows its own value, not the timeline's"})
    return found


def findings(risks, applied=None, disagreements=()) -> list:
    """Every finding, highest severity first; within a severity risks, drift, disagreements, in their order."""
    found = [dict(risk, kind="risk", name=risk["risk"]) for risk in risks or []]
    found += drift_findings(applied) + disagreement_findings(disagreements, applied)
    for finding in found:
        if finding["severity"] not in SEVERITIES:
            raise ProfileError("unknown-severity", f"finding {finding['name']} has severity {finding['severity']!r}, "
                                                   f"not one of {', '.join(SEVERITIES)}")
    return sorted(found, key=lambda f: (-SEVERITIES.index(f["severity"]), KINDS.index(f["kind"])))


def waive(found: list, ignore) -> tuple:
    """(findings kept, waivers): ``ignore`` is audit_ignore, a list of ``{rule, reason}``; a finding whose name (or
    model rule) is a waiver's rule is kept out of the findings and the gate, and listed under its waiver.

    A waiver without a rule or a reason is refused: a waiver is a decision someone can be asked about."""
    if ignore in (None, ""):
        ignore = []
    if not isinstance(ignore, list):
        raise ProfileError("audit-ignore", f"audit_ignore must be a list of {{rule, reason}}, got {ignore!r}")
    waivers = []
    for entry in ignore:
        rule = str((entry or {}).get("rule") or "").strip() if isinstance(entry, dict) else ""
        reason = str((entry or {}).get("reason") or "").strip() if isinstance(entry, dict) else ""
        if not rule or not reason:
            raise ProfileError("audit-ignore", f"audit_ignore entry {entry!r} needs a rule and a reason "
                                               "(e.g. {rule: single-apiserver, reason: one control-plane node by design})")
        waivers.append({"rule": rule, "reason": reason, "findings": []})
    kept = []
    for finding in found:
        match = next((w for w in waivers if w["rule"] in (finding["name"], finding.get("rule"))), None)
        if match is None:
            kept.append(finding)
        else:
            match["findings"].append(f"{finding['severity']} {finding['name']}: {finding['summary']}")
    return kept, waivers


def gate(found: list, fail_on: str) -> dict:
    """Which findings fail the run: those at or above ``fail_on`` (none: never)."""
    fail_on = str(fail_on or NO_GATE).strip().lower()
    if fail_on not in FAIL_ON_CHOICES:
        raise ProfileError("unknown-severity", f"audit_fail_on={fail_on!r}: choose one of {', '.join(FAIL_ON_CHOICES)}")
    failing = [] if fail_on == NO_GATE else [
        f for f in found if SEVERITIES.index(f["severity"]) >= SEVERITIES.index(fail_on)]
    message = (f"audit_fail_on={fail_on}: {len(failing)} findings at or above {fail_on}: "
               + "; ".join(f"{f['severity']} {f['name']} ({f['summary']})" for f in failing)) if failing else ""
    return {"fail_on": fail_on, "passed": not failing, "failing": [f["name"] for f in failing], "message": message}


def paths(path: str, generated_at: str) -> dict:
    """Where the JSON report and its Markdown go: ``path``, else failover-audit-<UTC time>.json here."""
    stamp = "".join(ch for ch in str(generated_at) if ch.isalnum()) or "report"
    json_path = os.path.abspath(os.path.expanduser(str(path or "").strip() or f"failover-audit-{stamp}.json"))
    stem = json_path[:-len(".json")] if json_path.endswith(".json") else json_path
    return {"json": json_path, "markdown": stem + ".md"}


def _count(found: list) -> str:
    counts = [f"{sum(f['severity'] == s for f in found)} {s}" for s in reversed(SEVERITIES)]
    return ", ".join(counts)


def compact_timeline(stock: dict, current: dict) -> list:
    """The timeline on screen: the expected seconds of each event, Kubernetes defaults next to the cluster.

    Narrow enough (under 72 characters) that Ansible's YAML output does not wrap it; the ranges are in the files.
    """

    def expected(profile, event):
        window = (profile.get("timeline") or {}).get(event)
        return format_seconds(window.get("expected")) if isinstance(window, dict) else "never"

    rows = [("seconds after power-off", "k8s default", "this cluster")]
    rows += [(LABELS[event], expected(stock, event), expected(current, event)) for event in EVENTS]
    nodes = (current.get("load") or {}).get("node_count")
    writes = [(profile.get("load") or {}).get("writes_per_second") for profile in (stock, current)]
    rows.append((f"heartbeat writes ({nodes} nodes)", *("-" if w is None else f"{w:.1f}/s" for w in writes)))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def screen(report: dict) -> list:
    """The lines audit-failover prints: what was audited, one line per finding, the timeline, the files."""
    found = report["findings"]
    width = max([len(s) for s in SEVERITIES])
    lines = [f"failover audit of {report['distribution']} {report['kubernetes_version']}, {report['node_count']} nodes: "
             f"{report['applied_profile']}",
             f"findings: {_count(found)} (audit_fail_on={report['gate']['fail_on']})"]
    lines += [f"{f['severity'].upper():<{width}}  {f['name']}: {f['summary']} -> fix: {f['fix']}" for f in found]
    lines += [f"waived: {w['rule']}: {w['reason']}" + ("" if w["findings"] else " (matched no finding)")
              for w in report["waived"]]
    lines += report["timeline_compact"]
    lines.append(f"full report: {report['files']['json']} (Markdown: {report['files']['markdown']})")
    return lines


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(report: dict) -> str:
    """The report as a Markdown page: findings table, details, timeline, drift and disagreements."""
    out = [f"# Failover audit: {report['distribution']} {report['kubernetes_version']}, {report['node_count']} nodes", "",
           f"Generated {report['generated_at']} by nodeguard.failover audit_failover. {report['applied_profile']}.", "",
           f"Findings: {_count(report['findings'])}. Gate: audit_fail_on={report['gate']['fail_on']}"
           + (f", failed: {report['gate']['message']}" if not report["gate"]["passed"] else ", passed") + ".", "",
           "## Findings", ""]
    if report["findings"]:
        out += ["| severity | finding | what | fix |", "|---|---|---|---|"]
        out += [f"| {f['severity']} | {_cell(f['name'])} | {_cell(f['summary'])} | {_cell(f['fix'])} |"
                for f in report["findings"]]
        out.append("")
        for f in report["findings"]:
            out += [f"### {f['name']} ({f['severity']})", "", _cell(f["message"]), ""]
            for example in f.get("examples") or []:
                out.append(f"- `{example['pod']}`: {example['key']} {example['seconds']} (default {example['default']})")
            if f.get("examples"):
                out.append("")
    else:
        out += ["None.", ""]
    if report["waived"]:
        out += ["## Waived (audit_ignore)", "", "| rule | reason | findings |", "|---|---|---|"]
        out += [f"| {_cell(w['rule'])} | {_cell(w['reason'])} | {_cell('; '.join(w['findings']) or 'none')} |"
                for w in report["waived"]]
        out.append("")
    out += ["## Timeline", "", "```text", *report["timeline_table"], "```", ""]
    out += ["Full data (settings per node, drift, disagreements, timelines): "
            f"`{os.path.basename(report['files']['json'])}`.", ""]
    return "\n".join(out)


def build(current: dict, stock: dict, facts: dict, risks, applied=None, disagreements=(), nodes=None,
          generated_at: str = "", fail_on: str = NO_GATE, path: str = "", ignore=None) -> dict:
    """The whole report and its renderings.

    ``current`` is the cluster's audit timeline and ``stock`` the same version's Kubernetes defaults (both from
    failover_timeline); ``applied`` is failover_profile_drift's answer, or None when the API was not read; ``nodes``
    maps each audited host to what failover_node_info read (its ``settings`` go into the report); ``ignore`` is
    audit_ignore (``waive``).
    """
    found, waived = waive(findings(risks, applied, disagreements), ignore)
    stock = dict(stock, preset="kubernetes-default")
    report = {
        "generated_at": str(generated_at),
        "distribution": facts.get("distribution"),
        "kubernetes_version": facts.get("kubernetes_version"),
        "node_count": facts.get("node_count"),
        "applied_profile": (applied or {}).get("summary") or "applied profile not read (the API was not used)",
        "gate": gate(found, fail_on),
        "files": paths(path, generated_at),
        "findings": found,
        "waived": waived,
        "timeline_table": timeline_table(stock, current).splitlines(),
        "timeline_compact": compact_timeline(stock, current),
        "timeline": current,
        "kubernetes_default_timeline": stock,
        "applied": applied,
        "disagreements": list(disagreements or []),
        "settings_per_node": {host: (node or {}).get("settings") or {} for host, node in (nodes or {}).items()},
    }
    return {"report": report, "screen": screen(report), "json": json.dumps(report, indent=2) + "\n",
            "markdown": markdown(report), "files": report["files"], "gate": report["gate"]}
