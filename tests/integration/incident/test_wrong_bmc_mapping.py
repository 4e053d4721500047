"""Identity before trust on the real lab (issue 11, defect 2).

A partitioned worker (kubelet stopped, machine on: the not-ready and lease-stale proofs hold) whose power
mapping points at ANOTHER worker's BMC. Before, that BMC's reading was taken as the target's: Off meant
a force-delete of pods that still run, and fencing powered off the innocent machine. Now the BMC's
ComputerSystem UUID is compared with the target Node's systemUUID, and the run is refused with nothing
changed: no taint, no record, no pod deleted, no lock left, and no power action at the other BMC.
"""

from __future__ import annotations

import subprocess

import pytest
import yaml
from test_incident_lab import (
    INVENTORY,
    REPO,
    assert_refused_unchanged,
    node_obj,
    node_proven_dead,
    playbook,
    state,
)


def lab_system_uuid(node: str) -> str:
    result = subprocess.run(["python3", str(REPO / "lab" / "bmc" / "system_uuid.py"), node],
                            capture_output=True, text=True, check=True, timeout=30)
    return result.stdout.strip()


@pytest.fixture(scope="module")
def partitioned(lab):
    """(target, other): target's kubelet stopped (partitioned, still powered on); other a healthy worker.

    The partition lasts for both tests of this module, so they do not carry the resets_lab marker (a
    reset after the first test would wait for the partitioned node to be Ready); the lab is reset here,
    before and after."""
    lab.reset_lab()
    workers = lab.worker_names()
    assert len(workers) >= 2, "the lab needs two workers"
    target, other = workers[0], workers[1]
    # The check must run for real: the lab's workers report the UUID their BMC reports.
    assert node_obj(lab, target).status.node_info.system_uuid == lab_system_uuid(target)
    lab.podman("exec", target, "systemctl", "stop", "kubelet")
    try:
        lab.wait_for(lambda: node_proven_dead(lab, target), timeout=150, interval=2, what=f"{target} NotReady with a stale Lease")
        yield target, other
    finally:
        if lab.container_state(target) == "running":
            lab.podman("exec", target, "systemctl", "start", "kubelet", check=False)
        if lab.container_state(other) != "running":
            lab.power_on(other)
        lab.reset_lab()


def bmc_of(node: str) -> dict:
    return yaml.safe_load(INVENTORY.read_text())["all"]["children"]["workers"]["hosts"][node]["bmc"]


def test_fencing_through_another_workers_bmc_is_refused_and_powers_nothing(lab, remediator, partitioned):
    target, other = partitioned
    before, other_before = state(lab, target), state(lab, other)
    result = playbook(remediator, "node-outage", target, node_outage_fence=True, node_outage_power_by_node={target: bmc_of(other)})
    assert_refused_unchanged(lab, target, result, before, f"is NOT node {target}'s systemUUID")
    assert "Missing proof(s): power-off" in result.stdout
    assert lab.container_state(other) == "running", "the other worker was powered off"
    assert lab.container_state(target) == "running"
    assert state(lab, other)["out_of_service_taint"] == other_before["out_of_service_taint"]


def test_another_workers_bmc_reading_off_proves_nothing(lab, remediator, partitioned):
    """The review's case: the mapped BMC really reads Off (that worker is powered off)."""
    target, other = partitioned
    lab.power_off(other)
    before = state(lab, target)
    # Two of the workers are down now: the storm guard is lifted so that only the identity check can refuse.
    result = playbook(
        remediator, "node-outage", target, node_outage_max_unhealthy="100%", node_outage_power_by_node={target: bmc_of(other)}
    )
    assert_refused_unchanged(lab, target, result, before, f"is NOT node {target}'s systemUUID")
    assert "redfish reads power OFF" in result.stdout  # the reading was Off, and it did not count
    assert lab.container_state(other) != "running", "the other worker was powered on"
    assert lab.container_state(target) == "running"
    password = bmc_of(other)["password"]
    assert password not in result.stdout + result.stderr
    events = lab.kubectl("get", "events", "-A", "-o", "yaml").stdout
    assert password not in events
