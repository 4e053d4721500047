"""Regenerate the tables in docs/settings.md from the model, so the docs cannot drift from the code.

Usage: .venv/bin/python docs/tools/render_settings_tables.py [--check]
Each table sits between "<!-- generated:NAME -->" and "<!-- end:NAME -->"; --check exits 1 when
the file is out of date instead of rewriting it (tests/unit/model/test_model_docs.py runs it).
"""

from __future__ import annotations

import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "settings.md")
sys.path.insert(0, os.path.join(REPO, ".build", "collections"))

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError  # noqa: E402
from ansible_collections.nodeguard.failover.plugins.module_utils.model import versions  # noqa: E402
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import PRESET_NAMES  # noqa: E402
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import (  # noqa: E402
    audit_timeline,
    build_profile,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.table import format_seconds  # noqa: E402

DOC_VERSION = "1.35.4"
SEED_001 = {
    "kubelet": {"nodeStatusUpdateFrequency": "1s"},
    "kube_controller_manager": {"node-monitor-period": "1s", "node-monitor-grace-period": "4s"},
}


def _table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _profiles(nodes: int) -> list:
    facts = {"kubernetes_version": DOC_VERSION, "node_count": nodes}
    profiles = []
    for name in PRESET_NAMES:
        try:
            profiles.append((name, build_profile(facts, name)))
        except ProfileError as error:
            profiles.append((name, error))
    profiles.append(("seed-001 (reference)", audit_timeline(SEED_001, facts)))
    return profiles


def _window(window) -> str:
    if window.get("expected") is None:
        return "never"
    return f"{format_seconds(window['expected'])} ({format_seconds(window['min'])}-{format_seconds(window['max'])})"


def presets_settings() -> str:
    facts = {"kubernetes_version": DOC_VERSION, "node_count": 10}
    rows = []
    for name in PRESET_NAMES:
        profile = build_profile(facts, name)
        settings = profile["settings"]
        kcm = audit_timeline(settings, facts)["settings"]["kube_controller_manager"]
        api = audit_timeline(settings, facts)["settings"]["kube_apiserver"]
        kubelet = settings["kubelet"]
        sysctl = settings["sysctl"]
        rows.append((
            f"`{name}`",
            kubelet["nodeStatusUpdateFrequency"], kubelet["nodeStatusReportFrequency"],
            kubelet["nodeLeaseDurationSeconds"],
            kcm["node-monitor-period"], kcm["node-monitor-grace-period"],
            api["default-unreachable-toleration-seconds"],
            sysctl["net.ipv4.tcp_retries2"],
            "/".join(sysctl[f"net.ipv4.tcp_keepalive_{key}"] for key in ("time", "intvl", "probes")),
        ))
    header = ("preset", "nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "nodeLeaseDurationSeconds",
              "node-monitor-period", "node-monitor-grace-period", "tolerations (s)", "tcp_retries2",
              "keepalive time/intvl/probes")
    return _table(header, rows)


def presets_timeline() -> str:
    events = ("not_ready", "endpoint_removed", "taint_eviction", "deployment_replaced", "force_detach",
              "statefulset_replaced", "dead_tcp_in_flight", "dead_tcp_idle")
    rows = []
    for name, profile in _profiles(100):
        rows.append((f"`{name}`", *(_window(profile["timeline"][event]) for event in events)))
    return _table(("profile", *events), rows)


def presets_load() -> str:
    rows = []
    seed = {nodes: dict(_profiles(nodes))["seed-001 (reference)"]["load"] for nodes in (100, 1000)}
    for nodes in (100, 1000):
        for name, profile in _profiles(nodes):
            if isinstance(profile, ProfileError):
                rows.append((nodes, f"`{name}`", "refused", "", "", "", f"`{profile.rule}`"))
                continue
            load = profile["load"]
            share = load["bytes_per_second"] / seed[nodes]["bytes_per_second"]
            rules = ", ".join(f"`{v['rule']}`" for v in profile["violations"]) or "none"
            rows.append((nodes, f"`{name}`", f"{load['lease_writes_per_second']:.1f}",
                         f"{load['node_status_writes_per_second']:.1f}", f"{load['writes_per_second']:.1f}",
                         f"{load['bytes_per_second'] / 1e6:.2f} MB/s ({share:.0%} of seed-001)", rules))
    return _table(("nodes", "profile", "Lease writes/s", "Node status writes/s", "writes/s", "bytes/s", "rules broken"),
                  rows)


def version_table() -> str:
    rows = []
    for minor in range(versions.OLDEST_SUPPORTED[1], versions.NEWEST_SUPPORTED[1] + 1):
        facts = versions.version_facts(versions.parse_version(f"1.{minor}.0"))
        rows.append((
            f"1.{minor}",
            "yes" if facts["pod_eviction_timeout_flag"] else "no (removed)",
            facts["taint_based_evictions_gate"],
            f"{facts['out_of_service_gate']} ({facts['out_of_service_support']})",
            "yes" if facts["disable_force_detach_on_timeout_flag"] else "no",
            f"{facts['default_node_monitor_grace_period']:g}s",
            f"{facts['kubeadm_api_version'].split('/')[1]} ({facts['kubeadm_extra_args_style']})",
            "yes" if facts["pod_safe_keepalive_sysctls"] else "no (init container)",
        ))
    header = ("version", "--pod-eviction-timeout", "TaintBasedEvictions gate",
              "NodeOutOfServiceVolumeDetach gate (out-of-service taint)", "--disable-force-detach-on-timeout",
              "default grace", "kubeadm API (extraArgs)", "pod keepalive sysctls")
    return _table(header, rows)


GENERATORS = {
    "presets-settings": presets_settings,
    "presets-timeline": presets_timeline,
    "presets-load": presets_load,
    "versions": version_table,
}


def render(text: str) -> str:
    for name, generate in GENERATORS.items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n)(?:.*?\n)?(<!-- end:{name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"docs/settings.md lacks the markers for {name}")
        body = generate()
        text = pattern.sub(lambda match, body=body: match.group(1) + body + "\n" + match.group(2), text)
    return text


def main(argv) -> int:
    with open(DOC, encoding="utf-8") as handle:
        current = handle.read()
    wanted = render(current)
    if "--check" in argv:
        if wanted != current:
            print("docs/settings.md is out of date: run .venv/bin/python docs/tools/render_settings_tables.py")
            return 1
        return 0
    if wanted != current:
        with open(DOC, "w", encoding="utf-8") as handle:
            handle.write(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
