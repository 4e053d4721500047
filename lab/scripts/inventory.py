"""Write the lab's Ansible inventory (lab/.state/inventory.yml), as fixed in docs/lab.md.

usage: inventory.py --state lab/.state --control-plane ng-cp1 --workers ng-worker1 ng-worker2 ...

BMC endpoints come from lab/.state/bmc/endpoints.json when the BMC emulator wrote it:
{"<node>": {"type": "redfish", "address": ..., ...}} or {"<node>": {"bmc": {...}, "bmc_ipmi": {...}}}.
Nodes without an entry get no `bmc` variable.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

NODE_VARS = {
    "ansible_connection": "containers.podman.podman",
    "ansible_python_interpreter": "/usr/bin/python3",
}


def bmc_vars(state: Path) -> dict[str, dict]:
    path = state / "bmc" / "endpoints.json"
    if not path.exists():
        return {}
    per_node = {}
    for node, entry in json.loads(path.read_text()).items():
        if "type" in entry:
            per_node[node] = {"bmc": entry}
        else:
            per_node[node] = {key: entry[key] for key in ("bmc", "bmc_ipmi") if key in entry}
    return per_node


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--control-plane", nargs="+", required=True)
    parser.add_argument("--workers", nargs="*", default=[])
    parser.add_argument("--kubernetes-version", default="1.37.2")
    args = parser.parse_args()
    state = args.state.resolve()
    bmcs = bmc_vars(state)

    def hosts(names: list[str]) -> dict:
        return {name: bmcs.get(name) or None for name in names}

    inventory = {
        "all": {
            "vars": {
                "failover_distribution": "kubeadm",
                "kubernetes_version": args.kubernetes_version,
                "k8s_kubeconfig": str(state / "admin.kubeconfig"),
                "failover_lab": True,
            },
            "children": {
                "control_plane": {"hosts": hosts(args.control_plane), "vars": dict(NODE_VARS)},
                "workers": {"hosts": hosts(args.workers), "vars": dict(NODE_VARS)},
            },
        }
    }
    target = state / "inventory.yml"
    header = "# Written by lab/scripts/lab.sh up; regenerated on every run. Holds lab test credentials.\n"
    target.write_text(header + yaml.safe_dump(inventory, sort_keys=False, default_flow_style=False))
    # BMC passwords are in here: readable by the owner only.
    target.chmod(0o600)


if __name__ == "__main__":
    main()
