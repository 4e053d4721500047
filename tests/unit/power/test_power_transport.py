"""BMC transport (issue 11, defect 7): HTTPS, credentials only to the configured origin, no userinfo, IPMI v2.0
with encryption, fence agents whose action cannot be overridden, scrubbed environments, no secret in any output."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.power.args import POWER_SUBOPTIONS
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.command import CommandReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.fence_agent import FenceAgentReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.ipmi import IpmiReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.readers import reader_for
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish import RedfishReader

PASSWORD = "Pa55-w0rd-never-shown"


# -- Redfish: two loopback servers, the BMC and "somewhere else" -----------------------------------


class Recording(BaseHTTPRequestHandler):
    """Answers from ``routes`` (path -> (status, headers, body)); records every request with its headers."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.requests.append((self.path, dict(self.headers)))
        status, headers, body = self.server.routes.get(self.path, (404, {}, {}))
        data = json.dumps(body).encode()
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def servers():
    started = []

    def start(routes):
        server = HTTPServer(("127.0.0.1", 0), Recording)
        server.routes, server.requests = routes, []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        return server, f"http://127.0.0.1:{server.server_port}"

    yield start
    for server in started:
        server.shutdown()


def reader(address, **config):
    values = {"address": address, "username": "admin", "password": PASSWORD, "timeout": 5, "allow_insecure_http": True}
    values.update(config)
    return RedfishReader(values)


def test_plain_http_is_refused_without_the_loud_option():
    with pytest.raises(PowerError, match=r"plain http.*allow_insecure_http"):
        RedfishReader({"address": "http://bmc.example"})
    assert RedfishReader({"address": "http://bmc.example", "allow_insecure_http": True}).address == "http://bmc.example"


@pytest.mark.parametrize(
    "config",
    [
        {"type": "redfish", "address": f"https://admin:{PASSWORD}@bmc.example"},
        {"type": "ipmi", "address": f"admin:{PASSWORD}@10.0.0.5"},
        {"type": "fence_agent", "address": f"https://admin:{PASSWORD}@bmc.example"},
        {"type": "command", "address": f"https://admin:{PASSWORD}@cloud.example", "command": ["hook"]},
    ],
)
def test_userinfo_in_address_is_refused_without_showing_it(config):
    with pytest.raises(PowerError, match="must not contain user information") as caught:
        reader_for(config, "w3")
    assert PASSWORD not in str(caught.value)


def test_link_to_another_origin_gets_no_credentials(servers):
    elsewhere, elsewhere_url = servers({"/redfish/v1/Systems/1": (200, {}, {"PowerState": "Off", "UUID": "x"})})
    _bmc, bmc_url = servers({"/redfish/v1/Systems": (200, {}, {"Members": [{"@odata.id": f"{elsewhere_url}/redfish/v1/Systems/1"}]})})
    with pytest.raises(PowerError, match="refused, credentials are sent only to the configured origin") as caught:
        reader(bmc_url).status()
    assert elsewhere.requests == []  # not contacted at all
    assert PASSWORD not in str(caught.value)


def test_link_to_the_same_origin_is_followed(servers):
    routes = {"/redfish/v1/Systems/1": (200, {}, {"PowerState": "Off"})}
    bmc, bmc_url = servers(routes)
    routes["/redfish/v1/Systems"] = (200, {}, {"Members": [{"@odata.id": f"{bmc_url}/redfish/v1/Systems/1"}]})
    assert reader(bmc_url).status().state == "off"
    assert all(headers.get("Authorization") for _path, headers in bmc.requests)


def test_link_that_changes_scheme_or_port_is_refused():
    r = RedfishReader({"address": "https://bmc.example", "password": PASSWORD}, fetch=lambda *a: {})
    for link in ("http://bmc.example/redfish/v1/Systems/1", "https://bmc.example:8443/redfish/v1/Systems/1", "//evil.example/x"):
        with pytest.raises(PowerError, match="refused"):
            r._url(link)
    assert r._url("https://BMC.example:443/redfish/v1/Systems/1") == "https://BMC.example:443/redfish/v1/Systems/1"


