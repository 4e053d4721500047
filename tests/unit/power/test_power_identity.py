"""Identity before trust (issue 11, defect 2): which machine a power device controls, compared with the Node."""

import sys

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import Identity, PowerError, PowerReading
from ansible_collections.nodeguard.failover.plugins.module_utils.power.command import CommandReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.fence_agent import FenceAgentReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import (
    confirm_off,
    same_system_uuid,
    verify_identity,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.power.ipmi import IpmiReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish import RedfishReader

UUID = "4c4c4544-0042-3510-8052-b7c04f4e3232"
# The same machine as firmware that stores the first three fields little-endian reports it.
UUID_SMBIOS = "44454c4c-4200-1035-8052-b7c04f4e3232"
OTHER = "9d2a6a57-58d1-4f31-9e0b-1f2a3b4c5d6e"


def k8s_node(name="w3", system_uuid=UUID):
    return {"metadata": {"name": name}, "status": {"nodeInfo": {"systemUUID": system_uuid}}}


class Clock:
    def __init__(self):
        self.sleeps = []

    def now(self):
        return 0.0

    def sleep(self, seconds):
        self.sleeps.append(seconds)


# -- comparing UUIDs --------------------------------------------------------------------------------


def test_uuid_comparison_tolerates_only_the_smbios_byte_order():
    assert same_system_uuid(UUID, UUID) == "exact"
    assert same_system_uuid(UUID.upper(), "{" + UUID + "}") == "exact"
    assert same_system_uuid(UUID_SMBIOS, UUID) == "smbios-byte-order"
    assert same_system_uuid(UUID, UUID_SMBIOS) == "smbios-byte-order"
    assert same_system_uuid(OTHER, UUID) == ""
    # swapping anything but the first three fields is another machine
    assert same_system_uuid(UUID[:-2] + "33", UUID) == ""
    assert same_system_uuid("00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000000") == ""
    assert same_system_uuid("not-a-uuid", "not-a-uuid") == ""
    assert same_system_uuid(UUID, "") == ""


# -- Redfish ----------------------------------------------------------------------------------------


def redfish_fetch(systems):
    """A fake BMC: ``systems`` maps a system path to its UUID."""

    def fetch(method, path, body=None):
        if path == "/redfish/v1/Systems":
            return {"Members": [{"@odata.id": p} for p in systems]}
        return {"UUID": systems[path], "PowerState": "Off"}

    return fetch


def redfish(systems, system_id=None, **config):
    return RedfishReader(dict({"address": "https://bmc.example", "system_id": system_id}, **config), fetch=redfish_fetch(systems))


def test_redfish_uuid_matching_the_node_is_verified():
    verdict = verify_identity(redfish({"/redfish/v1/Systems/w3": UUID}, "w3"), k8s_node())
    assert verdict.verified and verdict.ok and UUID in verdict.detail


def test_redfish_uuid_in_smbios_byte_order_is_verified_and_says_so():
    verdict = verify_identity(redfish({"/redfish/v1/Systems/w3": UUID_SMBIOS}, "w3"), k8s_node())
    assert verdict.verified and "SMBIOS byte order" in verdict.detail


def test_the_only_system_counts_only_when_its_uuid_matches():
    assert verify_identity(redfish({"/redfish/v1/Systems/1": UUID}), k8s_node()).verified
    verdict = verify_identity(redfish({"/redfish/v1/Systems/1": OTHER}), k8s_node())
    assert not verdict.ok and "another machine" in verdict.detail


def test_several_systems_without_system_id_are_refused():
    verdict = verify_identity(redfish({"/redfish/v1/Systems/a": UUID, "/redfish/v1/Systems/b": OTHER}), k8s_node())
    assert not verdict.ok and "has 2 systems; set system_id" in verdict.detail


def test_mismatch_is_refused_whatever_the_opt_out_says():
    reader = redfish({"/redfish/v1/Systems/w4": OTHER}, "w4", identity_unverifiable_reason="trust me")
    verdict = verify_identity(reader, k8s_node())
    assert not verdict.ok and not verdict.opted_out and "NOT node w3's systemUUID" in verdict.detail


def test_system_without_uuid_needs_the_opt_out():
    def fetch(method, path, body=None):
        return {"PowerState": "Off"}

    reader = RedfishReader({"address": "https://bmc.example", "system_id": "w3"}, fetch=fetch)
    refused = verify_identity(reader, k8s_node())
    assert not refused.ok and "reports no UUID" in refused.detail and "identity_unverifiable_reason" in refused.detail
    reader.config["identity_unverifiable_reason"] = "old iLO 2 without UUID, ticket 77"
    accepted = verify_identity(reader, k8s_node())
    assert accepted.ok and accepted.opted_out and not accepted.verified
    assert "identity NOT verified" in accepted.detail and "ticket 77" in accepted.detail


def test_node_without_system_uuid_cannot_be_matched():
    verdict = verify_identity(redfish({"/redfish/v1/Systems/w3": UUID}, "w3"), k8s_node(system_uuid=""))
    assert not verdict.ok and "reports no status.nodeInfo.systemUUID" in verdict.detail


# -- IPMI, fence agents, command hooks --------------------------------------------------------------


class Runner:
    def __init__(self, rc, out, err=""):
        self.answer = (rc, out, err)
        self.calls = []

    def __call__(self, argv, stdin_text, env, timeout):
        self.calls.append({"argv": argv, "stdin": stdin_text, "env": env})
        return self.answer


def test_ipmi_system_guid_is_compared():
    runner = Runner(0, f"System GUID  : {UUID_SMBIOS}\nTimestamp    : 01/01/1998 00:00:00\n")
    reader = IpmiReader({"address": "10.0.0.5", "password": "pw"}, run=runner)
    assert verify_identity(reader, k8s_node()).verified
    assert runner.calls[0]["argv"][-2:] == ["mc", "guid"]
    assert not verify_identity(reader, k8s_node(system_uuid=OTHER)).ok


def test_ipmi_without_guid_is_not_identity():
    reader = IpmiReader({"address": "10.0.0.5"}, run=Runner(0, "Invalid command\n"))
    verdict = verify_identity(reader, k8s_node())
    assert not verdict.ok and "no system GUID" in verdict.detail


class AgentRunner:
    """A fence agent that answers per action: ``answers`` maps "list", "status", ... to (rc, stdout, stderr)."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def __call__(self, argv, stdin_text, env, timeout):
        self.calls.append({"argv": argv, "stdin": stdin_text, "env": env})
        action = dict(line.split("=", 1) for line in stdin_text.splitlines())["action"]
        return self.answers.get(action, (1, "", "Failed: Unknown action"))


NOT_LISTED = (0, "N/A\n", "")  # what the fencing library prints for list when the agent has no plugs (fence_redfish, fence_ipmilan)
# fence_vmware_soap prints "<VM name>,<config.uuid>" (the BIOS UUID the guest reports), fence_xenapi "<uuid>,<name label>".
VMWARE_LIST = (0, f"w1-vm,{OTHER}\nw3-vm,{UUID_SMBIOS}\n", "")
XEN_LIST = (0, f"{UUID},w3\n{OTHER},w1\n", "")
PDU_LIST = (0, "12,rack3-w3\n13,rack3-w1\n", "")  # fence_apc: outlet number and name, no UUID


@pytest.mark.parametrize(
    "config",
    [
        {"agent": "fence_ipmilan", "address": "10.0.0.5"},
        {"agent": "fence_redfish", "address": "https://bmc", "system_id": "System.Embedded.1"},
        {"agent": "fence_redfish", "address": "https://bmc", "system_id": "1"},
        {"agent": "fence_redfish", "address": "https://bmc", "system_id": "Self"},
        {"agent": "fence_redfish", "address": "https://bmc", "system_id": UUID},  # a path that looks like a UUID
        {"agent": "fence_apc", "address": "pdu1", "agent_options": {"plug": "12"}},
        {"agent": "fence_redfish", "address": "https://bmc", "agent_options": {"plug": UUID}},  # fence_redfish lists nothing
    ],
)
def test_a_plug_port_or_system_id_is_an_address_not_an_identity(config):
    """Issue 20 item 2: on 08a3975 a plug (or fence_redfish's system_id) counted as this node's identity."""
    runner = AgentRunner({"list": PDU_LIST if config["agent"] == "fence_apc" else NOT_LISTED, "status": (2, "Status: OFF\n", "")})
    reader = FenceAgentReader(config, run=runner)
    verdict = verify_identity(reader, k8s_node())
    assert not verdict.ok and not verdict.verified, verdict.detail
    assert "address, not an identity" in verdict.detail and "identity_unverifiable_reason" in verdict.detail
    reader.config["identity_unverifiable_reason"] = "one BMC per host, mapping reviewed 2026-11-01"
    opted = verify_identity(reader, k8s_node())
    assert opted.opted_out and not opted.verified and "identity NOT verified" in opted.detail


@pytest.mark.parametrize(
    ("agent", "plug", "listed"),
    [("fence_vmware_soap", "w3-vm", VMWARE_LIST), ("fence_xenapi", UUID, XEN_LIST)],
)
def test_a_uuid_the_agent_reports_for_the_plug_is_compared(agent, plug, listed):
    runner = AgentRunner({"list": listed, "status": (2, "Status: OFF\n", "")})
    reader = FenceAgentReader({"agent": agent, "address": "vcenter.example", "agent_options": {"plug": plug}}, run=runner)
    verdict = verify_identity(reader, k8s_node())
    assert verdict.verified, verdict.detail
    list_call = runner.calls[-1]["stdin"].splitlines()
    assert "action=list" in list_call and not [line for line in list_call if line.startswith(("plug=", "port="))]
    reader.status()
    assert f"plug={plug}" in runner.calls[-1]["stdin"].splitlines()


def test_a_uuid_the_agent_reports_for_another_machine_is_refused_whatever_the_opt_out():
    config = {"agent": "fence_vmware_soap", "address": "vcenter.example", "agent_options": {"plug": "w1-vm"}}
    config["identity_unverifiable_reason"] = "not a way around a mismatch"
    verdict = verify_identity(FenceAgentReader(config, run=AgentRunner({"list": VMWARE_LIST})), k8s_node())
    assert not verdict.ok and "another machine" in verdict.detail


HOOK = r"""
import json, sys
request = json.load(sys.stdin)
print(json.dumps({"power": "off", "detail": "stopped", "system_uuid": sys.argv[1]}))
"""


@pytest.mark.parametrize(("reported", "ok"), [(UUID, True), (OTHER, False), ("", False)])
def test_command_hook_reports_system_uuid(tmp_path, reported, ok):
    script = tmp_path / "hook.py"
    script.write_text(HOOK)
    reader = CommandReader({"command": [sys.executable, str(script), reported]}, "w3")
    assert verify_identity(reader, k8s_node()).ok is ok


# -- two readings some seconds apart ----------------------------------------------------------------


class Sequence:
    """A device whose readings follow ``states``; identity from ``uuids`` (one per identify call)."""

    method = "redfish"

    def __init__(self, states, uuids=None, config=None):
        self.states = list(states)
        self.uuids = list(uuids or [UUID] * len(states))
        self.config = config or {}

    def identify(self):
        return Identity("system-uuid", self.uuids.pop(0), "fake")

    def status(self):
        return PowerReading(self.states.pop(0), self.method, "fake")


def test_off_twice_is_off():
    clock = Clock()
    reading, verdict = confirm_off(Sequence(["off", "off"], config={"off_confirm_seconds": 3}), k8s_node(), clock)
    assert reading.state == "off" and verdict.verified
    assert clock.sleeps == [3] and "two readings 3s apart" in reading.detail


def test_transient_off_of_a_rebooting_host_is_not_off():
    reading, _verdict = confirm_off(Sequence(["off", "on"]), k8s_node(), Clock())
    assert reading.state == "on" and "read OFF, then ON 5s later" in reading.detail


def test_identity_must_hold_in_both_readings():
    _reading, verdict = confirm_off(Sequence(["off", "off"], uuids=[UUID, OTHER]), k8s_node(), Clock())
    assert not verdict.ok


def test_on_is_not_confirmed_and_costs_no_wait():
    clock = Clock()
    reading, _verdict = confirm_off(Sequence(["on"]), k8s_node(), clock)
    assert reading.state == "on" and clock.sleeps == []


def test_identify_error_is_not_identity():
    class Broken(Sequence):
        def identify(self):
            raise PowerError("connection refused")

    verdict = verify_identity(Broken(["off"]), k8s_node())
    assert not verdict.ok and "could not report which machine" in verdict.detail


def test_off_confirm_seconds_is_at_least_one():
    clock = Clock()
    confirm_off(Sequence(["off", "off"], config={"off_confirm_seconds": 0}), k8s_node(), clock)
    assert clock.sleeps == [1.0]


def test_a_statement_is_read_once():
    class Attestation(Sequence):
        statement = True

    clock = Clock()
    reading, verdict = confirm_off(Attestation(["off"]), k8s_node(), clock)
    assert reading.state == "off" and verdict.ok and clock.sleeps == []
    assert "read once" in reading.detail


@pytest.mark.parametrize(
    "placeholder_uuid",
    [
        "00000000-0000-0000-0000-000000000000",
        "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
        "03000200-0400-0500-0006-000700080009",  # the BIOS placeholder many boards ship
        "00020003-0004-0005-0006-000700080009",  # the same, in SMBIOS byte order
    ],
)
def test_a_placeholder_uuid_matches_nothing_not_even_itself(placeholder_uuid):
    assert same_system_uuid(placeholder_uuid, placeholder_uuid) == ""
    verdict = verify_identity(redfish({"/redfish/v1/Systems/w3": placeholder_uuid}, "w3"), k8s_node(system_uuid=placeholder_uuid))
    assert not verdict.ok and "is a placeholder, not an identity" in verdict.detail
