"""The lab BMC's Redfish EventService: subscriptions, and a standard Event on every power change.

A private BMC (own state directory and port, Redfish only) serves two systems named after test
containers; it is told to trust the CA of an HTTPS receiver that runs inside this test. Power is
changed through Redfish and behind the BMC's back (podman kill / start), and the receiver must
get the Events a subscriber of the system asked for, with its header, and nothing else.
"""

from __future__ import annotations

import datetime
import http.server
import json
import os
import re
import socket
import ssl
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from bmclib import POWERED_OFF, Bmc, container_status, free_port, podman, start_bmc

HTTP_TIMEOUT = 60
# Seconds from a power change to its Event at the receiver; the watcher notices within a fraction
# of a second, the rest is a busy 2-core machine (podman, TLS handshakes).
DELIVERY_TIMEOUT = 15
TOKEN = "s3cr3t-bearer-token-for-the-bmc-event-test"  # must never show in the BMC's log
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
SUBSCRIPTIONS = "/redfish/v1/EventService/Subscriptions"
HOOK_PATH = "/hook-path-may-carry-a-secret"  # nor is the destination's path logged


# --- an HTTPS receiver with a CA of its own ------------------------------------------------------------

def make_ca_and_server_cert(directory: Path, name: str, san: str) -> tuple[Path, Path, Path]:
    """(ca.crt, server.crt, server.key) of a fresh CA that signed one server certificate for `san`."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = directory / "ca.key", directory / "ca.crt"
    key, csr, crt, ext = (directory / f"server.{suffix}" for suffix in ("key", "csr", "crt", "ext"))

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(ca_key), "-out", str(ca_crt), "-days", "2", "-subj", f"/CN={name} CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={name}")
    ext.write_text(f"subjectAltName={san}\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key), "-CAcreateserial",
            "-days", "2", "-extfile", str(ext), "-out", str(crt))
    return ca_crt, crt, key


class Receiver:
    """Records every POST (path, headers, JSON body); answers with the queued statuses, then 200."""

    def __init__(self, cert: Path, key: Path):
        self.posts: list[dict] = []
        self.statuses: list[int] = []
        self._cond = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver._cond:
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.posts.append({"path": self.path, "headers": dict(self.headers),
                                           "body": json.loads(body), "status": status, "at": time.time()})
                    receiver._cond.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str = HOOK_PATH) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def events(self, context: str) -> list[dict]:
        """The delivered Event records (with the POST's headers) of one subscription, in order."""
        with self._cond:
            return [{**record, "_headers": post["headers"], "_post": post["body"]}
                    for post in self.posts if post["body"].get("Context") == context and post["status"] == 200
                    for record in post["body"]["Events"]]

    def wait_for_event(self, context: str, message_id: str, after: int = 0) -> dict:
        """The first record with message_id among the subscription's records from index `after` on."""
        deadline = time.monotonic() + DELIVERY_TIMEOUT
        with self._cond:
            while True:
                found = [r for r in self.events(context)[after:] if r["MessageId"] == message_id]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail(f"no {message_id} for {context} within {DELIVERY_TIMEOUT} s; got {self.posts}")
                self._cond.wait(left)


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> dict[str, tuple[Path, Path, Path]]:
    base = tmp_path_factory.mktemp("receiver-tls")
    return {
        "trusted": make_ca_and_server_cert(base / "trusted", "event receiver", "IP:127.0.0.1"),
        "untrusted": make_ca_and_server_cert(base / "untrusted", "someone else", "IP:127.0.0.1"),
    }


@pytest.fixture(scope="module")
def receiver(certs) -> Iterator[Receiver]:
    _ca, cert, key = certs["trusted"]
    receiver = Receiver(cert, key)
    yield receiver
    receiver.server.shutdown()


@pytest.fixture(scope="module")
def events_bmc(tmp_path_factory, certs) -> Iterator[Bmc]:
    """A private Redfish BMC (no IPMI) that trusts the receiver's CA (NODEGUARD_BMC_EVENT_CA)."""
    prefix = f"ng-bmcevt-{os.getpid()}"
    nodes = [f"{prefix}-a", f"{prefix}-b"]
    bmc = start_bmc(tmp_path_factory.mktemp("bmc-events") / "state", nodes, ipmi=False,
                    extra_env={"NODEGUARD_BMC_EVENT_CA": str(certs["trusted"][0])})
    try:
        yield bmc
    finally:
        bmc.sh("down", check=False)
        for node in nodes:
            podman("rm", "--force", "--time", "0", node, check=False)


@pytest.fixture
def running(events_bmc: Bmc, test_image: str, receiver: Receiver) -> Iterator[str]:
    """A fresh running container for the BMC's first system, whose power-on the BMC has already announced
    (to a subscription of its own), so a test's subscriptions get only the changes the test makes."""
    name = events_bmc.nodes[0]
    podman("rm", "--force", "--time", "0", name, check=False)
    probe: list[str] = []
    context = f"probe:{time.time()}"
    assert subscribe(events_bmc, probe, **standard_body(receiver, name, context)).status_code == 201
    try:
        podman("run", "--detach", "--init", "--name", name, test_image)
        receiver.wait_for_event(context, "ResourceEvent.1.3.0.ResourcePoweredOn")
    finally:
        requests.delete(probe[0], auth=events_bmc.auth, verify=events_bmc.ca_cert, timeout=HTTP_TIMEOUT)
    try:
        yield name
    finally:
        podman("rm", "--force", "--time", "0", name, check=False)


@pytest.fixture
def subscriptions(events_bmc: Bmc) -> Iterator[list[str]]:
    """Subscription URLs a test created; deleted afterwards."""
    created: list[str] = []
    yield created
    for url in created:
        requests.delete(url, auth=events_bmc.auth, verify=events_bmc.ca_cert, timeout=HTTP_TIMEOUT)


# --- helpers ------------------------------------------------------------------------------------------

def get(bmc: Bmc, path: str) -> requests.Response:
    return requests.get(bmc.base_url + path, auth=bmc.auth, verify=bmc.ca_cert, timeout=HTTP_TIMEOUT)


def subscribe(bmc: Bmc, created: list[str], **body) -> requests.Response:
    response = requests.post(bmc.base_url + SUBSCRIPTIONS, json=body, auth=bmc.auth, verify=bmc.ca_cert,
                             timeout=HTTP_TIMEOUT)
    if response.status_code == 201:
        created.append(bmc.base_url + response.headers["Location"])
    return response


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def podman_events_children(parent: int) -> list[int]:
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat_file.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == parent and cmdline[:2] == [b"podman", b"events"]:
            found.append(int(stat_file.parent.name))
    return found


def system_path(node: str) -> str:
    return f"/redfish/v1/Systems/{node}"


def reset(bmc: Bmc, node: str, reset_type: str) -> None:
    response = requests.post(f"{bmc.base_url}{system_path(node)}/Actions/ComputerSystem.Reset",
                             json={"ResetType": reset_type}, auth=bmc.auth, verify=bmc.ca_cert, timeout=60)
    assert response.status_code == 204, response.text


def standard_body(receiver: Receiver, node: str, context: str, **changes) -> dict:
    body = {
        "Destination": receiver.url(),
        "Context": context,
        "Protocol": "Redfish",
        "EventFormatType": "Event",
        "RegistryPrefixes": ["ResourceEvent"],
        "OriginResources": [{"@odata.id": system_path(node)}],
        "HttpHeaders": [{"Authorization": f"Bearer {TOKEN}"}],
    }
    body.update(changes)
    return body


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def assert_standard_event(record: dict, node: str, context: str, message_id: str, severity: str) -> None:
    post = record["_post"]
    assert post["@odata.type"].startswith("#Event.")
    assert post["Context"] == context
    assert post["Id"]
    assert record["MessageId"] == message_id
    assert record["MessageSeverity"] == severity
    assert record["OriginOfCondition"] == {"@odata.id": system_path(node)}
    assert record["MessageArgs"] == [node]  # ResourceEvent 1.3.0: the resource's name
    assert record["Message"]
    assert re.fullmatch(r"[A-Za-z0-9._:-]{1,64}", record["EventId"])
    assert RFC3339.fullmatch(record["EventTimestamp"]), record["EventTimestamp"]
    assert parse_time(record["EventTimestamp"]).utcoffset() == datetime.timedelta(0)
    headers = {name.lower(): value for name, value in record["_headers"].items()}
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["content-type"] == "application/json"


# --- the resources ------------------------------------------------------------------------------------

def test_event_service_is_standard_and_linked_from_the_root(events_bmc):
    service = get(events_bmc, "/redfish/v1/EventService")
    assert service.status_code == 200
    document = service.json()
    assert document["@odata.id"] == "/redfish/v1/EventService"
    assert document["Id"] == "EventService"
    assert document["ServiceEnabled"] is True
    assert document["EventFormatTypes"] == ["Event"]
    assert document["RegistryPrefixes"] == ["ResourceEvent"]
    assert document["Subscriptions"] == {"@odata.id": SUBSCRIPTIONS}
    root = requests.get(events_bmc.base_url + "/redfish/v1/", verify=events_bmc.ca_cert, timeout=HTTP_TIMEOUT)
    assert root.json()["EventService"] == {"@odata.id": "/redfish/v1/EventService"}
    # Like every resource but the root: no credentials, no answer.
    assert requests.get(events_bmc.base_url + SUBSCRIPTIONS, verify=events_bmc.ca_cert,
                        timeout=HTTP_TIMEOUT).status_code == 401


def test_subscriptions_create_list_read_delete(events_bmc, receiver, subscriptions):
    node = events_bmc.nodes[0]
    created = subscribe(events_bmc, subscriptions, **standard_body(receiver, node, f"nodeguard:{node}"))
    assert created.status_code == 201, created.text
    location = created.headers["Location"]
    sub_id = location.rsplit("/", 1)[1]
    assert location == f"{SUBSCRIPTIONS}/{sub_id}"
    expected = {
        "@odata.id": location, "Id": sub_id, "Destination": receiver.url(), "Context": f"nodeguard:{node}",
        "Protocol": "Redfish", "EventFormatType": "Event", "RegistryPrefixes": ["ResourceEvent"],
        "OriginResources": [{"@odata.id": system_path(node)}], "HttpHeaders": [],
    }
    assert created.json().items() >= expected.items()

    collection = get(events_bmc, SUBSCRIPTIONS).json()
    assert {"@odata.id": location} in collection["Members"]
    assert collection["Members@odata.count"] == len(collection["Members"])

    read = get(events_bmc, location)
    assert read.status_code == 200
    assert read.json().items() >= expected.items()
    # HttpHeaders are write-only: neither the creation's answer nor any read shows the token.
    assert TOKEN not in created.text + read.text + json.dumps(collection)

    deleted = requests.delete(events_bmc.base_url + location, auth=events_bmc.auth, verify=events_bmc.ca_cert,
                              timeout=HTTP_TIMEOUT)
    assert deleted.status_code == 204
    assert get(events_bmc, location).status_code == 404
    assert {"@odata.id": location} not in get(events_bmc, SUBSCRIPTIONS).json()["Members"]
    again = requests.delete(events_bmc.base_url + location, auth=events_bmc.auth, verify=events_bmc.ca_cert,
                            timeout=HTTP_TIMEOUT)
    assert again.status_code == 404


@pytest.mark.parametrize("change", [
    {"Destination": "http://127.0.0.1:9/events"},  # plain http: the token would travel in clear
    {"Destination": "https://user:pw@127.0.0.1:9/events"},
    {"Destination": None},
    {"OriginResources": [{"@odata.id": "/redfish/v1/Systems/no-such-system"}]},
    {"RegistryPrefixes": ["Base"]},
    {"HttpHeaders": [{"X-Bad": "line\r\nInjected: yes"}]},
    {"Context": "x" * 257},
    {"Protocol": "SNMPv2c"},
], ids=["http", "userinfo", "no-destination", "unknown-origin", "registry", "header-injection", "long-context",
        "protocol"])
def test_bad_subscriptions_are_refused_and_nothing_is_stored(events_bmc, receiver, subscriptions, change):
    node = events_bmc.nodes[0]
    before = get(events_bmc, SUBSCRIPTIONS).json()["Members"]
    body = standard_body(receiver, node, "nodeguard:refused", **change)
    if change.get("Destination", "") is None:
        del body["Destination"]
    response = subscribe(events_bmc, subscriptions, **body)
    assert response.status_code == 400, response.text
    assert TOKEN not in response.text
    assert get(events_bmc, SUBSCRIPTIONS).json()["Members"] == before


def test_subscriptions_are_private_and_survive_a_restart(events_bmc, receiver, subscriptions):
    node = events_bmc.nodes[0]
    created = subscribe(events_bmc, subscriptions, **standard_body(receiver, node, "nodeguard:restart"))
    assert created.status_code == 201
    store = events_bmc.state_dir / "event-subscriptions.json"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600

    pid = events_bmc.pid()
    watchers = podman_events_children(pid)
    assert watchers, "the emulator runs no podman events"
    os.kill(pid, 15)  # as bmc.sh stops it
    deadline = time.monotonic() + 30
    while any(alive(p) for p in [pid, *watchers]):
        assert time.monotonic() < deadline, "the Redfish service or its podman events did not stop"
        time.sleep(0.2)
    events_bmc.sh("up", *events_bmc.nodes)
    assert events_bmc.pid() != pid
    read = get(events_bmc, created.headers["Location"])
    assert read.status_code == 200
    assert read.json()["Context"] == "nodeguard:restart"


# --- events -------------------------------------------------------------------------------------------

def test_every_power_change_sends_a_standard_event_to_matching_subscribers(
    events_bmc, receiver, subscriptions, running, certs
):
    node, other = events_bmc.nodes
    mine, theirs, all_systems = f"nodeguard:{node}", f"nodeguard:{other}", "nodeguard:all"
    for context, origin in ((mine, node), (theirs, other)):
        assert subscribe(events_bmc, subscriptions, **standard_body(receiver, origin, context)).status_code == 201
    # OriginResources and RegistryPrefixes left out: every system, every registry.
    body = standard_body(receiver, node, all_systems)
    del body["OriginResources"], body["RegistryPrefixes"]
    assert subscribe(events_bmc, subscriptions, **body).status_code == 201
    # A receiver whose certificate the BMC's event CA did not sign: TLS verification fails, no delivery.
    _ca, cert, key = certs["untrusted"]
    stranger = Receiver(cert, key)
    try:
        assert subscribe(events_bmc, subscriptions,
                         **standard_body(stranger, node, "nodeguard:stranger")).status_code == 201
        steps = [
            ("Redfish ForceOff", lambda: reset(events_bmc, node, "ForceOff"), "ResourceEvent.1.3.0.ResourcePoweredOff",
             "OK"),
            ("Redfish On", lambda: reset(events_bmc, node, "On"), "ResourceEvent.1.3.0.ResourcePoweredOn", "OK"),
            ("podman kill behind the BMC's back", lambda: podman("kill", "--signal", "KILL", node),
             "ResourceEvent.1.3.0.ResourcePoweredOff", "OK"),
            ("podman start behind the BMC's back", lambda: podman("start", node),
             "ResourceEvent.1.3.0.ResourcePoweredOn", "OK"),
        ]
        latencies = {}
        for label, change, message_id, severity in steps:
            seen = len(receiver.events(mine))
            before = time.time()
            change()
            done = time.time()
            record = receiver.wait_for_event(mine, message_id, after=seen)
            assert_standard_event(record, node, mine, message_id, severity)
            when = parse_time(record["EventTimestamp"]).timestamp()
            assert before - 1 <= when <= done + 1, (label, record["EventTimestamp"], before, done)
            everyone = receiver.wait_for_event(all_systems, message_id, after=seen)
            assert everyone["EventId"] == record["EventId"]
            latencies[label] = round(max(post["at"] for post in receiver.posts
                                         if post["body"]["Events"][0]["EventId"] == record["EventId"]) - done, 2)
        print(f"delivery after the change returned (s): {latencies}")

        # Exactly one Event per change, in order; nothing for the subscriber of the other system.
        records = receiver.events(mine)
        assert [r["MessageId"].rsplit(".", 1)[1] for r in records] == [
            "ResourcePoweredOff", "ResourcePoweredOn", "ResourcePoweredOff", "ResourcePoweredOn"]
        assert len({r["EventId"] for r in records}) == 4
        assert receiver.events(theirs) == []
        assert stranger.posts == []
    finally:
        stranger.server.shutdown()

    log = (events_bmc.state_dir / "redfish.log").read_text()
    assert "TLS verification failed" in log  # the stranger's deliveries were tried and refused
    assert TOKEN not in log
    assert HOOK_PATH not in log


def test_graceful_shutdown_announces_powering_off_then_off(events_bmc, receiver, subscriptions, running):
    node = events_bmc.nodes[0]
    context = f"nodeguard:{node}:graceful"
    assert subscribe(events_bmc, subscriptions, **standard_body(receiver, node, context)).status_code == 201
    reset(events_bmc, node, "GracefulShutdown")
    receiver.wait_for_event(context, "ResourceEvent.1.3.0.ResourcePoweredOff")
    assert [r["MessageId"].rsplit(".", 1)[1] for r in receiver.events(context)] == [
        "ResourcePoweringOff", "ResourcePoweredOff"]
    assert container_status(node) in POWERED_OFF


def test_a_failed_delivery_is_retried(events_bmc, receiver, subscriptions, running):
    node = events_bmc.nodes[0]
    context = f"nodeguard:{node}:retry"
    assert subscribe(events_bmc, subscriptions, **standard_body(receiver, node, context)).status_code == 201
    receiver.statuses.extend([503, 503])
    podman("kill", "--signal", "KILL", node)
    record = receiver.wait_for_event(context, "ResourceEvent.1.3.0.ResourcePoweredOff")
    attempts = [post for post in receiver.posts if post["body"]["Events"][0]["EventId"] == record["EventId"]]
    assert [post["status"] for post in attempts] == [503, 503, 200]
    assert len({post["body"]["Id"] for post in attempts}) == 1  # one Event, delivered again
    # A pause before each new attempt (1 s, then 2 s): a backoff, not a burst.
    assert attempts[1]["at"] - attempts[0]["at"] >= 0.9
    assert attempts[2]["at"] - attempts[1]["at"] >= 1.9


def test_a_receiver_that_never_answers_does_not_slow_the_api(events_bmc, receiver, subscriptions, running):
    node = events_bmc.nodes[0]
    # Accepts connections (the kernel's backlog) but never reads nor answers: each attempt waits for its timeout.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        body = standard_body(receiver, node, "nodeguard:silent",
                             Destination=f"https://127.0.0.1:{silent.getsockname()[1]}/hook")
        assert subscribe(events_bmc, subscriptions, **body).status_code == 201
        context = f"nodeguard:{node}:silent"
        assert subscribe(events_bmc, subscriptions, **standard_body(receiver, node, context)).status_code == 201
        start = time.monotonic()
        reset(events_bmc, node, "GracefulShutdown")  # publishes PoweringOff on the request's own thread
        assert get(events_bmc, SUBSCRIPTIONS).status_code == 200
        took = time.monotonic() - start
        # Delivering to the silent receiver would take its 5 s connect timeout, per attempt.
        assert took < 4, f"the API waited {took:.1f} s"
        # And the other subscriber is served meanwhile: its own delivery thread.
        receiver.wait_for_event(context, "ResourceEvent.1.3.0.ResourcePoweredOff")


