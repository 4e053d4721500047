"""Power events end to end into the real ansible-rulebook, from the lab's real Redfish emulator (lab/bmc).

A private lab BMC (own state directory and port, Redfish only, as tests/integration/bmc does) serves systems
named after throwaway containers and trusts the rulebook's certificate (NODEGUARD_BMC_EVENT_CA). Each test
subscribes the rulebook's webhook with a node's own path and token, as playbooks/power_event_subscriptions.yml
does, then kills a container behind the BMC's back: the BMC posts a standard ResourceEvent Event, and
power-events.yml must run node-outage (a recorder here, playbooks/record-power-outage.yml; the real remediation
is tested end to end elsewhere) for the mapped node with the event's time, and nothing for a BMC that is not
mapped or that posts to another node's path without that node's token. Events posted by the test itself with
template syntax in them (a BMC holding its token can post anything) run nothing.
The polling rulebook (power-poll.yml) reads a system of the same BMC with the collection's Redfish reader
and must do the same on the On -> Off change, without the BMC password in its log.

No failover lab is needed: only podman and the lab's BMC emulator.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bmc"))  # the lab BMC test helpers
from bmclib import Bmc, ensure_test_image, podman, start_bmc
from rulebook_process import REPO, RulebookProcess

HERE = Path(__file__).resolve().parent
EDA = REPO / "extensions" / "eda"
RECORDER = HERE / "playbooks" / "record-power-outage.yml"
RUN_TIMEOUT = 300  # generous: the machine may be busy with a lab
HTTP_TIMEOUT = 60
SUBSCRIPTIONS = "/redfish/v1/EventService/Subscriptions"
PREFIX = f"ng-pwrevt-{os.getpid()}"
MAPPED = f"{PREFIX}-mapped"  # mapped; its power-off must run node-outage
DECOY = f"{PREFIX}-decoy"  # mapped, never powered off: an impostor posts to its path
UNKNOWN = f"{PREFIX}-unknown"  # subscribed to its own path, which is not mapped
IMPOSTOR = f"{PREFIX}-impostor"  # subscribed to DECOY's path with its own token
POLLED = f"{PREFIX}-polled"  # read by the polling rulebook
NODES = [MAPPED, DECOY, UNKNOWN, IMPOSTOR, POLLED]
FORGED = f"{PREFIX}-forged"  # mapped, no machine: the test posts Events for it itself


def system(node: str) -> str:
    return f"/redfish/v1/Systems/{node}"


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("records")


@pytest.fixture(scope="module")
def rulebook(tmp_path_factory: pytest.TempPathFactory, records: Path) -> Iterator[RulebookProcess]:
    process = RulebookProcess(
        tmp_path_factory.mktemp("power-events"),
        overrides={
            "nodeguard_outage_playbook": str(RECORDER),
            # every test node is allowed: a refusal here comes from the BMC mapping, not from the allow-list
            "nodeguard_allow_nodes": [*NODES, FORGED],
            "nodeguard_power_event_bmcs": [{"node": node, "system": system(node)} for node in (MAPPED, DECOY, FORGED)],
        },
        env={"NODEGUARD_EDA_RECORD_DIR": str(records)},
        rulebook=EDA / "rulebooks" / "power-events.yml",
        default_vars=EDA / "vars" / "power-events.yml",
    )
    yield process
    process.stop()


@pytest.fixture(scope="module")
def bmc(tmp_path_factory: pytest.TempPathFactory, rulebook: RulebookProcess) -> Iterator[Bmc]:
    """A private lab BMC whose event deliveries trust the rulebook's certificate, and a running container per system."""
    image = ensure_test_image()
    for node in NODES:
        podman("rm", "--force", "--time", "0", node, check=False)
    bmc = start_bmc(tmp_path_factory.mktemp("bmc") / "state", NODES, ipmi=False, extra_env={"NODEGUARD_BMC_EVENT_CA": str(rulebook.cert)})
    try:
        for node in NODES:
            podman("run", "--detach", "--init", "--name", node, image)
        yield bmc
    finally:
        bmc.sh("down", check=False)
        for node in NODES:
            podman("rm", "--force", "--time", "0", node, check=False)


def own_token(rulebook: RulebookProcess, node: str) -> str:
    """The BMC of ``node``'s token, by the documented rule (docs/power-events.md)."""
    return hmac.new(rulebook.bmc_key.encode(), b"nodeguard power events\x00" + node.encode(), hashlib.sha256).hexdigest()


