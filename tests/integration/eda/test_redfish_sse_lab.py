"""The event source nodeguard.failover.redfish_sse against the lab's Redfish emulator (lab/bmc, its EventService
Server-Sent Events stream, lab/bmc/sse_stream.py), with throwaway containers as the machines.

- A BMC restart mid-stream: the source sees its stream end, says it falls back to polling, reconnects with
  Last-Event-ID once the BMC is back, and reports the power-off that happened while the BMC was down, once.
  The stream itself replays the events it kept after a Last-Event-ID, also across the restart.
- The fall-back: a BMC whose stream opens and then says nothing (NODEGUARD_BMC_SSE_STALL) makes the source say
  that it falls back to polling; a power-off is then seen by a reading.
- bmcweb's own power events (issue 38 item 1): the OpenBMC personality streams DCPowerOff/DCPowerOn as bmcweb's
  event-log records, without OriginOfCondition, while keep-alives keep the stream alive; the source keeps them for
  the BMC's only system, from the stream (source sse), not from a reading.

The source runs in this process, as ansible-rulebook runs it (its Stream threads, with the collection's Redfish
client: verified TLS against the lab CA, basic auth to the configured origin). No failover lab is needed.
"""

from __future__ import annotations

import json
import logging
import os
import runpy
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bmc"))  # the lab BMC test helpers
from bmclib import Bmc, ensure_test_image, podman, start_bmc
from rulebook_process import REPO

SOURCE = REPO / "extensions" / "eda" / "plugins" / "event_source" / "redfish_sse.py"
PREFIX = f"ng-sse-{os.getpid()}"
TIMEOUT = 120


@pytest.fixture(scope="module")
def test_image() -> str:
    return ensure_test_image()


@pytest.fixture(scope="module")
def source() -> dict:
    return runpy.run_path(str(SOURCE))


def wait_for(predicate, what: str, timeout: float = TIMEOUT, log=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what}: not within {timeout}s" + (f"\nsource log:\n{log.text()}" if log else ""))


class Log(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def text(self) -> str:
        return "\n".join(self.lines)


class Running:
    """The source's streams for ``nodes`` of ``bmc``, in threads; its events and its log."""

    def __init__(self, source: dict, bmc: Bmc, nodes: list[str], **settings) -> None:
        self.events: list[dict] = []
        self.log = Log()
        self.logger = logging.getLogger("nodeguard.failover.redfish_sse")
        self.logger.addHandler(self.log)
        self.logger.setLevel(logging.DEBUG)
        api = source["_import_collection"]()
        args = {"bmcs": [{"node": node, "power": bmc.endpoints[node]["bmc"]} for node in nodes], **settings}
        groups, checked = source["checked_config"](args, api)
        self.stop = threading.Event()
        self.threads = []
        for session, members in groups:
            stream = source["Stream"](api, session, members, checked, self.events.append)
            thread = threading.Thread(target=stream.run, args=(self.stop,), daemon=True)
            thread.start()
            self.threads.append(thread)
        self.password = bmc.auth[1]

    def states(self) -> list[tuple[str, str, str]]:
        return [(e["nodeguard_power_event"]["node"], e["nodeguard_power_event"]["state"], e["nodeguard_power_event"]["source"]) for e in self.events]

    def close(self) -> None:
        self.stop.set()
        self.logger.removeHandler(self.log)
        assert self.password not in self.log.text() and self.password not in repr(self.events)


def reset(bmc: Bmc, node: str, reset_type: str) -> None:
    system = bmc.endpoints[node]["bmc"]["system_id"]
    response = requests.post(
        f"{bmc.base_url}/redfish/v1/Systems/{system}/Actions/ComputerSystem.Reset",
        json={"ResetType": reset_type},
        auth=bmc.auth,
        verify=bmc.ca_cert,
        timeout=60,
    )
    assert response.status_code in (200, 202, 204), response.text


def stop_redfish(bmc: Bmc) -> None:
    pid = bmc.pid()
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower(), "the BMC stopped", 30)


def kept_events(bmc: Bmc, last_event_id: str, count: int) -> list[str]:
    """The first ``count`` events the stream replays after ``last_event_id`` (their id lines)."""
    with requests.get(
        f"{bmc.base_url}/redfish/v1/EventService/SSE", headers={"Last-Event-ID": last_event_id}, auth=bmc.auth, verify=bmc.ca_cert, stream=True, timeout=30
    ) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        ids = []
        for line in response.iter_lines(decode_unicode=True):
            if line.startswith("id: "):
                ids.append(line[4:])
                if len(ids) == count:
                    return ids
    return ids


@pytest.fixture
def machine(test_image: str) -> Iterator[str]:
    name = f"{PREFIX}-a"
    podman("rm", "--force", "--time", "0", name, check=False)
    podman("run", "--detach", "--init", "--name", name, test_image)
    yield name
    podman("rm", "--force", "--time", "0", name, check=False)


@pytest.fixture
def sse_bmc(tmp_path: Path, machine: str) -> Iterator[Bmc]:
    bmc = start_bmc(tmp_path / "state", [machine], ipmi=False, extra_env={"NODEGUARD_BMC_SSE_KEEPALIVE": "2"})
    yield bmc
    bmc.sh("down", check=False)


