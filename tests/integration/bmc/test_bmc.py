"""The lab BMC is a real Redfish service whose power is the node container's power.

Proven here with the clients the incident playbooks rely on: plain HTTPS with the lab CA,
the ClusterLabs fence agent fence_redfish, and community.general's redfish modules.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest
import requests
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.fence_agent import FenceAgentReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import verify_identity
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish import RedfishReader
from bmclib import POWERED_OFF, REPO, Bmc, container_status, free_port, podman, start_bmc

FENCE_REDFISH = "/usr/sbin/fence_redfish"
# Seconds a request may take: every request checks a bcrypt hash and asks podman, slow on a busy machine.
HTTP_TIMEOUT = 60


def system_url(bmc, node: str) -> str:
    return f"{bmc.base_url}/redfish/v1/Systems/{node}"


def power_state(bmc, node: str) -> str:
    response = requests.get(system_url(bmc, node), auth=bmc.auth, verify=bmc.ca_cert, timeout=HTTP_TIMEOUT)
    response.raise_for_status()
    return response.json()["PowerState"]


def reset(bmc, node: str, reset_type: str) -> requests.Response:
    return requests.post(
        f"{system_url(bmc, node)}/Actions/ComputerSystem.Reset",
        json={"ResetType": reset_type}, auth=bmc.auth, verify=bmc.ca_cert, timeout=60,
    )


def wait_for(predicate, timeout: float, interval: float = 0.2) -> float:
    """Seconds until predicate() held; fails the test after timeout."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            pytest.fail(f"condition not met within {timeout} s")
        time.sleep(interval)
    return time.monotonic() - start


