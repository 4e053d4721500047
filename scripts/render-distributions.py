"""Write the distribution lists that cannot import the registry from it (plugins/module_utils/distributions.py).

Usage: .venv/bin/python scripts/render-distributions.py [--check]
Rewrites the `choices:` line of each option in TARGETS (role argument_specs, module DOCUMENTATION) and the table
between "<!-- generated:distributions -->" and "<!-- end:distributions -->" in docs/distributions.md; every
other byte stays. --check rewrites nothing and exits 1 naming what is out of date
(tests/unit/model/test_distribution_lists.py runs it). Run scripts/render-docs.sh afterwards: docs/modules
renders the choices too.
"""

from __future__ import annotations

import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, ".build", "collections"))

from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import (  # noqa: E402
    DISTRIBUTIONS,
    NAMES,
    RANCHER,
)

AUTO = ("auto", *NAMES)
# (file, option, choices): every option that takes a distribution name and is not Python.
TARGETS = (
    ("roles/control_plane_flags/meta/argument_specs.yml", "control_plane_flags_distribution", NAMES),
    ("roles/kubelet_heartbeat/meta/argument_specs.yml", "kubelet_heartbeat_distribution", NAMES),
    ("roles/failover_audit/meta/argument_specs.yml", "failover_audit_distribution", AUTO),
    ("roles/failover_profile/meta/argument_specs.yml", "failover_profile_distribution", AUTO),
    ("plugins/modules/failover_node_info.py", "distribution", AUTO),
    ("plugins/modules/rancher_config.py", "distribution", RANCHER),
)
DOC = "docs/distributions.md"
TABLE_START, TABLE_END = "<!-- generated:distributions -->", "<!-- end:distributions -->"


def with_choices(text: str, option: str, choices, where: str) -> str:
    """text with the `choices: [...]` line of `option` (the first key of that name) set to choices."""
    lines = text.split("\n")
    key = re.compile(rf"^(\s*){re.escape(option)}:\s*$")
    start = next((i for i, line in enumerate(lines) if key.match(line)), None)
    if start is None:
        raise SystemExit(f"render-distributions: {where} has no option {option}")
    indent = len(key.match(lines[start]).group(1))
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        found = re.match(r"^(\s*)choices:\s*\[[^\]]*\]\s*$", line)
        if found:
            lines[i] = f"{found.group(1)}choices: [{', '.join(choices)}]"
            return "\n".join(lines)
    raise SystemExit(f"render-distributions: option {option} in {where} has no one-line `choices: [...]`")


def _cell(values) -> str:
    values = [value for value in values if value]
    return ", ".join(f"`{value}`" for value in values) if values else "—"


def table() -> str:
    """The registry as a Markdown table, one column per distribution."""
    entries = list(DISTRIBUTIONS.values())
    rows = [
        ("detected by", [_cell(d.markers) for d in entries]),
        ("flags stored as (`config_format`)", [f"`{d.config_format}`" for d in entries]),
        ("flag files", [_cell([d.manifests_dir, d.config_dir]) if d.manifests_dir or d.config_dir
                        else "`cluster.yml` on the config host" for d in entries]),
        ("kubelet config file / drop-in directory", [_cell([d.kubelet_config, d.kubelet_dropin_dir]) for d in entries]),
        ("kubelet service (server / agent)", [
            _cell([d.server_service]) if d.server_service == d.agent_service
            else f"{_cell([d.server_service])} / {_cell([d.agent_service])}" for d in entries]),
        ("kubelet kubeconfig", [_cell([d.kubelet_kubeconfig]) for d in entries]),
        ("API server CA", [_cell([d.apiserver_ca]) for d in entries]),
        ("only servers have", [_cell([d.server_marker]) for d in entries]),
        ("kubelet log besides its unit's journal", [_cell([d.kubelet_log_file]) for d in entries]),
    ]
    lines = ["| | " + " | ".join(d.name for d in entries) + " |", "|" + "---|" * (len(entries) + 1)]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows]
    return "\n".join(lines)


def with_table(text: str) -> str:
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 or end < start:
        raise SystemExit(f"render-distributions: {DOC} has no {TABLE_START} ... {TABLE_END}")
    return text[: start + len(TABLE_START)] + "\n" + table() + "\n" + text[end:]


def rendered() -> dict:
    """{path: [current text, text rendered from the registry]} for every file this script writes."""
    files = {}

    def texts(path):
        if path not in files:
            with open(os.path.join(REPO, path), encoding="utf-8") as handle:
                current = handle.read()
            files[path] = [current, current]
        return files[path]

    for path, option, choices in TARGETS:
        texts(path)[1] = with_choices(texts(path)[1], option, choices, path)
    texts(DOC)[1] = with_table(texts(DOC)[1])
    return files


def main(argv) -> int:
    stale = [path for path, (current, wanted) in rendered().items() if current != wanted]
    if "--check" in argv:
        for path in stale:
            print(f"{path} disagrees with plugins/module_utils/distributions.py: run "
                  ".venv/bin/python scripts/render-distributions.py", file=sys.stderr)
        return 1 if stale else 0
    for path, (current, wanted) in rendered().items():
        if current != wanted:
            with open(os.path.join(REPO, path), "w", encoding="utf-8") as handle:
                handle.write(wanted)
            print(f"render-distributions: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
