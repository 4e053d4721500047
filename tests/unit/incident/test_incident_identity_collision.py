"""An identity that cannot collide (issue 20, item 1): a systemUUID proves which machine a power device
controls only when exactly one Node of the cluster reports it and it is not a firmware placeholder.

Scenario A: w3 is dead, its power mapping points at w1's BMC by mistake, and w1 and w3 report the same
systemUUID (cloned VMs, or boards that ship the placeholder). On 08a3975 the BMC counted as verified: with
fence=true the running w1 was powered off and w3 tainted.
Scenario B: an off spare with w3's UUID "proved" a partitioned, still-running w3 dead: its pods were force-deleted.
"""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun, restart_checks
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import Identity
from incident_fakes import T0, FakePower, lease, node, system_uuid
from incident_scenario import options, setup

PLACEHOLDER = "03000200-0400-0500-0006-000700080009"


class UuidPower(FakePower):
    """A BMC that reports ``uuid`` as its ComputerSystem UUID."""

    def __init__(self, state, uuid):
        super().__init__(state)
        self.uuid = uuid

    def identify(self):
        return Identity("system-uuid", self.uuid, f"fake BMC UUID {self.uuid}")


def assert_refused_unchanged(cluster, clock, power, match, **overrides):
    before = cluster.snapshot()
    with pytest.raises(ProofError, match=match):
        OutageRun(cluster, power, options(**overrides), clock).run()
    assert cluster.snapshot() == before  # no taint, no record, no pod deleted, no Event, no lock left
    assert not has_out_of_service_taint(cluster.nodes["w3"])
    assert power.actions == []  # nothing powered off


def test_scenario_a_cloned_uuid_the_running_w1_is_not_powered_off():
    cluster, clock, _power = setup()
    cluster.nodes["w3"]["status"]["nodeInfo"]["systemUUID"] = system_uuid("w1")  # w3 is a clone of w1
    w1_bmc = UuidPower("on", system_uuid("w1"))
    assert_refused_unchanged(cluster, clock, w1_bmc, r"power-off.*Nodes w1, w3 all report that systemUUID", fence=True)
    assert w1_bmc.state == "on"


def test_scenario_a_placeholder_uuid_the_running_w1_is_not_powered_off():
    cluster, clock, _power = setup()
    for name in ("w1", "w3"):
        cluster.nodes[name]["status"]["nodeInfo"]["systemUUID"] = PLACEHOLDER
    w1_bmc = UuidPower("on", PLACEHOLDER)
    assert_refused_unchanged(cluster, clock, w1_bmc, r"power-off.*common BIOS placeholder UUID is a placeholder, not an identity", fence=True)


def test_a_placeholder_uuid_is_no_identity_even_on_one_node_only():
    cluster, clock, _power = setup()
    cluster.nodes["w3"]["status"]["nodeInfo"]["systemUUID"] = PLACEHOLDER.upper()
    assert_refused_unchanged(cluster, clock, UuidPower("off", PLACEHOLDER), "is a placeholder, not an identity")


def test_scenario_b_an_off_spare_with_the_same_uuid_proves_nothing():
    """w3 is partitioned but runs; its mapping points at the BMC of a spare (off, NotReady) that is its clone."""
    cluster, clock, _power = setup()
    spare = node("spare1", ready="Unknown", since=T0 - 86400)
    spare["status"]["nodeInfo"]["systemUUID"] = system_uuid("w3")
    cluster.nodes["spare1"] = spare
    cluster.node_leases["spare1"] = lease("spare1", T0 - 86400)
    spare_bmc = UuidPower("off", system_uuid("w3"))
    # Two nodes down: the storm guard is lifted so that only the identity rule can refuse.
    assert_refused_unchanged(cluster, clock, spare_bmc, r"Nodes spare1, w3 all report that systemUUID", max_unhealthy="100%")
    assert [c for c in cluster.calls if c[0] == "force_delete_pod"] == []


def test_a_uuid_shared_by_two_nodes_is_unverified_and_only_an_explicit_opt_out_accepts_it():
    """Cloned VMs whose BMCs cannot tell them apart: the operator may waive the proof per node, on the record."""
    cluster, clock, _power = setup()
    cluster.nodes["w3"]["status"]["nodeInfo"]["systemUUID"] = system_uuid("w1")
    power = UuidPower("off", system_uuid("w1"))
    power.config = {"identity_unverifiable_reason": "cloned VMs w1/w3, hypervisor mapping checked by hand"}
    result = OutageRun(cluster, power, options(), clock).run()
    assert result["record"]["power"]["identity"]["opted_out"] is True
    assert "all report that systemUUID" in result["record"]["power"]["identity"]["detail"]


def test_a_unique_uuid_is_still_verified():
    cluster, clock, power = setup()
    result = OutageRun(cluster, power, options(), clock).run()
    assert result["record"]["power"]["identity"]["verified"] is True


# -- node-recover's same-machine check ------------------------------------------------------------


def test_same_machine_needs_a_uuid_no_other_node_reports():
    record = {"identity": {"boot_id": "boot-w3-1", "system_uuid": system_uuid("w3")}}
    w3 = node("w3")
    w3["status"]["nodeInfo"]["bootID"] = "boot-w3-2"
    clone = node("w9")
    clone["status"]["nodeInfo"]["systemUUID"] = system_uuid("w3")
    ok = {c.name: c for c in restart_checks(record, w3, [], [w3, node("w1")])}
    assert ok["same-machine"].ok
    shared = {c.name: c for c in restart_checks(record, w3, [], [w3, node("w1"), clone])}
    assert not shared["same-machine"].ok and "w3, w9" in shared["same-machine"].detail


def test_same_machine_refuses_the_placeholder():
    record = {"identity": {"boot_id": "boot-w3-1", "system_uuid": PLACEHOLDER}}
    w3 = node("w3")
    w3["status"]["nodeInfo"].update(bootID="boot-w3-2", systemUUID=PLACEHOLDER)
    machine = {c.name: c for c in restart_checks(record, w3, [], [w3])}["same-machine"]
    assert not machine.ok and "placeholder" in machine.detail


def test_recover_keeps_the_taint_when_another_node_reports_the_same_uuid():
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    w3 = cluster.nodes["w3"]
    w3["status"]["conditions"][0].update(status="True", lastTransitionTime=format_time(clock.now() - 120))
    w3["status"]["nodeInfo"]["bootID"] = "boot-w3-2"
    cluster.node_leases["w3"] = lease("w3", clock.now() - 3)
    clone = node("w9")
    clone["status"]["nodeInfo"]["systemUUID"] = system_uuid("w3")
    cluster.nodes["w9"] = clone
    power.state = "on"
    with pytest.raises(ProofError, match="same-machine"):
        RecoverRun(cluster, power, RecoverOptions(node="w3", job_id="job-2", healthy_seconds=60), clock).run()
    assert has_out_of_service_taint(cluster.nodes["w3"])