def subscribe(bmc: Bmc, rulebook: RulebookProcess, node: str, path_node: str | None = None) -> str:
    """Subscribe the rulebook's webhook to ``node``'s system, posting to ``path_node``'s path (default its own) with
    ``node``'s own token; returns the subscription URL."""
    body = {
        "Destination": f"https://127.0.0.1:{rulebook.port}/redfish-events/{path_node or node}",
        "Context": f"nodeguard:{path_node or node}",
        "Protocol": "Redfish",
        "EventFormatType": "Event",
        "RegistryPrefixes": ["ResourceEvent"],
        "OriginResources": [{"@odata.id": system(node)}],
        "HttpHeaders": [{"X-Nodeguard-Token": own_token(rulebook, node)}],
    }
    response = requests.post(bmc.base_url + SUBSCRIPTIONS, json=body, auth=bmc.auth, verify=bmc.ca_cert, timeout=HTTP_TIMEOUT)
    assert response.status_code == 201, response.text
    return bmc.base_url + response.headers["Location"]


def unsubscribe(bmc: Bmc, url: str) -> None:
    requests.delete(url, auth=bmc.auth, verify=bmc.ca_cert, timeout=HTTP_TIMEOUT)


def runs(records: Path, node: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(records.glob(f"outage-{node}-*"))]


def wait_for(rulebook: RulebookProcess, predicate, what: str, timeout: float = RUN_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout}s; ansible-rulebook log:\n{rulebook.log()[-6000:]}")
        if rulebook.process.poll() is not None:
            pytest.fail(f"ansible-rulebook exited ({rulebook.process.returncode}):\n{rulebook.log()[-6000:]}")
        time.sleep(0.5)


def parse_time(text: str) -> float:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z", text), text
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_a_mapped_bmc_powering_off_runs_node_outage_with_the_event_time(bmc: Bmc, rulebook: RulebookProcess, records: Path) -> None:
    url = subscribe(bmc, rulebook, MAPPED)
    try:
        before = time.time()
        podman("kill", MAPPED)  # the machine dies; the BMC notices by itself and posts ResourcePoweredOff
        after = time.time()
        wait_for(rulebook, lambda: runs(records, MAPPED), f"node-outage for {MAPPED}")
        (run,) = runs(records, MAPPED)
        assert run["outage_nodes"] == [MAPPED]
        assert run["job_id"] == ""  # node-outage makes its own per run
        assert before - 2 <= parse_time(run["power_event_time"]) <= after + 15  # the BMC's time of the change, UTC

        podman("start", MAPPED)  # ResourcePoweredOn: logged, recovery is node-recover's
        wait_for(rulebook, lambda: f"nodeguard: {MAPPED} powered on (" in rulebook.log(), f"the power-on of {MAPPED} logged")
        assert len(runs(records, MAPPED)) == 1
    finally:
        unsubscribe(bmc, url)


def test_events_of_an_unknown_bmc_or_of_another_nodes_path_run_nothing(bmc: Bmc, rulebook: RulebookProcess, records: Path) -> None:
    urls = [subscribe(bmc, rulebook, UNKNOWN), subscribe(bmc, rulebook, IMPOSTOR, path_node=DECOY)]
    try:
        podman("kill", UNKNOWN)
        podman("kill", IMPOSTOR)
        unknown = (f"nodeguard REFUSED: power event refused, nothing runs for it: endpoint 'redfish-events/{UNKNOWN}' "
                   "does not end with a mapped node (unknown BMC)")
        impostor = (f"nodeguard REFUSED: power event refused, nothing runs for it: the X-Nodeguard-Token header is missing "
                    f"or is not the token of the BMC of node {DECOY} (value not shown)")
        # the refusal is the rule that decided the event: once it is logged, nothing else runs for it
        wait_for(rulebook, lambda: unknown in rulebook.log() and impostor in rulebook.log(), "both refusals logged")
        assert runs(records, UNKNOWN) == [] and runs(records, IMPOSTOR) == [] and runs(records, DECOY) == []
    finally:
        for url in urls:
            unsubscribe(bmc, url)
        podman("start", UNKNOWN, check=False)
        podman("start", IMPOSTOR, check=False)


