"""The control_plane_flags role rolls a broken change back on the lab's real control plane.

A kube-controller-manager flag value the binary rejects never becomes healthy: the role must
restore the manifest it changed (byte for byte), fail the run with a message that says so and
carries the component's own error, and return only once the restored controller-manager is healthy
and holds its leader lease again, saying how long node-failure detection was down.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

KCM = "kube-controller-manager"
REPO = Path(__file__).resolve().parents[3]
PLAYBOOK = REPO / "tests" / "integration" / "lab" / "control_plane_flags_rollback.yml"


@pytest.mark.changes_control_plane
def test_broken_flag_is_rolled_back_by_the_role(lab):
    before = lab.read_manifest(KCM)
    flags_before = lab.component_flags(KCM)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    result = subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(lab.STATE / "inventory.yml"), str(PLAYBOOK),
         "-e", "broken_grace_period=not-a-duration"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)

    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "failed and were rolled back" in output, output
    assert "kube-controller-manager.yaml" in output, output
    # The component's own words, not only "Connection refused".
    assert "invalid argument" in output and "node-monitor-grace-period" in output, output
    assert "kube-controller-manager healthy again" in output, output
    assert "leader lease was renewed at" in output, output
    assert re.search(r"Node-failure detection was down for about \d+ s", output), output
    assert lab.read_manifest(KCM) == before
    # The role returned only after the restored component was back: healthy now, with its lease.
    assert lab.component_healthy(KCM)
    assert lab.lease_holder(KCM)
    assert lab.component_flags(KCM) == flags_before
    assert not any("not-a-duration" in flag for flag in lab.component_flags(KCM))