def process_running(pid: int) -> bool:
    """True unless the process is gone or a zombie (exited, waiting for init to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def fence_redfish(bmc, node: str, action: str, port: int | None = None, ca_bundle: str | None = "lab",
                  password: str | None = None) -> subprocess.CompletedProcess:
    """Run fence_redfish as Pacemaker does: options on stdin, so the password is not in argv.

    fence_redfish verifies TLS with python-requests, which honours REQUESTS_CA_BUNDLE.
    """
    username, real_password = bmc.auth
    options = {
        "ip": "127.0.0.1",
        "ipport": str(port or bmc.port),
        "username": username,
        "password": password or real_password,
        "ssl-secure": "1",
        "systems-uri": f"/redfish/v1/Systems/{node}",
        "action": action,
    }
    env = {k: v for k, v in os.environ.items() if k not in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")}
    if ca_bundle == "lab":
        env["REQUESTS_CA_BUNDLE"] = bmc.ca_cert
    return subprocess.run(
        [FENCE_REDFISH], input="".join(f"{k}={v}\n" for k, v in options.items()),
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )


# --- Redfish power follows the container --------------------------------------------------

def test_running_container_reads_on(bmc, node):
    assert power_state(bmc, node) == "On"


def test_missing_container_reads_off(bmc, absent_node):
    assert power_state(bmc, absent_node) == "Off"


def test_force_off_stops_the_container(bmc, node):
    response = reset(bmc, node, "ForceOff")
    assert response.status_code == 204, response.text
    # Forced actions complete before the response: no waiting needed.
    assert container_status(node) in POWERED_OFF
    assert power_state(bmc, node) == "Off"


def test_power_on_starts_the_container(bmc, node):
    podman("stop", "--time", "0", node)
    response = reset(bmc, node, "On")
    assert response.status_code == 204, response.text
    assert container_status(node) == "running"
    assert power_state(bmc, node) == "On"


def test_graceful_shutdown_stops_the_container(bmc, node):
    response = reset(bmc, node, "GracefulShutdown")
    assert response.status_code == 204, response.text
    wait_for(lambda: container_status(node) == "exited", timeout=180)  # podman stop --time 30, then load
    assert power_state(bmc, node) == "Off"


def test_force_restart_leaves_a_new_running_container(bmc, node):
    started_before = podman("container", "inspect", "--format", "{{.State.StartedAt}}", node).stdout
    response = reset(bmc, node, "ForceRestart")
    assert response.status_code == 204, response.text
    started_after = podman("container", "inspect", "--format", "{{.State.StartedAt}}", node).stdout
    assert container_status(node) == "running"
    assert started_after != started_before


def test_container_stopped_behind_the_bmc_reads_off_at_once(bmc, node, record_property):
    podman("stop", "--time", "0", node)
    seconds = wait_for(lambda: power_state(bmc, node) == "Off", timeout=2)
    record_property("seconds_until_redfish_off", round(seconds, 2))


def test_power_on_of_a_missing_container_is_refused(bmc, absent_node):
    response = reset(bmc, absent_node, "On")
    assert response.status_code == 409
    assert "does not exist" in response.text


def test_unsupported_reset_type_is_refused(bmc, node):
    response = reset(bmc, node, "Nmi")
    assert response.status_code == 501
    assert container_status(node) == "running"


def test_unknown_system_is_404(bmc):
    response = requests.get(system_url(bmc, "no-such-node"), auth=bmc.auth, verify=bmc.ca_cert, timeout=HTTP_TIMEOUT)
    assert response.status_code == 404


def test_systems_are_listed_by_node_name(bmc):
    response = requests.get(f"{bmc.base_url}/redfish/v1/Systems", auth=bmc.auth, verify=bmc.ca_cert, timeout=HTTP_TIMEOUT)
    members = [m["@odata.id"] for m in response.json()["Members"]]
    assert members == [f"/redfish/v1/Systems/{n}" for n in sorted(bmc.nodes)]


def odata_links(document):
    if isinstance(document, dict):
        for key, value in document.items():
            if key == "@odata.id" and isinstance(value, str):
                yield value
            else:
                yield from odata_links(value)
    elif isinstance(document, list):
        for value in document:
            yield from odata_links(value)


def test_no_linked_resource_fails_with_a_server_error(bmc, node):
    # Guards the driver subclass against sushy-tools internals it relies on (501 = not implemented, fine).
    seen, todo, errors = set(), ["/redfish/v1/"], []
    while todo:
        path = todo.pop()
        if path in seen or not path.startswith("/redfish/"):
            continue
        seen.add(path)
        response = requests.get(bmc.base_url + path, auth=bmc.auth, verify=bmc.ca_cert, timeout=HTTP_TIMEOUT)
        if response.status_code >= 500 and response.status_code != 501:
            errors.append(f"{path}: {response.status_code} {response.text[:200]}")
        elif response.ok:
            todo.extend(odata_links(response.json()))
    assert f"/redfish/v1/Systems/{node}" in seen
    assert errors == []


# --- authentication and TLS ---------------------------------------------------------------

@pytest.mark.parametrize("auth", [None, ("nodeguard-lab", "wrong-password"), ("someone-else", "x")])
def test_wrong_or_missing_credentials_get_401(bmc, node, auth):
    response = requests.get(system_url(bmc, node), auth=auth, verify=bmc.ca_cert, timeout=HTTP_TIMEOUT)
    assert response.status_code == 401
    response = requests.post(
        f"{system_url(bmc, node)}/Actions/ComputerSystem.Reset",
        json={"ResetType": "ForceOff"}, auth=auth, verify=bmc.ca_cert, timeout=HTTP_TIMEOUT,
    )
    assert response.status_code == 401
    assert container_status(node) == "running"


def test_certificate_is_not_trusted_without_the_lab_ca(bmc, node):
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(system_url(bmc, node), auth=bmc.auth, verify=True, timeout=HTTP_TIMEOUT)


def test_certificate_names_the_loopback_address(bmc):
    text = subprocess.run(
        ["openssl", "x509", "-noout", "-text", "-in", str(bmc.state_dir / "server.crt")],
        capture_output=True, text=True, check=True,
    ).stdout
    assert "IP Address:127.0.0.1" in text


# --- bmc.sh: endpoints, secrets, idempotence, down -----------------------------------------

def test_endpoints_describe_every_node(bmc):
    endpoints = bmc.endpoints
    assert sorted(endpoints) == sorted(bmc.nodes)
    ipmi_ports = set()
    for node, entry in endpoints.items():
        redfish, ipmi = entry["bmc"], entry["bmc_ipmi"]
        assert redfish["type"] == "redfish"
        assert redfish["address"] == f"https://127.0.0.1:{bmc.port}"
        assert redfish["system_id"] == node
        assert redfish["ca_cert"] == bmc.ca_cert
        assert redfish["username"] and len(redfish["password"]) == 16
        assert ipmi["address"] == "127.0.0.1"
        assert (ipmi["username"], ipmi["password"]) == (redfish["username"], redfish["password"])
        ipmi_ports.add(ipmi["port"])
    assert len(ipmi_ports) == len(bmc.nodes)


@pytest.mark.parametrize("secret", ["credentials.json", "htpasswd", "endpoints.json", "server.key", "ipmi/{node}/lan.conf"])
def test_secrets_are_private(bmc, secret):
    mode = stat.S_IMODE((bmc.state_dir / secret.format(node=bmc.nodes[0])).stat().st_mode)
    assert mode == 0o600
    assert stat.S_IMODE(bmc.state_dir.stat().st_mode) == 0o700


def test_ca_key_is_not_kept(bmc):
    # Only the server key remains: nobody can mint another certificate the lab CA vouches for.
    assert [key.name for key in bmc.state_dir.glob("*.key")] == ["server.key"]


def test_up_again_changes_nothing(bmc):
    services = ["redfish", *(f"ipmi-{node}" for node in bmc.nodes)]
    pids, endpoints = [bmc.pid(s) for s in services], bmc.endpoints
    result = bmc.sh("up", *bmc.nodes)
    assert result.stdout.count("already up") == len(services)
    assert [bmc.pid(s) for s in services] == pids
    assert bmc.endpoints == endpoints


def test_status_shows_power_per_node(bmc, node, absent_node):
    result = bmc.sh("status")
    lines = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[2:]}
    assert lines[node] == ["On", "on", "running"]
    assert lines[absent_node] == ["Off", "off", "absent"]


def test_down_leaves_nothing_behind(tmp_path):
    own = start_bmc(tmp_path / "state", ["ng-bmctest-down"])
    pids = [own.pid("redfish"), own.pid("ipmi-ng-bmctest-down")]
    own.sh("down")
    assert [pid for pid in pids if process_running(pid)] == []
    assert not own.state_dir.exists()
    assert own.sh("status", check=False).returncode == 3
    own.sh("down")  # a second down is fine


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        own = Bmc(state_dir=tmp_path / "state", port=squatter.getsockname()[1], ipmi_port=0, nodes=["ng-bmctest-p"])
        result = own.sh("up", *own.nodes, check=False)
    assert result.returncode != 0
    assert "redfish exited" in result.stderr
    assert "Address already in use" in result.stderr
    assert list((own.state_dir / "pids").glob("*.pid")) == []
    own.sh("down")


def test_reconfigured_nodes_get_new_systems(tmp_path):
    own = start_bmc(tmp_path / "state", ["ng-bmctest-r1"])
    try:
        redfish_pid, ipmi_pid, password = own.pid(), own.pid("ipmi-ng-bmctest-r1"), own.auth[1]
        own.nodes = ["ng-bmctest-r1", "ng-bmctest-r2"]
        own.sh("up", *own.nodes)
        assert own.pid() != redfish_pid  # new system list
        assert own.pid("ipmi-ng-bmctest-r1") == ipmi_pid  # its simulator's config did not change
        assert sorted(own.endpoints) == own.nodes
        assert own.auth[1] == password  # credentials survive a reconfiguration
        assert power_state(own, "ng-bmctest-r2") == "Off"
        assert own.ipmitool("ng-bmctest-r2", "chassis", "power", "status").stdout.strip() == "Chassis Power is off"

        own.nodes = ["ng-bmctest-r2"]
        own.sh("up", *own.nodes)
        assert not (own.state_dir / "pids" / "ipmi-ng-bmctest-r1.pid").exists()
        assert not process_running(ipmi_pid)
    finally:
        own.sh("down", check=False)


# --- ClusterLabs fence agent -------------------------------------------------------------

def test_fence_redfish_status_off_on(bmc, node):
    status = fence_redfish(bmc, node, "status")
    assert status.returncode == 0, status.stderr
    assert "Status: ON" in status.stdout

    off = fence_redfish(bmc, node, "off")
    assert off.returncode == 0, off.stderr
    assert container_status(node) in POWERED_OFF
    status = fence_redfish(bmc, node, "status")
    # Fence agents exit 2 for "status: off".
    assert status.returncode == 2 and "Status: OFF" in status.stdout

    on = fence_redfish(bmc, node, "on")
    assert on.returncode == 0, on.stderr
    assert container_status(node) == "running"


def test_fence_redfish_verifies_the_certificate(bmc, node):
    result = fence_redfish(bmc, node, "status", ca_bundle=None)
    assert result.returncode != 0
    assert "CERTIFICATE_VERIFY_FAILED" in result.stderr


def test_fence_redfish_with_wrong_password_fails(bmc, node):
    result = fence_redfish(bmc, node, "off", password="wrong-password")
    assert result.returncode != 0
    assert container_status(node) == "running"


def test_fence_redfish_reports_an_unreachable_bmc(bmc, node):
    result = fence_redfish(bmc, node, "status", port=free_port())
    assert result.returncode != 0
    assert "Connection refused" in result.stderr


# --- community.general -------------------------------------------------------------------

def run_redfish_playbook(bmc, node, tmp_path, expect_before, power_off, expect_after):
    # Extra vars in a private file: the password stays out of the process list.
    extra_vars = tmp_path / "vars.json"
    extra_vars.write_text(json.dumps({
        "bmc": bmc.endpoints[node]["bmc"], "expect_before": expect_before,
        "power_off": power_off, "expect_after": expect_after,
    }))
    extra_vars.chmod(0o600)
    return subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), str(REPO / "tests/integration/bmc/redfish_power.yml"),
         "-e", f"@{extra_vars}"],
        cwd=REPO, env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")},
        capture_output=True, text=True, timeout=300, check=False,
    )


def test_community_general_reads_power_and_powers_off(bmc, node, tmp_path):
    result = run_redfish_playbook(bmc, node, tmp_path, "On", True, "Off")
    assert result.returncode == 0, result.stdout + result.stderr
    assert container_status(node) in POWERED_OFF


def test_community_general_sees_a_wrong_expectation(bmc, node, tmp_path):
    # The playbook's check can fail: a running node does not read Off.
    result = run_redfish_playbook(bmc, node, tmp_path, "Off", False, "Off")
    assert result.returncode != 0
    assert "reads On, expected Off" in result.stdout


# --- identity before trust and transport, with nodeguard's own Redfish reader -----------------

def lab_system_uuid(node: str) -> str:
    """The UUID a lab worker reports as systemUUID (workers.sh writes it from lab/bmc/system_uuid.py)."""
    result = subprocess.run(["python3", str(REPO / "lab" / "bmc" / "system_uuid.py"), node],
                            capture_output=True, text=True, check=True, timeout=30)
    return result.stdout.strip()


def k8s_node(name: str, system_uuid: str) -> dict:
    return {"metadata": {"name": name}, "status": {"nodeInfo": {"systemUUID": system_uuid}}}


def redfish_reader(bmc, node: str, **changes):
    return RedfishReader(dict(bmc.endpoints[node]["bmc"], timeout=HTTP_TIMEOUT, **changes))


def test_redfish_identity_matches_the_nodes_system_uuid(bmc):
    node = bmc.nodes[0]
    verdict = verify_identity(redfish_reader(bmc, node), k8s_node(node, lab_system_uuid(node)))
    assert verdict.verified, verdict.detail
    assert lab_system_uuid(node) in verdict.detail


def test_redfish_identity_of_another_nodes_bmc_is_refused(bmc):
    """A node mapped to another node's system: the BMC answers, but for another machine."""
    node, other = bmc.nodes
    reader = redfish_reader(bmc, other, identity_unverifiable_reason="not a way around a mismatch")
    verdict = verify_identity(reader, k8s_node(node, lab_system_uuid(node)))
    assert not verdict.ok and "another machine" in verdict.detail


