"""The kubelet_heartbeat role rolls back a kubelet configuration the kubelet refuses.

The kubelet cannot check a configuration without running it, so the role's restart is the check:
given nodeLeaseDurationSeconds -5 (the kubelet: "nodeLeaseDurationSeconds must be greater than 0"),
the first worker's kubelet exits at once and is started again and again. The role must put
config.yaml back byte for byte, restart the kubelet and see it healthy again (same settings as
before, a renewed Lease, Ready), and fail the run quoting the kubelet's own error, before the
play goes on to the next worker: the other workers' files and kubelet processes are untouched.

The same on the lab's real-kubelet worker (kubelet v1.35.4, NODEGUARD_LAB_REAL_KUBELET): its own
validation refuses the file, its journal gives the reason, and it runs again on the restored file.
"""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PLAYBOOK = REPO / "tests" / "integration" / "lab" / "kubelet_rollback.yml"
CONFIG = "/var/lib/kubelet/config.yaml"


def node_exec(lab, node: str, *command: str) -> str:
    return lab.podman("exec", node, *command).stdout


def kubelet_unit(lab, node: str) -> dict[str, str]:
    text = node_exec(lab, node, "systemctl", "show", "kubelet", "-p", "MainPID,NRestarts,ActiveState")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def kubelet_files(lab, node: str) -> str:
    """Every file the role could write on the node, with its checksum (backups included)."""
    return node_exec(lab, node, "sh", "-c",
                     "find /var/lib/kubelet /etc/systemd/system/kubelet.service.d -maxdepth 1 -type f "
                     "-exec sha256sum {} + 2>/dev/null | sort; true")


def run_playbook(lab, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    return subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(lab.STATE / "inventory.yml"), str(PLAYBOOK), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)


def restore_config(lab, node: str, text: str) -> None:
    if node_exec(lab, node, "cat", CONFIG) != text:
        subprocess.run(["podman", "exec", "-i", node, "sh", "-c", f"cat > {CONFIG} && systemctl restart kubelet"],
                       input=text, text=True, check=True)
        lab.wait_for(lambda: lab.node_ready(node), timeout=120, what=f"{node} Ready after the test")


@pytest.fixture
def workers(lab):
    names = lab.inventory_nodes()["workers"]
    assert len(names) >= 2, "the test needs two workers: one that fails, one that must stay untouched"
    saved = {node: node_exec(lab, node, "cat", CONFIG) for node in names}
    yield names
    # A failed assertion must not leave a broken kubelet behind.
    for node, text in saved.items():
        restore_config(lab, node, text)


@pytest.fixture
def real_worker(lab):
    """The lab's real-kubelet worker (lablib.real_kubelet_worker), its config.yaml put back after the test."""
    with lab.real_kubelet_worker() as node:
        config = node_exec(lab, node, "cat", CONFIG)
        yield node
        restore_config(lab, node, config)


def test_refused_kubelet_configuration_is_rolled_back_on_the_first_node(lab, workers):
    first, others = workers[0], workers[1:]
    config_before = node_exec(lab, first, "cat", CONFIG)
    lease_before = lab.node_lease(first).spec.lease_duration_seconds
    unit_before = kubelet_unit(lab, first)
    others_before = {node: (kubelet_files(lab, node), kubelet_unit(lab, node)["MainPID"]) for node in others}
    started = datetime.datetime.now(datetime.UTC)

    result = run_playbook(lab)
    output = result.stdout + result.stderr

    assert result.returncode != 0, output
    assert f"Kubelet settings on {first} failed and were rolled back" in output, output
    assert f"restored: {CONFIG}" in output, output
    assert "is not a stable process" in output, output
    # The kubelet's own words, from its journal.
    assert "nodeLeaseDurationSeconds must be greater than 0" in output, output
    assert "the restored kubelet is healthy again" in output, output
    # The file is back byte for byte, and the kubelet runs with it: restarted, stable, its Lease as before.
    assert node_exec(lab, first, "cat", CONFIG) == config_before
    unit_after = kubelet_unit(lab, first)
    assert unit_after["ActiveState"] == "active" and unit_after["MainPID"] != unit_before["MainPID"], unit_after
    renewed = lab.node_lease(first)
    assert renewed.spec.lease_duration_seconds == lease_before
    assert renewed.spec.renew_time > started
    assert lab.node_ready(first)
    # The play stopped on the first node: nothing on the others was written or restarted.
    for node in others:
        assert f"ok: [{node}]" not in output and f"changed: [{node}]" not in output, output
        assert (kubelet_files(lab, node), kubelet_unit(lab, node)["MainPID"]) == others_before[node], node


def test_the_real_kubelet_refuses_the_configuration_and_runs_again_on_the_restored_one(lab, real_worker):
    node = real_worker
    config_before = node_exec(lab, node, "cat", CONFIG)
    lease_before = lab.node_lease(node).spec.lease_duration_seconds
    unit_before = kubelet_unit(lab, node)
    started = datetime.datetime.now(datetime.UTC)

    result = run_playbook(lab, "-e", f"rollback_hosts={node}")
    output = result.stdout + result.stderr

    assert result.returncode != 0, output
    assert f"Kubelet settings on {node} failed and were rolled back (restored: {CONFIG})" in output, output
    # The real kubelet's own validation, quoted from its journal without the configuration it prints after it.
    assert "failed to validate kubelet configuration, error: invalid configuration: nodeLeaseDurationSeconds must be " \
           "greater than 0, path: (configuration left out)" in output, output
    assert "the restored kubelet is healthy again" in output, output
    assert node_exec(lab, node, "cat", CONFIG) == config_before
    unit_after = kubelet_unit(lab, node)
    assert unit_after["ActiveState"] == "active" and unit_after["MainPID"] != unit_before["MainPID"], unit_after
    assert node_exec(lab, node, "curl", "-s", "http://127.0.0.1:10248/healthz") == "ok"
    renewed = lab.node_lease(node)
    assert renewed.spec.lease_duration_seconds == lease_before
    assert renewed.spec.renew_time > started
    assert lab.node_ready(node)
