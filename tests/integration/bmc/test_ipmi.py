"""The lab's IPMI BMCs (OpenIPMI ipmi_sim): chassis power is the node container's power.

Proven with ipmitool and the ClusterLabs fence agent fence_ipmilan, over IPMI 2.0 (lanplus).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import requests
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError, run_process
from ansible_collections.nodeguard.failover.plugins.module_utils.power.fence_agent import FenceAgentReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import verify_identity
from ansible_collections.nodeguard.failover.plugins.module_utils.power.ipmi import IpmiReader
from bmclib import IPMITOOL_PATIENCE, POWERED_OFF, container_status, free_udp_ports, podman
from test_bmc import k8s_node, lab_system_uuid

FENCE_IPMILAN = "/usr/sbin/fence_ipmilan"


def ipmi_power(bmc, node: str) -> str:
    result = bmc.ipmitool(node, "chassis", "power", "status")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def fence_ipmilan(bmc, node: str, action: str, password: str | None = None,
                  port: int | None = None) -> subprocess.CompletedProcess:
    """Run fence_ipmilan as Pacemaker does: options on stdin, so the password is not in argv."""
    ipmi = bmc.endpoints[node]["bmc_ipmi"]
    options = {
        "ip": ipmi["address"], "ipport": port or ipmi["port"], "username": ipmi["username"],
        "password": password or ipmi["password"], "lanplus": "1", "cipher": ipmi["cipher"],
        "action": action,
    }
    if port is None:
        # Patience instead of retransmissions, as the simulator executes every copy of a request
        # (see bmclib.IPMITOOL_PATIENCE). A test of an unreachable BMC keeps the agent's defaults.
        options["ipmitool-timeout"] = IPMITOOL_PATIENCE[1]
    return subprocess.run(
        [FENCE_IPMILAN], input="".join(f"{k}={v}\n" for k, v in options.items()),
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_running_container_reads_on(bmc, node):
    assert ipmi_power(bmc, node) == "Chassis Power is on"


def test_missing_container_reads_off(bmc, absent_node):
    assert ipmi_power(bmc, absent_node) == "Chassis Power is off"


def test_power_off_kills_the_container_and_on_starts_it(bmc, node):
    result = bmc.ipmitool(node, "chassis", "power", "off")
    assert result.returncode == 0, result.stderr
    assert container_status(node) in POWERED_OFF
    assert ipmi_power(bmc, node) == "Chassis Power is off"

    result = bmc.ipmitool(node, "chassis", "power", "on")
    assert result.returncode == 0, result.stderr
    assert container_status(node) == "running"


def test_container_stopped_behind_the_bmc_reads_off(bmc, node):
    podman("stop", "--time", "0", node)
    assert ipmi_power(bmc, node) == "Chassis Power is off"


def test_redfish_and_ipmi_agree(bmc, node):
    response = requests.post(
        f"{bmc.base_url}/redfish/v1/Systems/{node}/Actions/ComputerSystem.Reset",
        json={"ResetType": "ForceOff"}, auth=bmc.auth, verify=bmc.ca_cert, timeout=60,
    )
    assert response.status_code == 204
    assert ipmi_power(bmc, node) == "Chassis Power is off"


def container_starts(node: str, since: str) -> int:
    events = podman("events", "--stream=false", "--since", since, "--filter", f"container={node}",
                    "--filter", "event=start", "--format", "{{.Name}}").stdout
    return events.split().count(node)


def test_power_reset_restarts_the_container_once(bmc, node):
    started_before = podman("container", "inspect", "--format", "{{.State.StartedAt}}", node).stdout
    since = f"{time.time():.3f}"  # podman takes Unix time with a fraction
    result = bmc.ipmitool(node, "chassis", "power", "reset")
    assert result.returncode == 0, result.stderr
    assert container_status(node) == "running"
    assert podman("container", "inspect", "--format", "{{.State.StartedAt}}", node).stdout != started_before
    # A client that retransmitted while the reset ran would have had it executed again.
    assert bmc.ipmitool(node, "chassis", "power", "status").returncode == 0  # later than any queued copy
    assert container_starts(node, since) == 1


def test_power_cycle_leaves_the_container_running_again(bmc, node):
    started_before = podman("container", "inspect", "--format", "{{.State.StartedAt}}", node).stdout
    result = bmc.ipmitool(node, "chassis", "power", "cycle")
    assert result.returncode == 0, result.stderr
    # ipmi_sim powers off at once and back on one second later (each a podman call: slow when busy).
    deadline = time.monotonic() + 120
    while podman("container", "inspect", "--format", "{{.State.StartedAt}}", node).stdout == started_before:
        assert time.monotonic() < deadline, "container not restarted 120 s after power cycle"
        time.sleep(0.2)
    assert container_status(node) == "running"


def test_power_soft_shuts_the_container_down(bmc, node):
    result = bmc.ipmitool(node, "chassis", "power", "soft")
    assert result.returncode == 0, result.stderr
    deadline = time.monotonic() + 180  # podman stop --time 30, then load
    while container_status(node) != "exited":
        assert time.monotonic() < deadline, "container still running 180 s after power soft"
        time.sleep(0.2)


def test_power_on_of_a_missing_container_fails(bmc, absent_node):
    result = bmc.ipmitool(absent_node, "chassis", "power", "on")
    assert result.returncode != 0


@pytest.mark.parametrize("password", ["wrong-password", ""])
def test_wrong_password_is_refused(bmc, node, password):
    result = bmc.ipmitool(node, "chassis", "power", "off", password=password or " ")
    assert result.returncode != 0
    assert container_status(node) == "running"


def test_ipmi_listens_on_loopback_only(bmc):
    port = bmc.endpoints[bmc.nodes[0]]["bmc_ipmi"]["port"]
    sockets = subprocess.run(["ss", "-Hlun", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    assert sockets.split()[3] == f"127.0.0.1:{port}"


def test_fence_ipmilan_status_off_on(bmc, node):
    status = fence_ipmilan(bmc, node, "status")
    assert status.returncode == 0, status.stderr
    assert "Status: ON" in status.stdout

    off = fence_ipmilan(bmc, node, "off")
    assert off.returncode == 0, off.stderr
    assert container_status(node) in POWERED_OFF
    status = fence_ipmilan(bmc, node, "status")
    assert status.returncode == 2 and "Status: OFF" in status.stdout

    on = fence_ipmilan(bmc, node, "on")
    assert on.returncode == 0, on.stderr
    assert container_status(node) == "running"


def test_fence_ipmilan_with_wrong_password_fails(bmc, node):
    result = fence_ipmilan(bmc, node, "off", password="wrong-password")
    assert result.returncode != 0
    assert container_status(node) == "running"


def test_no_secret_in_process_list(bmc):
    password = bmc.auth[1]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            assert password not in cmdline, f"pid {pid} has the BMC password on its command line"


def test_fence_ipmilan_reports_an_unreachable_bmc(bmc, node, record_property):
    # IPMI is UDP: nothing answers, so the agent gives up after its own retries (about 20 s).
    start = time.monotonic()
    result = fence_ipmilan(bmc, node, "status", port=free_udp_ports(1))
    record_property("seconds_until_fence_ipmilan_gives_up", round(time.monotonic() - start, 1))
    assert result.returncode != 0
    assert "Connection timed out" in result.stderr


# --- identity before trust: the system GUID, read by nodeguard's own IPMI reader ----------------

def test_ipmi_identity_is_the_nodes_system_uuid(bmc):
    """ipmi_sim reports the node's systemUUID as its system GUID (SMBIOS byte order, lab/bmc/system_uuid.py):
    it matches that node and no other."""
    node, other = bmc.nodes
    reader = IpmiReader(dict(bmc.endpoints[node]["bmc_ipmi"], timeout=30))
    verdict = verify_identity(reader, k8s_node(node, lab_system_uuid(node)))
    assert verdict.verified, verdict.detail
    wrong = verify_identity(reader, k8s_node(other, lab_system_uuid(other)))
    assert not wrong.ok and "another machine" in wrong.detail


def test_ipmi_identity_reader_refuses_cipher_0_and_lan(bmc):
    config = bmc.endpoints[bmc.nodes[0]]["bmc_ipmi"]
    for changes in ({"cipher": 0}, {"interface": "lan"}):
        with pytest.raises(PowerError, match="refused"):
            IpmiReader(dict(config, **changes))


# --- the collection's fence-agent reader with the real fence_ipmilan (issue 20 item 2) ---------

class Recording:
    """run_process, keeping what each agent run got on stdin and said on stderr."""

    def __init__(self):
        self.runs = []

    def __call__(self, argv, stdin_text, env, timeout):
        rc, out, err = run_process(argv, stdin_text, env, timeout)
        self.runs.append({"argv": argv, "stdin": stdin_text.splitlines(), "err": err})
        return rc, out, err


def ipmilan_reader(bmc, node: str, recording: Recording, **changes) -> FenceAgentReader:
    """fence_ipmilan through nodeguard's fence_agent reader, mapped as the lab's IPMI BMC (cipher suite 3).

    verbose=1 makes the agent log the ipmitool line it runs (password masked by the agent: "-P [set]")."""
    ipmi = bmc.endpoints[node]["bmc_ipmi"]
    config = {
        "type": "fence_agent", "agent": FENCE_IPMILAN, "address": ipmi["address"], "port": ipmi["port"],
        "username": ipmi["username"], "password": ipmi["password"], "cipher": ipmi["cipher"], "timeout": 120,
        "agent_options": {"ipmitool_timeout": IPMITOOL_PATIENCE[1], "verbose": "1"},
    }
    config.update(changes)
    return FenceAgentReader(config, run=recording)


def test_fence_ipmilan_reader_runs_ipmitool_over_lanplus_with_the_mapped_cipher(bmc, node):
    """fence_ipmilan's own default is IPMI v1.5 (-I lan), which this ipmi_sim also accepts (md5): the
    agent's logged ipmitool line shows that the reader made it use lanplus and cipher suite 3."""
    recording = Recording()
    reader = ipmilan_reader(bmc, node, recording)
    assert reader.status().state == "on"
    reader.power_off()
    assert container_status(node) in POWERED_OFF
    assert reader.status().state == "off"
    reader.power_on()
    assert container_status(node) == "running"
    password = bmc.endpoints[node]["bmc_ipmi"]["password"]
    for run in recording.runs:
        assert run["argv"] == [FENCE_IPMILAN]
        assert "lanplus=1" in run["stdin"] and "cipher=3" in run["stdin"]
        assert " -I lanplus " in run["err"] and " -C 3" in run["err"] and " -I lan " not in run["err"], run["err"]
        assert password not in run["err"]


