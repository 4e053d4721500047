"""Identity before trust on the real lab (issue 11, defect 2).

A partitioned worker (kubelet stopped, machine on: the not-ready and lease-stale proofs hold) whose power
mapping points at ANOTHER worker's BMC. Before, that BMC's reading was taken as the target's: Off meant
a force-delete of pods that still run, and fencing powered off the innocent machine. Now the BMC's
ComputerSystem UUID is compared with the target Node's systemUUID, and the run is refused with nothing
changed: no taint, no record, no pod deleted, no lock left, and no power action at the other BMC.

Issue 20, item 1: the same mistake where the two machines report ONE systemUUID (cloned VMs, boards that ship
the placeholder). The target worker is given the other's UUID (what its kubelet reports, as a clone would), its
mapping points at the other's IPMI BMC, which reports that UUID: on 08a3975 the identity "matched", fencing
powered the running other worker off and the target was tainted. A UUID that two Nodes report names neither.
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


# Issue 20: the copied mapping is now refused when the power source is chosen, as a second mapping of the other
# worker's BMC in the inventory. Reading the mappings of this run only (a host variable no host has) takes the
# inventory out, so that the identity check itself still runs on the lab.
ONLY_THIS_MAPPING = {"node_outage_power_hostvar": "nodeguard_test_no_such_host_variable"}


def test_a_copy_of_another_workers_mapping_is_refused_when_the_power_source_is_chosen(lab, remediator, partitioned):
    target, other = partitioned
    before, other_before = state(lab, target), state(lab, other)
    result = playbook(remediator, "node_outage", target, node_outage_fence=True, node_outage_power_by_node={target: bmc_of(other)})
    assert_refused_unchanged(lab, target, result, before, f"the power mappings of {target} and {other} name the same BMC address and system")
    assert bmc_of(other)["password"] not in result.stdout + result.stderr
    assert lab.container_state(other) == "running", "the other worker was powered off"
    assert state(lab, other)["out_of_service_taint"] == other_before["out_of_service_taint"]


def test_fencing_through_another_workers_bmc_is_refused_and_powers_nothing(lab, remediator, partitioned):
    target, other = partitioned
    before, other_before = state(lab, target), state(lab, other)
    result = playbook(
        remediator, "node_outage", target, node_outage_fence=True, node_outage_power_by_node={target: bmc_of(other)}, **ONLY_THIS_MAPPING
    )
    assert_refused_unchanged(lab, target, result, before, f"is NOT node {target}'s systemUUID")
    assert "Missing proof(s): lease-stale, power-off" in " ".join(result.stdout.split())  # refused at once: the Lease watch had no time
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
        remediator,
        "node_outage",
        target,
        node_outage_max_unhealthy="100%",
        node_outage_power_by_node={target: bmc_of(other)},
        **ONLY_THIS_MAPPING,
    )
    assert_refused_unchanged(lab, target, result, before, f"is NOT node {target}'s systemUUID")
    assert "redfish reads power OFF" in result.stdout  # the reading was Off, and it did not count
    assert lab.container_state(other) != "running", "the other worker was powered on"
    assert lab.container_state(target) == "running"
    password = bmc_of(other)["password"]
    assert password not in result.stdout + result.stderr
    events = lab.kubectl("get", "events", "-A", "-o", "yaml").stdout
    assert password not in events


def write_product_uuid(lab, node: str, value: str) -> None:
    """What the worker's kubelet reads as its SMBIOS UUID (lab/workers/kubelet/nodeguard-node-identity.sh binds
    this file over /sys/class/dmi/id/product_uuid); written in place, so the bind shows the new value."""
    lab.podman("exec", node, "sh", "-c", f"printf '%s\\n' {value} > /etc/nodeguard/product_uuid")


def reported_uuid(lab, node: str) -> str:
    return node_obj(lab, node).status.node_info.system_uuid


def test_two_workers_reporting_one_uuid_is_no_identity_and_powers_nothing(lab, remediator, partitioned):
    """Scenario A on the lab: target (partitioned) is a clone of other (running), mapped to other's IPMI BMC, fence on."""
    target, other = partitioned
    ipmi = yaml.safe_load(INVENTORY.read_text())["all"]["children"]["workers"]["hosts"][other].get("bmc_ipmi")
    if not ipmi:
        pytest.skip("the lab runs without IPMI BMCs")
    clone = lab_system_uuid(other)
    if lab.container_state(other) != "running":  # the test before powered it off
        lab.power_on(other)
    lab.wait_for(lambda: lab.node_ready(other), timeout=180, interval=2, what=f"{other} Ready (running)")
    try:
        # The clone boots once with the other's UUID (its kubelet reports it), then is partitioned again.
        write_product_uuid(lab, target, clone)
        lab.podman("exec", target, "systemctl", "start", "kubelet")
        lab.wait_for(lambda: reported_uuid(lab, target) == clone, timeout=120, interval=2, what=f"{target} reporting {other}'s systemUUID")
        lab.podman("exec", target, "systemctl", "stop", "kubelet")
        lab.wait_for(lambda: node_proven_dead(lab, target), timeout=150, interval=2, what=f"{target} NotReady with a stale Lease")
        assert reported_uuid(lab, other) == clone  # two Nodes, one UUID
        before, other_before = state(lab, target), state(lab, other)
        result = playbook(remediator, "node_outage", target, node_outage_fence=True, node_outage_power_by_node={target: ipmi})
        assert_refused_unchanged(lab, target, result, before, f"Nodes {', '.join(sorted([target, other]))} all report that systemUUID")
        assert lab.container_state(other) == "running", "the other worker (the clone's twin) was powered off"
        assert lab.container_state(target) == "running"
        assert state(lab, other)["out_of_service_taint"] == other_before["out_of_service_taint"]
        assert ipmi["password"] not in result.stdout + result.stderr
    finally:
        write_product_uuid(lab, target, lab_system_uuid(target))