def test_redirect_is_not_followed(servers):
    elsewhere, elsewhere_url = servers({"/redfish/v1/Systems/w3": (200, {}, {"PowerState": "Off"})})
    _bmc, bmc_url = servers({"/redfish/v1/Systems/w3": (302, {"Location": f"{elsewhere_url}/redfish/v1/Systems/w3"}, {})})
    with pytest.raises(PowerError, match="redirect not followed"):
        reader(bmc_url, system_id="w3").status()
    assert elsewhere.requests == []


# -- IPMI ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [({"cipher": 0}, "cipher suite 0 refused"), ({"cipher": 1}, "cipher suite 1"), ({"interface": "lan"}, "'lan' refused")],
)
def test_ipmi_without_authentication_or_encryption_is_refused(config, message):
    with pytest.raises(PowerError, match=message):
        IpmiReader(dict({"address": "10.0.0.5"}, **config))


def test_ipmi_refusals_are_in_the_argument_spec_too():
    assert POWER_SUBOPTIONS["interface"]["choices"] == ["lanplus"]
    assert POWER_SUBOPTIONS["off_reset_type"]["choices"] == ["ForceOff", "Off"]


# -- fence agents and hooks ----------------------------------------------------------------------------


class Runner:
    def __init__(self, rc, out, err=""):
        self.answer = (rc, out, err)
        self.calls = []

    def __call__(self, argv, stdin_text, env, timeout):
        self.calls.append({"argv": argv, "stdin": stdin_text, "env": env})
        return self.answer


FENCE = {"agent": "fence_redfish", "address": "https://127.0.0.1:8443", "system_id": "w3", "username": "admin", "password": PASSWORD}


@pytest.mark.parametrize("key", ["action", "option", " Action "])
def test_agent_options_cannot_change_the_action(key):
    with pytest.raises(PowerError, match="cannot set"):
        FenceAgentReader(dict(FENCE, agent_options={key: "reboot"}))


@pytest.mark.parametrize("options", [{"plug": "1\naction=reboot"}, {"x\raction": "reboot"}, {"a=b": "c"}])
def test_agent_options_must_be_single_lines(options):
    with pytest.raises(PowerError, match="single lines"):
        FenceAgentReader(dict(FENCE, agent_options=options))


@pytest.mark.parametrize(("options", "message"), [({"cipher": 0}, "cipher 0 refused"), ({"lanplus": "0"}, "lanplus off refused")])
def test_fence_ipmilan_cannot_be_downgraded(options, message):
    with pytest.raises(PowerError, match=message):
        FenceAgentReader(dict(FENCE, agent="fence_ipmilan", agent_options=options))


IPMILAN = {"agent": "fence_ipmilan", "address": "10.0.0.5", "username": "admin", "password": PASSWORD}


@pytest.mark.parametrize("agent", ["fence_ipmilan", "/usr/sbin/fence_ipmilan", "fence_idrac", "fence_ilo4", "fence_imm"])
@pytest.mark.parametrize(("config", "cipher"), [({}, None), ({"cipher": 17}, "17"), ({"agent_options": {"cipher": "3"}}, "3")])
def test_fence_ipmilan_always_gets_lanplus_and_a_safe_cipher(agent, config, cipher):
    """Issue 20 item 2: on 08a3975 fence_ipmilan ran with its defaults, IPMI v1.5 (-I lan) and any cipher."""
    runner = Runner(2, "Status: OFF\n")
    FenceAgentReader(dict(IPMILAN, agent=agent, **config), run=runner).status()
    lines = runner.calls[0]["stdin"].splitlines()
    assert "lanplus=1" in lines
    assert [line for line in lines if line.startswith("cipher=")] == ([f"cipher={cipher}"] if cipher else [])