def test_fence_ipmilan_reader_shows_no_identity(bmc, node):
    """An IPMI address is not an identity, and fence_ipmilan lists no UUID: without the opt-out the reading is
    not this node's; with it, it is accepted and says so. (The native ipmi reader reads the GUID, above.)"""
    reader = ipmilan_reader(bmc, node, Recording())
    verdict = verify_identity(reader, k8s_node(node, lab_system_uuid(node)))
    assert not verdict.ok and "address, not an identity" in verdict.detail
    reader.config["identity_unverifiable_reason"] = "lab: one ipmi_sim port per node"
    assert verify_identity(reader, k8s_node(node, lab_system_uuid(node))).opted_out


@pytest.mark.parametrize("options", [{"cipher": "3 chassis power cycle"}, {"cipher": "1"}, {"lanplus": "0"}])
def test_fence_ipmilan_reader_refuses_an_injected_or_weak_option_before_the_agent_runs(bmc, node, options):
    started = podman("container", "inspect", "--format", "{{.State.StartedAt}}", node).stdout
    recording = Recording()
    with pytest.raises(PowerError, match="refused"):
        ipmilan_reader(bmc, node, recording, agent_options=dict(options, ipmitool_timeout=IPMITOOL_PATIENCE[1]))
    assert recording.runs == []
    assert container_status(node) == "running"
    assert podman("container", "inspect", "--format", "{{.State.StartedAt}}", node).stdout == started
