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


def run_role(lab, *extra_vars):
    """The rollback playbook on the lab's ng-cp1: its exit code and output."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    arguments = [item for extra in extra_vars for item in ("-e", extra)]
    result = subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(lab.STATE / "inventory.yml"), str(PLAYBOOK),
         *arguments],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    return result.returncode, result.stdout + result.stderr


@pytest.mark.changes_control_plane
def test_broken_flag_is_rolled_back_by_the_role(lab):
    before = lab.read_manifest(KCM)
    flags_before = lab.component_flags(KCM)
    returncode, output = run_role(lab, "broken_grace_period=not-a-duration")

    assert returncode != 0, output
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


def test_a_change_that_fails_before_any_file_is_changed_is_not_called_a_rollback(lab):
    """The manifest cannot be read (a wrong directory): nothing changed, so nothing is restored or
    waited for, and the run says so instead of reporting a rollback and a detection outage."""
    before = lab.read_manifest(KCM)
    returncode, output = run_role(lab, "broken_grace_period=40s", "control_plane_flags_manifest_dir=/nonexistent")

    assert returncode != 0, output
    assert "failed before any file was changed (nothing to roll back): kube-controller-manager:" in output, output
    assert "/nonexistent/kube-controller-manager.yaml" in output, output
    assert "rolled back" not in output, output
    assert "Node-failure detection was down" not in output, output
    assert lab.read_manifest(KCM) == before
