"""The node-outage and node-recover playbooks refuse, before anything reaches a module, node names that are
not Kubernetes names and nodes whose only power source would be a shared per-host BMC (no cluster needed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SHARED_BMC = {"type": "redfish", "address": "https://spare-bmc.example", "username": "u", "password": "pw-not-shown-9"}


def run(playbook: str, extra: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(REPO / "playbooks" / playbook),
         "-e", json.dumps(extra)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300, check=False,
    )


@pytest.mark.parametrize("playbook", ["node_outage.yml", "node_recover.yml"])
def test_a_name_that_is_not_a_kubernetes_name_is_refused(playbook: str) -> None:
    result = run(playbook, {"outage_nodes": ["ng-w1", "NG_Worker2"]})
    assert result.returncode != 0
    assert "refused: 'NG_Worker2' is not a Kubernetes node name (DNS-1123 subdomain" in result.stdout + result.stderr


@pytest.mark.parametrize("playbook, prefix", [("node_outage.yml", "node_outage"), ("node_recover.yml", "node_recover")])
def test_a_node_without_its_own_mapping_does_not_get_a_shared_bmc(playbook: str, prefix: str) -> None:
    result = run(playbook, {"outage_nodes": "ng-new-node", f"{prefix}_power_default": SHARED_BMC,
                            f"{prefix}_power_by_node": {"ng-w1": SHARED_BMC}})
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "refused: no power mapping of its own for ng-new-node; a shared default is only allowed for power types that name the node" in output
    assert "pw-not-shown-9" not in output