@pytest.mark.parametrize("config", [{"cipher": 1}, {"agent_options": {"cipher": "2"}}, {"agent_options": {"cipher": "abc"}}])
def test_fence_ipmilan_refuses_the_cipher_suites_the_ipmi_reader_refuses(config):
    runner = Runner(2, "Status: OFF\n")
    with pytest.raises(PowerError, match=r"fence_ipmilan cipher suite .*refused"):
        FenceAgentReader(dict(IPMILAN, **config), run=runner)
    assert runner.calls == []


@pytest.mark.parametrize(
    "changes",
    [
        {"agent": "fence_ipmilan", "agent_options": {"cipher": "3 chassis power cycle"}},
        {"agent": "fence_ipmilan", "agent_options": {"privlvl": "administrator;reboot"}},
        {"agent": "fence_ipmilan", "agent_options": {"hexadecimal_kg": "$(reboot)"}},
        {"agent": "fence_ipmilan", "address": "10.0.0.5 -I lan"},
        {"agent": "fence_ipmilan", "port": None, "agent_options": {"ipport": "623 -C 0"}},
        {"agent": "fence_apc", "agent_options": {"plug": "12|13"}},
        {"agent": "fence_redfish", "system_id": "1 x"},
        {"agent": "fence_redfish", "username": "admin`id`"},
    ],
)
def test_a_value_with_whitespace_or_shell_metacharacters_is_refused_before_any_agent_runs(changes):
    """Issue 20 item 2: on 08a3975 cipher "3 chassis power cycle" reached fence_ipmilan's shlex-split ipmitool line."""
    runner = Runner(2, "Status: OFF\n")
    with pytest.raises(PowerError, match="whitespace or a shell metacharacter"):
        FenceAgentReader(dict(FENCE, **changes), run=runner)
    assert runner.calls == []


def test_a_password_may_hold_any_character_and_travels_on_stdin_only():
    password = "p a$s;w`o'r\"d|"
    runner = Runner(2, "Status: OFF\n")
    FenceAgentReader(dict(IPMILAN, password=password), run=runner).status()
    [call] = runner.calls
    assert call["argv"] == ["fence_ipmilan"]
    assert f"password={password}" in call["stdin"].splitlines()
    assert password not in json.dumps(call["env"])


def test_no_program_gets_the_password_in_argv(tmp_path):
    """Fence agents and hooks on stdin, ipmitool in IPMI_PASSWORD; never a command line (this held on 08a3975)."""
    calls = []

    def run(argv, stdin_text, env, timeout):
        calls.append((argv, stdin_text, env))
        return 0, json.dumps({"power": "on"}) if argv[0] == "hook" else "Status: ON\nChassis Power is on\n", ""

    FenceAgentReader(FENCE, run=run).status()
    FenceAgentReader(IPMILAN, run=run).status()
    IpmiReader({"address": "10.0.0.5", "password": PASSWORD}, run=run).status()
    CommandReader({"command": ["hook"], "password": PASSWORD}, "w3", run=run).status()
    assert len(calls) == 4
    assert not [argv for argv, _stdin, _env in calls if PASSWORD in " ".join(argv)]
    fence_redfish, fence_ipmilan, ipmitool, hook = calls
    assert f"password={PASSWORD}" in fence_redfish[1] and f"password={PASSWORD}" in fence_ipmilan[1]
    assert ipmitool[2]["IPMI_PASSWORD"] == PASSWORD and PASSWORD not in ipmitool[1]
    assert json.loads(hook[1])["password"] == PASSWORD and PASSWORD not in json.dumps(hook[2])


def test_password_with_a_newline_is_refused():
    with pytest.raises(PowerError, match="single line"):
        FenceAgentReader(dict(FENCE, password="x\naction=reboot"))