def test_redfish_identity_without_system_id_on_a_bmc_with_several_systems_is_refused(bmc):
    node = bmc.nodes[0]
    verdict = verify_identity(redfish_reader(bmc, node, system_id=None), k8s_node(node, lab_system_uuid(node)))
    assert not verdict.ok and "has 2 systems; set system_id" in verdict.detail


def test_redfish_transport_refuses_plain_http_and_userinfo(bmc):
    node = bmc.nodes[0]
    with pytest.raises(PowerError, match="allow_insecure_http"):
        redfish_reader(bmc, node, address=bmc.base_url.replace("https://", "http://"))
    user, password = bmc.auth
    with pytest.raises(PowerError, match="user information") as caught:
        redfish_reader(bmc, node, address=bmc.base_url.replace("https://", f"https://{user}:{password}@"))
    assert password not in str(caught.value)


def test_redfish_transport_errors_never_show_the_password(bmc, node):
    _user, password = bmc.auth
    messages = []
    for changes in ({"password": password + "x"}, {"system_id": "no-such-node"}, {"address": f"https://127.0.0.1:{free_port()}"},
                    {"ca_cert": None}):
        with pytest.raises(PowerError) as caught:
            redfish_reader(bmc, node, **changes).status()
        messages.append(str(caught.value))
    reading = redfish_reader(bmc, node).status()
    messages.append(repr(reading))
    assert reading.state == "on"
    assert not [m for m in messages if password in m], messages


# --- the collection's fence-agent reader with the real fence_redfish (issue 20 item 2) ------------

def test_fence_redfish_reader_reads_power_but_its_system_id_is_no_identity(bmc, node):
    """fence_redfish reads the same system as the native reader, but a system_id is an address (here the node's
    name; on real BMCs System.Embedded.1, 1 or Self, the same on every BMC of a vendor) and the agent reports no
    UUID: the reading is not shown to be this node's without the opt-out. On 08a3975 it counted as identity."""
    config = dict(bmc.endpoints[node]["bmc"], type="fence_agent", agent=FENCE_REDFISH, timeout=HTTP_TIMEOUT * 2)
    reader = FenceAgentReader(config)
    assert reader.status().state == "on"
    expected = k8s_node(node, lab_system_uuid(node))
    verdict = verify_identity(reader, expected)
    assert not verdict.ok and "address, not an identity" in verdict.detail
    assert verify_identity(redfish_reader(bmc, node), expected).verified  # the native reader reads the UUID
    reader.config["identity_unverifiable_reason"] = "lab: fence_redfish, mapping reviewed"
    assert verify_identity(reader, expected).opted_out