def redfish_event(node: str, timestamp: str, **changes) -> dict:
    """A ResourcePoweredOff Event for ``node``'s subscription, as the lab BMC posts it."""
    record = {"EventId": f"forged-{time.time_ns()}", "EventTimestamp": timestamp, "MessageSeverity": "OK",
              "Message": f"The resource '{node}' has powered off.", "MessageId": "ResourceEvent.1.3.0.ResourcePoweredOff",
              "MessageArgs": [node], "OriginOfCondition": {"@odata.id": system(node)}, **changes}
    return {"@odata.type": "#Event.v1_7_0.Event", "Id": f"e-{time.time_ns()}", "Name": "Power event",
            "Context": f"nodeguard:{node}", "Events": [record]}


def test_a_forged_event_with_template_syntax_runs_nothing(rulebook: RulebookProcess, records: Path, tmp_path: Path) -> None:
    """A BMC holding its token can post any Event; template syntax anywhere in it must run nothing, and an Event
    without the BMC's token runs nothing either. A clean Event for the same node afterwards is the control: once
    its run is recorded, the forged ones were decided."""
    marker = tmp_path / "injected"
    touch = f"{{{{ lookup('pipe', 'touch {marker}') }}}}"
    forged = [
        redfish_event(FORGED, "2026-11-23T08:00:00Z", Message=touch),
        redfish_event(FORGED, "2026-11-23T08:00:01Z", EventId=touch),
        redfish_event(FORGED, touch),
    ]
    path, own = f"redfish-events/{FORGED}", {"X-Nodeguard-Token": own_token(rulebook, FORGED)}
    for payload in forged:
        assert rulebook.post(payload, path=path, headers=own) == 200
    wrong = [{"X-Nodeguard-Token": own_token(rulebook, MAPPED)}, {"Authorization": f"Bearer {rulebook.bmc_key}"}]
    for headers in wrong:  # another BMC's token; the key itself as a bearer token
        assert rulebook.post(redfish_event(FORGED, "2026-11-23T08:00:02Z"), path=path, headers=headers) == 200
    assert rulebook.post(redfish_event(FORGED, "2026-11-23T09:00:03+01:00"), path=path, headers=own) == 200
    wait_for(rulebook, lambda: runs(records, FORGED), f"the control run for {FORGED}")
    assert not marker.exists(), "a command from the Event ran"
    (run,) = runs(records, FORGED)
    assert run["power_event_time"] == "2026-11-23T08:00:03.999999Z"  # the control's time in UTC, at its second's end
    assert rulebook.log().count("nodeguard REFUSED: power event refused, nothing runs for it: the payload holds template syntax in ") == len(forged)
    assert rulebook.log().count(f"is not the token of the BMC of node {FORGED} (value not shown)") == len(wrong)
    assert rulebook.bmc_key not in rulebook.log() and own_token(rulebook, FORGED) not in rulebook.log()


def test_polling_a_bmc_runs_node_outage_on_the_change_to_off(bmc: Bmc, tmp_path: Path, records: Path) -> None:
    username, password = bmc.auth
    power = {"type": "redfish", "address": bmc.base_url, "system_id": POLLED, "username": username, "password": password,
             "ca_cert": bmc.ca_cert}
    poller = RulebookProcess(
        tmp_path,
        overrides={
            "nodeguard_outage_playbook": str(RECORDER),
            "nodeguard_allow_nodes": [POLLED],
            "nodeguard_power_poll_bmcs": [{"node": POLLED, "power": power}],
            "nodeguard_power_poll_interval": 1,
        },
        env={"NODEGUARD_EDA_RECORD_DIR": str(records)},
        rulebook=EDA / "rulebooks" / "power-poll.yml",
        default_vars=EDA / "vars" / "power-poll.yml",
        ready_line="bmc_power_poll: polling 1 BMCs",
    )
    try:
        wait_for(poller, lambda: f"bmc_power_poll: {POLLED} reads On (first reading, not an event)" in poller.log(), "the first reading")
        before = time.time()
        podman("kill", POLLED)
        wait_for(poller, lambda: runs(records, POLLED), f"node-outage for {POLLED}")
        (run,) = runs(records, POLLED)
        assert run["outage_nodes"] == [POLLED]
        assert before - 1 <= parse_time(run["power_event_time"]) <= time.time() + 1

        podman("start", POLLED)
        wait_for(poller, lambda: f"nodeguard: {POLLED} powered on (" in poller.log(), f"the power-on of {POLLED} logged")
        assert len(runs(records, POLLED)) == 1
        assert password not in poller.log()
    finally:
        poller.stop()
