"""The Molecule scenario molecule/lab-incident on the lab: node-outage and node-recover as Molecule runs them.

The scenario powers a worker off through its BMC, runs node_outage.yml, verifies the taint and the db
StatefulSet Ready elsewhere, powers the node on, runs node_recover.yml and checks the taint is gone;
its cleanup step restores the node even when a step fails. scripts/molecule-all.sh skips it (marker
molecule/lab-incident/requires-lab) because it needs this lab.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
NAMESPACE = "failover-lab"
OOS = "node.kubernetes.io/out-of-service"


def test_molecule_lab_incident_scenario(lab):
    lab.reset_lab()
    db_nodes = {p.spec.node_name for p in lab.core().list_namespaced_pod(NAMESPACE, label_selector="app=db").items}
    # The last worker with a db pod: test_incident_lab.py takes the first one.
    candidates = [n for n in lab.worker_names() if n in db_nodes]
    assert candidates, "no worker runs a db pod; is the lab's StatefulSet up?"
    node = candidates[-1]
    env = dict(
        os.environ,
        PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_FORCE_COLOR="0",
        PY_COLORS="0",
        LAB_INCIDENT_NODE=node,
    )
    started = time.monotonic()
    try:
        result = subprocess.run([str(REPO / ".venv" / "bin" / "molecule"), "test", "-s", "lab-incident"], cwd=REPO,
                                env=env, capture_output=True, text=True, timeout=1200, check=False)
    finally:
        lab.reset_lab()
    output = result.stdout + result.stderr
    assert result.returncode == 0, lab.playbook_failure(output, 5000)
    # Both playbooks ran inside the scenario (not only the scenario's own checks).
    assert "PLAY [Fail over dead nodes, proven powered off]" in output
    assert "PLAY [Recover nodes after an outage]" in output
    assert not any(t.key == OOS for t in lab.core().read_node(node).spec.taints or [])
    print(f"\nmolecule test -s lab-incident on {node}: {time.monotonic() - started:.1f}s")