def test_a_bmc_restart_mid_stream_resumes_and_loses_no_power_off(source: dict, sse_bmc: Bmc, machine: str) -> None:
    service = requests.get(f"{sse_bmc.base_url}/redfish/v1/EventService", auth=sse_bmc.auth, verify=sse_bmc.ca_cert, timeout=30).json()
    assert service["ServerSentEventUri"] == "/redfish/v1/EventService/SSE"
    running = Running(source, sse_bmc, [machine], silence_seconds=10, poll_interval=1, reconnect_max=4)
    try:
        wait_for(lambda: f"{machine} reads On (first reading" in running.log.text(), "the source's first reading", log=running.log)
        reset(sse_bmc, machine, "ForceOff")
        wait_for(lambda: (machine, "Off", "sse") in running.states(), "the power-off from the stream", log=running.log)
        reset(sse_bmc, machine, "On")
        wait_for(lambda: (machine, "On", "sse") in running.states(), "the power-on from the stream", log=running.log)
        assert running.states() == [(machine, "Off", "sse"), (machine, "On", "sse")]

        stop_redfish(sse_bmc)
        podman("kill", machine)  # powered off while its BMC is down: no Event will ever say so
        wait_for(lambda: "falling back to polling" in running.log.text(), "the source saying it falls back", log=running.log)
        sse_bmc.sh("up", machine)
        wait_for(lambda: "event stream open again, resuming after event 2; polling stops" in running.log.text(), "the resumed stream", log=running.log)
        wait_for(lambda: (machine, "Off", "poll") in running.states(), "the power-off seen by the reading on reconnect", log=running.log)
        time.sleep(3)
        assert running.states() == [(machine, "Off", "sse"), (machine, "On", "sse"), (machine, "Off", "poll")]
    finally:
        running.close()
    # the stream kept its events across the restart and replays those after a Last-Event-ID
    assert kept_events(sse_bmc, "0", 2) == ["1", "2"]
    assert kept_events(sse_bmc, "1", 1) == ["2"]


def test_a_silent_stream_falls_back_to_polling_and_a_power_off_is_still_seen(source: dict, tmp_path: Path, machine: str) -> None:
    bmc = start_bmc(tmp_path / "state", [machine], ipmi=False, extra_env={"NODEGUARD_BMC_SSE_STALL": "1"})
    try:
        running = Running(source, bmc, [machine], silence_seconds=5, poll_interval=1, reconnect_max=30)
        try:
            wait_for(lambda: f"{machine} reads On (first reading" in running.log.text(), "the source's first reading", log=running.log)
            wait_for(
                lambda: "no event or keep-alive for 5 s; falling back to polling every 1 s" in running.log.text(),
                "the source saying it falls back",
                log=running.log,
            )
            podman("kill", machine)
            wait_for(lambda: (machine, "Off", "poll") in running.states(), "the power-off seen by polling", log=running.log)
            assert running.states() == [(machine, "Off", "poll")]
        finally:
            running.close()
    finally:
        bmc.sh("down", check=False)


def test_the_lab_managers_name_their_service_root(sse_bmc: Bmc, machine: str) -> None:
    """sushy-tools says ServiceEntryPointUUID null; DMTF's protocol validator stops on it (docs/redfish-conformance.md)."""

    def get(path: str) -> dict:
        return requests.get(f"{sse_bmc.base_url}{path}", auth=sse_bmc.auth, verify=sse_bmc.ca_cert, timeout=30).json()

    root = get("/redfish/v1/")
    (member,) = get("/redfish/v1/Managers")["Members"]
    assert get(member["@odata.id"])["ServiceEntryPointUUID"] == root["UUID"]


def test_bmcwebs_power_off_without_origin_is_reported_from_the_stream(source: dict, sse_bmc: Bmc, machine: str) -> None:
    (sse_bmc.state_dir / "event-personality").write_text("openbmc\n")  # read at each event: no restart needed
    running = Running(source, sse_bmc, [machine], silence_seconds=10, poll_interval=1, reconnect_max=4)
    try:
        wait_for(lambda: f"{machine} reads On (first reading" in running.log.text(), "the source's first reading", log=running.log)
        reset(sse_bmc, machine, "ForceOff")
        wait_for(lambda: (machine, "Off", "sse") in running.states(), "bmcweb's DCPowerOff from the stream", log=running.log)
        reset(sse_bmc, machine, "On")
        wait_for(lambda: (machine, "On", "sse") in running.states(), "bmcweb's DCPowerOn from the stream", log=running.log)
        assert running.states() == [(machine, "Off", "sse"), (machine, "On", "sse")]
        assert "falling back" not in running.log.text() and "dropped" not in running.log.text()
    finally:
        running.close()
    replayed = requests.get(
        f"{sse_bmc.base_url}/redfish/v1/EventService/SSE", headers={"Last-Event-ID": "0"}, auth=sse_bmc.auth, verify=sse_bmc.ca_cert, stream=True, timeout=30
    )
    with replayed:
        data = next(line for line in replayed.iter_lines(decode_unicode=True) if line.startswith("data: "))
    (record,) = json.loads(data[6:])["Events"]
    assert record["MessageId"].startswith("OpenBMC.0.") and "OriginOfCondition" not in record  # bmcweb's shape
