"""Out-of-band power readers: Redfish, IPMI, fence agents, the command hook, manual attestation,
and the outage run refusing a power device that is not shown to be the node's (issue 11, defect 2)."""

import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError, fence_off, set_power
from ansible_collections.nodeguard.failover.plugins.module_utils.power.command import CommandReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.fence_agent import FenceAgentReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.ipmi import IpmiReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.readers import reader_for
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish import RedfishReader
from incident_fakes import FakeClock, FakePower, lease, system_uuid
from incident_scenario import options, setup

# -- Redfish over real HTTP on loopback ---------------------------------------------------------


class FakeBmc(BaseHTTPRequestHandler):
    state: ClassVar[dict] = {"power": "Off", "posts": []}

    def log_message(self, *args):
        pass

    def _authorized(self):
        expected = "Basic " + base64.b64encode(b"admin:secret").decode()
        if self.headers.get("Authorization") != expected:
            self.send_response(401)
            self.end_headers()
            return False
        return True

    def _json(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if not self._authorized():
            return
        if self.path == "/redfish/v1/Systems/w3":
            action = {"target": "/redfish/v1/Systems/w3/Actions/ComputerSystem.Reset", "ResetType@Redfish.AllowableValues": ["On", "ForceOff"]}
            self._json({"PowerState": self.state["power"], "UUID": system_uuid("w3"), "Actions": {"#ComputerSystem.Reset": action}})
        else:
            self.send_response(404)
            self.end_headers()

    def do_POST(self):
        if not self._authorized():
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.state["posts"].append((self.path, body))
        self.state["power"] = "Off" if body["ResetType"] == "ForceOff" else "On"
        self.send_response(204)
        self.end_headers()


@pytest.fixture
def bmc():
    FakeBmc.state = {"power": "Off", "posts": []}
    server = HTTPServer(("127.0.0.1", 0), FakeBmc)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def redfish(address, password="secret"):
    # The loopback fake has no TLS: plain http needs the loudly named opt-in.
    config = {"address": address, "system_id": "w3", "username": "admin", "password": password, "timeout": 5, "allow_insecure_http": True}
    return RedfishReader(config)


def test_redfish_reads_off_and_on(bmc):
    assert redfish(bmc).status().state == "off"
    FakeBmc.state["power"] = "On"
    assert redfish(bmc).status().state == "on"
    FakeBmc.state["power"] = "PoweringOff"
    assert redfish(bmc).status().state == "on"  # not off until it says Off


def test_redfish_wrong_credentials(bmc):
    with pytest.raises(PowerError, match="credentials refused"):
        redfish(bmc, password="wrong").status()


def test_redfish_unreachable():
    with pytest.raises(PowerError, match="unreachable"):
        redfish("http://127.0.0.1:9").status()


def test_redfish_power_off_sends_force_off(bmc):
    FakeBmc.state["power"] = "On"
    reading, _attempts = fence_off(redfish(bmc), 3, 1, 10, FakeClock())
    assert reading.state == "off"
    assert FakeBmc.state["posts"] == [("/redfish/v1/Systems/w3/Actions/ComputerSystem.Reset", {"ResetType": "ForceOff"})]


def test_redfish_refuses_reset_type_the_bmc_does_not_allow(bmc):
    config = {"address": bmc, "system_id": "w3", "username": "admin", "password": "secret", "off_reset_type": "Off", "allow_insecure_http": True}
    with pytest.raises(PowerError, match="does not allow"):
        RedfishReader(config).power_off()


@pytest.mark.parametrize("reset_type", ["PowerCycle", "ForceRestart", "GracefulRestart", "GracefulShutdown"])
def test_off_reset_type_is_never_a_reboot(reset_type):
    with pytest.raises(PowerError, match="off_reset_type must be one of ForceOff, Off"):
        RedfishReader({"address": "https://bmc.example", "off_reset_type": reset_type})


def test_redfish_identity_is_the_system_uuid(bmc):
    identity = redfish(bmc).identify()
    assert (identity.kind, identity.value) == ("system-uuid", system_uuid("w3"))


def test_redfish_address_must_be_a_url():
    with pytest.raises(PowerError, match="URL"):
        RedfishReader({"address": "bmc.example"})


# -- fence agents and ipmitool with a recording runner ------------------------------------------


class Runner:
    def __init__(self, rc, out, err=""):
        self.answer = (rc, out, err)
        self.calls = []

    def __call__(self, argv, stdin_text, env, timeout):
        self.calls.append({"argv": argv, "stdin": stdin_text, "env": env, "timeout": timeout})
        return self.answer


FENCE = {"agent": "fence_redfish", "address": "https://127.0.0.1:8443", "system_id": "w3", "username": "admin", "password": "s3cret", "ca_cert": "/ca.pem"}


def test_fence_agent_gets_options_on_stdin_not_argv():
    runner = Runner(2, "Status: OFF\n")
    reading = FenceAgentReader(FENCE, run=runner).status()
    assert reading.state == "off"
    [call] = runner.calls
    assert call["argv"] == ["fence_redfish"]
    assert "s3cret" not in " ".join(call["argv"])
    lines = call["stdin"].splitlines()
    assert "action=status" in lines
    assert "password=s3cret" in lines
    assert "ip=127.0.0.1" in lines and "ipport=8443" in lines and "ssl_secure=1" in lines
    assert "systems_uri=/redfish/v1/Systems/w3" in lines
    assert call["env"]["REQUESTS_CA_BUNDLE"] == "/ca.pem"


def test_fence_agent_on():
    assert FenceAgentReader(FENCE, run=Runner(0, "Status: ON\n")).status().state == "on"


def test_fence_agent_exit_2_without_status_line_is_an_error():
    with pytest.raises(PowerError, match="status failed"):
        FenceAgentReader(FENCE, run=Runner(2, "", "Failed: bad arguments")).status()


def test_fence_agent_login_failure_is_an_error():
    with pytest.raises(PowerError, match="Unable to connect"):
        FenceAgentReader(FENCE, run=Runner(1, "", "Failed: Unable to connect/login to fencing device")).status()


def test_only_fence_programs_run():
    with pytest.raises(PowerError, match="fence_"):
        FenceAgentReader({"agent": "/bin/sh"})


def test_ipmi_password_in_environment_only():
    runner = Runner(0, "Chassis Power is off\n")
    reading = IpmiReader({"address": "10.0.0.5", "port": 623, "username": "admin", "password": "pw", "cipher": 17}, run=runner).status()
    assert reading.state == "off"
    [call] = runner.calls
    assert "pw" not in call["argv"]
    assert call["env"]["IPMI_PASSWORD"] == "pw"
    assert call["argv"][:4] == ["ipmitool", "-I", "lanplus", "-H"]
    assert call["argv"][call["argv"].index("-C") + 1] == "17"
    assert "-E" in call["argv"]


def test_ipmi_error():
    with pytest.raises(PowerError, match="Unable to establish"):
        IpmiReader({"address": "10.0.0.5"}, run=Runner(1, "", "Error: Unable to establish IPMI v2 / RMCP+ session")).status()


# -- command hook, for real -----------------------------------------------------------------------

HOOK = r"""
import json, sys
request = json.load(sys.stdin)
assert request["password"] == "hook-secret", request
if request["node"] == "broken":
    sys.stderr.write("cloud API says 403\n")
    sys.exit(3)
print(json.dumps({"power": "off" if request["action"] in ("status", "off") else "on", "detail": "instance stopped"}))
"""


def test_command_hook_contract(tmp_path):
    script = tmp_path / "hook.py"
    script.write_text(HOOK)
    config = {"command": [sys.executable, str(script)], "password": "hook-secret"}
    reading = CommandReader(config, "w3").status()
    assert reading.state == "off"
    assert "instance stopped" in reading.detail
    with pytest.raises(PowerError, match="403"):
        CommandReader(config, "broken").status()


# -- manual attestation and selection -------------------------------------------------------------


def test_manual_needs_flag_and_a_complete_attestation():
    attestation = {"node": "w3", "state": "off", "operator": "jane", "reason": "PDU off"}
    attestation.update(expires="2099-01-01T00:00:00Z", not_before="2026-01-01T00:00:00Z")
    config = {"type": "manual", "attestation": attestation}
    with pytest.raises(PowerError, match="allow_manual_attestation"):
        reader_for(config, "w3")
    with pytest.raises(PowerError, match=r"missing attestation\.reason"):
        reader_for({"type": "manual", "attestation": dict(attestation, reason="")}, "w3", allow_manual=True)
    # the expiry is checked against the real time here: 2099 is far more than 24h ahead
    with pytest.raises(PowerError, match="more than 24h ahead"):
        reader_for(config, "w3", allow_manual=True)


def test_set_power_gives_up_after_retries():
    power = FakePower("on", off_takes=10)
    clock = FakeClock()
    with pytest.raises(PowerError, match="after 3 tries"):
        set_power(power, "off", 3, 2, 10, clock)
    assert clock.sleeps == [2, 4]
    assert power.state == "on"


# -- identity before trust: the outage and recover runs (issue 11, defect 2) ---------------------


def outage(cluster, clock, power, **overrides):
    return OutageRun(cluster, power, options(**overrides), clock).run()


class NoIdentityPower(FakePower):
    """A device that reads power but cannot say which machine it controls (fence_ipmilan, a PDU)."""

    def __init__(self, state="off", config=None):
        super().__init__(state)
        self.config = config or {}

    def identify(self):
        raise PowerError("reports no UUID")


class RebootingPower(FakePower):
    """A host that reads Off for a moment while it reboots, then On."""

    def __init__(self):
        super().__init__("off")
        self.readings = ["off", "on"]

    def status(self):
        self.state = self.readings.pop(0) if self.readings else "on"
        return super().status()


def assert_nothing_changed(cluster, clock, power, match, **overrides):
    before = cluster.snapshot()
    with pytest.raises(ProofError, match=match):
        outage(cluster, clock, power, **overrides)
    assert cluster.snapshot() == before  # no taint, no annotation, no pod deleted, no Event, no lock left
    assert not has_out_of_service_taint(cluster.nodes["w3"])


def test_another_machines_bmc_reading_off_proves_nothing():
    """The review's case: w3 is partitioned (NotReady, Lease stale) and its mapping points at w4's BMC, which is Off."""
    cluster, clock, _power = setup()
    wrong = FakePower("off", machine="w4")
    assert_nothing_changed(cluster, clock, wrong, match=r"power-off.*is NOT node w3's systemUUID")


def test_another_machines_bmc_is_never_fenced():
    cluster, clock, _power = setup()
    wrong = FakePower("on", machine="w4")
    assert_nothing_changed(cluster, clock, wrong, match="NOT node w3's systemUUID", fence=True)
    assert wrong.actions == []  # the innocent host was not powered off
    assert wrong.state == "on"


def test_the_only_system_without_a_matching_uuid_is_refused_even_with_the_opt_out():
    cluster, clock, _power = setup()
    wrong = FakePower("off", machine="w4")
    wrong.config = {"identity_unverifiable_reason": "our BMCs have no UUID"}
    assert_nothing_changed(cluster, clock, wrong, match="another machine")


def test_device_without_identity_is_refused_without_the_opt_out():
    cluster, clock, _power = setup()
    assert_nothing_changed(cluster, clock, NoIdentityPower(), match="identity_unverifiable_reason")


def test_node_without_system_uuid_is_refused():
    cluster, clock, power = setup()
    cluster.nodes["w3"]["status"]["nodeInfo"]["systemUUID"] = ""
    assert_nothing_changed(cluster, clock, power, match="reports no status.nodeInfo.systemUUID")


def test_opt_out_is_accepted_and_recorded_with_the_proof():
    cluster, clock, _power = setup()
    power = NoIdentityPower(config={"identity_unverifiable_reason": "fence_ipmilan on a one-host BMC, checked by hand 2026-11-01"})
    result = outage(cluster, clock, power)
    assert has_out_of_service_taint(cluster.nodes["w3"])
    [proof] = [p for p in result["record"]["proofs"] if p["name"] == "power-off"]
    assert "identity NOT verified" in proof["detail"] and "checked by hand 2026-11-01" in proof["detail"]
    assert result["record"]["power"]["identity"]["opted_out"] is True


def test_matching_identity_is_recorded():
    cluster, clock, power = setup()
    result = outage(cluster, clock, power)
    identity = result["record"]["power"]["identity"]
    assert identity["verified"] is True and system_uuid("w3") in identity["detail"]


def test_first_transient_off_of_a_rebooting_host_is_not_proof():
    cluster, clock, _power = setup()
    # Read once per poll while the Lease is watched: Off, then On a second later refuses at once.
    assert_nothing_changed(cluster, clock, RebootingPower(), match=r"power-off: redfish reads power ON \(read OFF, then ON 1s later")


def test_off_needs_two_readings_some_seconds_apart():
    cluster, clock, power = setup()
    power.config = {"off_confirm_seconds": 27}  # longer than the 20 s Lease watch the readings overlap
    result = outage(cluster, clock, power)
    assert pytest.approx(7, abs=0.2) in clock.sleeps  # once the other proofs hold: only what is left of the 27 s
    [proof] = [p for p in result["proofs"] if p["name"] == "power-off"]
    assert "OFF in two readings 27s apart" in proof["detail"]


def test_manual_attestation_is_read_once_with_no_confirming_wait():
    # An attestation is what an operator wrote: a second look off_confirm_seconds later shows the same words.
    cluster, clock, _power = setup()
    now = time.time()
    attestation = {"node": "w3", "state": "off", "operator": "jane", "reason": "PDU outlet 7 switched off"}
    attestation.update(not_before=format_time(now - 60), expires=format_time(now + 3600))
    power = reader_for({"type": "manual", "attestation": attestation}, "w3", allow_manual=True)
    result = outage(cluster, clock, power)
    [proof] = [p for p in result["proofs"] if p["name"] == "power-off"]
    assert proof["ok"] and "read once" in proof["detail"]
    assert 5 not in clock.sleeps and 5.0 not in clock.sleeps
    assert has_out_of_service_taint(cluster.nodes["w3"])


def test_recover_refuses_power_on_from_another_machine():
    cluster, clock, power = setup()
    outage(cluster, clock, power)
    condition = cluster.nodes["w3"]["status"]["conditions"][0]
    condition.update(status="True", lastTransitionTime=format_time(clock.now() - 120))
    cluster.node_leases["w3"] = lease("w3", clock.now() - 3)
    cluster.nodes["w3"]["status"]["nodeInfo"]["bootID"] = "boot-w3-2"
    before = cluster.snapshot()
    with pytest.raises(ProofError, match=r"power-on: .*not shown to belong to this node"):
        RecoverRun(cluster, FakePower("on", machine="w4"), RecoverOptions(node="w3", job_id="job-2", healthy_seconds=60), clock).run()
    assert cluster.snapshot() == before