def test_the_agent_gets_exactly_one_action_ours():
    runner = Runner(0, "Success: Powered OFF\n")
    FenceAgentReader(dict(FENCE, agent_options={"ssl_insecure": "1"}), run=runner).power_off()
    lines = runner.calls[0]["stdin"].splitlines()
    assert [line for line in lines if line.startswith(("action=", "option="))] == ["action=off"]


def test_agent_options_are_no_log():
    assert POWER_SUBOPTIONS["agent_options"]["no_log"] is True
    assert POWER_SUBOPTIONS["password"]["no_log"] is True


@pytest.fixture
def secret_environment(monkeypatch):
    for name in ("K8S_AUTH_API_KEY", "K8S_AUTH_PASSWORD", "HTTPS_PROXY", "https_proxy", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "controller-secret")
    monkeypatch.setenv("LANG", "C.UTF-8")


def test_fence_agent_and_ipmitool_get_a_scrubbed_environment(secret_environment):
    runner = Runner(2, "Status: OFF\n")
    FenceAgentReader(dict(FENCE, ca_cert="/ca.pem"), run=runner).status()
    IpmiReader({"address": "10.0.0.5", "password": PASSWORD}, run=Runner(0, "Chassis Power is off\n")).status()
    env = runner.calls[0]["env"]
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "REQUESTS_CA_BUNDLE"}
    assert env["LANG"] == "C.UTF-8" and env["REQUESTS_CA_BUNDLE"] == "/ca.pem"
    assert "controller-secret" not in json.dumps(env)


ENV_HOOK = r"""
import json, os, sys
json.load(sys.stdin)
print(json.dumps({"power": "off", "detail": " ".join(sorted(os.environ))}))
"""


def test_command_hook_runs_with_a_scrubbed_environment(tmp_path, secret_environment):
    script = tmp_path / "hook.py"
    script.write_text(ENV_HOOK)
    detail = CommandReader({"command": [sys.executable, str(script)]}, "w3").status().detail
    names = set(detail.split(": ", 1)[1].split())
    assert "K8S_AUTH_API_KEY" not in names and "HTTPS_PROXY" not in names and "AWS_SECRET_ACCESS_KEY" not in names
    assert "PATH" in names


# -- the password never appears in anything we show ---------------------------------------------------

ECHO_HOOK = r"""
import json, sys
request = json.load(sys.stdin)
if request["action"] == "off":
    sys.stderr.write("login as admin with " + request["password"] + " failed\n")
    sys.exit(1)
print(json.dumps({"power": "on", "detail": "password was " + request["password"]}))
"""


def test_password_never_appears_in_any_detail_or_error(tmp_path, servers):
    shown = []

    def collect(action):
        try:
            result = action()
            shown.append(repr(result))
        except PowerError as e:
            shown.append(str(e))

    echo = f"Failed: login admin/{PASSWORD} refused"
    collect(lambda: FenceAgentReader(FENCE, run=Runner(1, "", echo)).status())
    collect(lambda: FenceAgentReader(FENCE, run=Runner(0, f"Status: ON {PASSWORD}\n")).status())
    collect(lambda: FenceAgentReader(FENCE, run=Runner(1, echo)).power_off())
    collect(lambda: IpmiReader({"address": "10.0.0.5", "password": PASSWORD}, run=Runner(1, "", f"Error: bad password {PASSWORD}")).status())
    collect(lambda: IpmiReader({"address": "10.0.0.5", "password": PASSWORD}, run=Runner(0, f"Chassis Power is {PASSWORD}\n")).status())
    script = tmp_path / "hook.py"
    script.write_text(ECHO_HOOK)
    hook = CommandReader({"command": [sys.executable, str(script)], "password": PASSWORD}, "w3")
    collect(hook.status)
    collect(hook.power_off)
    _bmc, bmc_url = servers({})
    collect(lambda: reader(bmc_url, system_id="w3").status())  # 404
    collect(lambda: reader("http://127.0.0.1:9", system_id="w3").status())  # unreachable
    for config in ({"type": "redfish", "address": f"https://a:{PASSWORD}@b"}, {"type": "manual", "password": PASSWORD}):
        collect(lambda config=config: reader_for(config, "w3", allow_manual=True))
    assert len(shown) == 11
    assert not [text for text in shown if PASSWORD in text], shown


