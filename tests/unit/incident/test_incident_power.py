"""Out-of-band power readers: Redfish, IPMI, fence agents, the command hook, manual attestation."""

import base64
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError, fence_off, set_power
from ansible_collections.nodeguard.failover.plugins.module_utils.power.command import CommandReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.fence_agent import FenceAgentReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.ipmi import IpmiReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.readers import reader_for
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish import RedfishReader
from incident_fakes import FakeClock, FakePower

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
            self._json({"PowerState": self.state["power"], "Actions": {"#ComputerSystem.Reset": action}})
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
    return RedfishReader({"address": address, "system_id": "w3", "username": "admin", "password": password, "timeout": 5})


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
    reader = RedfishReader({"address": bmc, "system_id": "w3", "username": "admin", "password": "secret", "off_reset_type": "GracefulShutdown"})
    with pytest.raises(PowerError, match="does not allow"):
        reader.power_off()


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
    reading = IpmiReader({"address": "10.0.0.5", "port": 623, "username": "admin", "password": "pw", "interface": "lan"}, run=runner).status()
    assert reading.state == "off"
    [call] = runner.calls
    assert "pw" not in call["argv"]
    assert call["env"]["IPMI_PASSWORD"] == "pw"
    assert call["argv"][:4] == ["ipmitool", "-I", "lan", "-H"]
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


def test_manual_needs_flag_and_reason():
    config = {"type": "manual", "attestation": {"operator": "jane", "reason": "PDU off"}}
    with pytest.raises(PowerError, match="allow_manual_attestation"):
        reader_for(config, "w3")
    with pytest.raises(PowerError, match="reason"):
        reader_for({"type": "manual", "attestation": {"operator": "jane"}}, "w3", allow_manual=True)
    reading = reader_for(config, "w3", allow_manual=True).status()
    assert reading.state == "off"
    assert reading.attestation == {"operator": "jane", "reason": "PDU off", "state": "off"}


def test_set_power_gives_up_after_retries():
    power = FakePower("on", off_takes=10)
    clock = FakeClock()
    with pytest.raises(PowerError, match="after 3 tries"):
        set_power(power, "off", 3, 2, 10, clock)
    assert clock.sleeps == [2, 4]
    assert power.state == "on"