def test_the_state_directory_event_ca_is_trusted_without_a_restart(tmp_path_factory, certs, receiver, test_image,
                                                                   monkeypatch):
    """Without NODEGUARD_BMC_EVENT_CA: the system store (the receiver is refused), then <state>/event-ca.pem."""
    monkeypatch.delenv("NODEGUARD_BMC_EVENT_CA", raising=False)
    name = f"ng-bmcevt-{os.getpid()}-ca"
    state = tmp_path_factory.mktemp("bmc-events-ca") / "state"
    bmc = start_bmc(state, [name], ipmi=False)
    created: list[str] = []
    try:
        context = f"nodeguard:{name}"
        assert subscribe(bmc, created, **standard_body(receiver, name, context)).status_code == 201
        podman("run", "--detach", "--init", "--name", name, test_image)
        deadline = time.monotonic() + DELIVERY_TIMEOUT
        log = state / "redfish.log"
        while "TLS verification failed" not in log.read_text():
            assert time.monotonic() < deadline, "no refused delivery in the log"
            time.sleep(0.2)
        assert receiver.events(context) == []

        (state / "event-ca.pem").write_bytes(certs["trusted"][0].read_bytes())
        podman("kill", "--signal", "KILL", name)
        record = receiver.wait_for_event(context, "ResourceEvent.1.3.0.ResourcePoweredOff")
        assert_standard_event(record, name, context, "ResourceEvent.1.3.0.ResourcePoweredOff", "OK")
    finally:
        bmc.sh("down", check=False)
        podman("rm", "--force", "--time", "0", name, check=False)