# -- secret-like agent_options values are masked like the password (issue 20 item 8) -------------------

TOKEN = "tok-3f9a1c77e2-never-shown"
SECRET_OPTIONS = {
    "api_token": TOKEN,
    "passwd": "pw-in-options-4711",
    "hexadecimal_kg": "8a6b1c2d3e4f",
    "snmp_priv_passwd": "priv-pass-0815",
    "community": "snmp-community-42",
    "secret_key": "sk-aws-like-value",
    "credential": "cred-value-9",
    "use_token": "1",  # a switch, not a secret: not masked (it would mask every "1")
    "plug": "w3-vm",
}
SECRETS = [value for key, value in SECRET_OPTIONS.items() if key not in ("use_token", "plug")]

TOKEN_HOOK = r"""
import json, sys
request = json.load(sys.stdin)
said = " ".join(str(v) for v in request["options"].values())
if request["action"] == "off":
    sys.stderr.write("cloud refused, sent " + said + "\n")
    sys.exit(1)
print(json.dumps({"power": "off", "detail": "called with " + said, "system_uuid": "4c4c4544-0042-3510-8052-b7c04f4e3232"}))
"""


def test_secret_like_agent_options_are_masked_in_every_detail_and_error(tmp_path):
    """On 08a3975 only the password was masked: a hook or agent that echoed its token put it in the proof
    details, which node_outage writes to the annotation, the Events and the history."""
    from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import confirm_off, verify_identity

    echoed = " ".join(SECRET_OPTIONS.values())
    shown = []

    def collect(action):
        try:
            shown.append(repr(action()))
        except PowerError as e:
            shown.append(str(e))

    fence = dict(FENCE, agent="fence_vmware_soap", system_id=None, agent_options=SECRET_OPTIONS)
    collect(lambda: FenceAgentReader(fence, run=Runner(2, f"Status: OFF {echoed}\n")).status())
    collect(lambda: FenceAgentReader(fence, run=Runner(1, "", f"Failed: login with {echoed}")).status())
    collect(lambda: FenceAgentReader(fence, run=Runner(1, f"Failed: {echoed}\n")).power_off())
    collect(lambda: FenceAgentReader(fence, run=Runner(0, f"w3-vm,{echoed}\n")).identify())
    script = tmp_path / "hook.py"
    script.write_text(TOKEN_HOOK)
    hook = CommandReader({"command": [sys.executable, str(script)], "agent_options": SECRET_OPTIONS}, "w3")
    collect(hook.status)
    collect(hook.power_off)
    node = {"metadata": {"name": "w3"}, "status": {"nodeInfo": {"systemUUID": "4c4c4544-0042-3510-8052-b7c04f4e3232"}}}
    collect(lambda: verify_identity(hook, node))

    class Clock:
        def sleep(self, seconds):
            pass

    collect(lambda: confirm_off(hook, node, Clock(), interval=1))
    assert len(shown) == 8
    leaks = [(secret, text) for text in shown for secret in SECRETS if secret in text]
    assert not leaks, leaks
    assert "1" in shown[0]  # the switch value is left alone


def test_secret_like_keys():
    from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import is_secret_key, secret_values

    for key in ("password", "passwd", "api_token", "apikey", "secret", "credentials", "community", "hexadecimal_kg", "ssh_passphrase"):
        assert is_secret_key(key), key
    for key in ("plug", "ipport", "lanplus", "cipher", "privlvl", "ssl_insecure", "method", "auth", "power_timeout"):
        assert not is_secret_key(key), key
    assert secret_values({"password": "p", "agent_options": {"token": "t", "use_token": "yes", "plug": "7"}}) == ("p", "t")
