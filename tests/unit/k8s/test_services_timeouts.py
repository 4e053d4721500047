"""Every API call has timeouts that fit the run's lock, TCP keepalive, and the run's deadline (issue 38, item 5); a
write whose answer is lost is read back (item 6).

A loopback listener that accepts and never answers stands in for a blackholed apiserver; a local HTTP server that
takes a PATCH and then drops the connection, or never answers it, stands in for an apiserver whose reply is lost
after the commit. The answers are the shapes kube-apiserver sends for a Node (core/v1, "Node" in the Kubernetes API
reference): metadata.name, metadata.resourceVersion, spec.taints.
"""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

kubernetes = pytest.importorskip("kubernetes")

from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.client import build_api_client  # noqa: E402
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import (  # noqa: E402
    Cluster,
    ConflictError,
    NoAnswerError,
    RunDeadlineError,
    WriteUnknownError,
    call_timeouts,
    patch_node_confirmed,
)

TTL = 6  # a lock TTL this short gives 1 s read timeouts: the tests stay fast


def finished_within(seconds, fn):
    """fn()'s exception (or None), or pytest.fail when it is still running after ``seconds``: never hangs the suite."""
    outcome = {}

    def target():
        try:
            fn()
            outcome["error"] = None
        except Exception as e:  # noqa: BLE001 - handed to the test
            outcome["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"the call was still waiting after {seconds}s")
    return outcome["error"]


@pytest.fixture
def blackhole():
    """host of a loopback TCP listener that accepts connections and never sends a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    for conn in accepted:
        conn.close()
    listener.close()


def test_a_call_never_answered_ends_with_an_error_naming_it_well_before_the_lock_ttl(blackhole):
    cluster = Cluster(build_api_client({"host": blackhole}), call_timeouts(TTL))
    started = time.monotonic()
    error = finished_within(3 * TTL, lambda: cluster.get_node("w3"))
    took = time.monotonic() - started
    assert isinstance(error, NoAnswerError), error
    assert str(error).startswith("read node w3: no answer from the API server (http://127.0.0.1:")
    assert "timed out" in str(error)
    assert took < TTL / 3  # one read timeout of TTL/6, no retry of a read


def test_every_connection_has_tcp_keepalive():
    api = build_api_client({"host": "https://127.0.0.1:16443"})
    options = api.rest_client.pool_manager.connection_pool_kw["socket_options"]
    assert (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1) in options
    assert (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1) in options  # urllib3's own default is kept
    if hasattr(socket, "TCP_KEEPIDLE"):
        assert (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 5) in options


@pytest.mark.parametrize("ttl", [10, 30, 60, 120, 600])
def test_a_call_at_its_worst_takes_at_most_a_quarter_of_the_lock_ttl(ttl):
    connect, read = call_timeouts(ttl)
    assert 2 * connect + read <= ttl / 4  # two connects (one retry) and one read
    assert read <= 20


class Apiserver(BaseHTTPRequestHandler):
    """Node w3 at resourceVersion 7; a PATCH is taken (merged, resourceVersion 8) and its reply lost: ``lose`` is
    "drop" (the connection closed without a reply) or "stall" (no reply until after the read timeout)."""

    node: ClassVar[dict] = {}
    lose: ClassVar[str] = "drop"
    take: ClassVar[bool] = True
    requests: ClassVar[list] = []

    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        Apiserver.requests.append(("GET", self.path))
        self._send(Apiserver.node)

    def do_DELETE(self):
        Apiserver.requests.append(("DELETE", self.path))
        self._send({"kind": "Status", "apiVersion": "v1", "status": "Success"})

    def do_PATCH(self):
        Apiserver.requests.append(("PATCH", self.path))
        patch = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if Apiserver.take:
            Apiserver.node["spec"].update(patch.get("spec") or {})
            Apiserver.node["metadata"]["annotations"].update(patch["metadata"].get("annotations") or {})
            Apiserver.node["metadata"]["resourceVersion"] = "8"
        if Apiserver.lose == "stall":
            time.sleep(2.5)
        self.close_connection = True  # and no reply

    def log_message(self, *args):
        pass


TAINT = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}
PATCH = {"metadata": {"resourceVersion": "7", "annotations": {"example.test/incident": "i-1"}}, "spec": {"taints": [TAINT]}}


def landed(node):
    return node["metadata"]["annotations"].get("example.test/incident") == "i-1"


@pytest.fixture
def apiserver(serve):
    Apiserver.node = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "w3", "resourceVersion": "7", "annotations": {}}, "spec": {}}
    Apiserver.lose, Apiserver.take, Apiserver.requests = "drop", True, []
    return Cluster(build_api_client({"host": serve(Apiserver)}), call_timeouts(TTL))


@pytest.mark.parametrize("lose", ["drop", "stall"])
def test_a_write_taken_whose_answer_is_lost_is_read_back_and_counts_as_done(apiserver, lose):
    Apiserver.lose = lose
    with pytest.raises(NoAnswerError, match=r"^patch node w3: no answer"):
        apiserver.patch_node("w3", PATCH)  # the old reading: "did not take it"
    Apiserver.node["metadata"]["resourceVersion"] = "7"
    Apiserver.node["metadata"]["annotations"] = {}
    node = patch_node_confirmed(apiserver, "w3", PATCH, landed)
    assert node["spec"]["taints"] == [TAINT] and landed(node)
    assert Apiserver.requests[-2:] == [("PATCH", "/api/v1/nodes/w3"), ("GET", "/api/v1/nodes/w3")]


def test_a_write_lost_and_not_on_the_node_while_it_is_unchanged_may_still_be_taken(apiserver):
    Apiserver.take = False
    with pytest.raises(WriteUnknownError, match="read back is unchanged, so the write may still be taken"):
        patch_node_confirmed(apiserver, "w3", PATCH, landed)


def test_a_write_lost_while_the_node_moved_on_without_it_was_not_taken(apiserver):
    Apiserver.take = False
    Apiserver.node["metadata"]["resourceVersion"] = "9"  # a heartbeat came first: the conditional write can never be taken
    with pytest.raises(ConflictError, match="it was not taken"):
        patch_node_confirmed(apiserver, "w3", PATCH, landed)


def test_after_the_run_deadline_no_call_is_sent_but_the_lock_release(apiserver):
    apiserver.set_deadline(0)
    with pytest.raises(RunDeadlineError, match=r"^read node w3: not sent: the run's deadline \(0s"):
        apiserver.get_node("w3")
    assert Apiserver.requests == []
    apiserver.delete_lease("nodeguard-system", "nodeguard-failover-w3", "5")
    assert Apiserver.requests == [("DELETE", "/apis/coordination.k8s.io/v1/namespaces/nodeguard-system/leases/nodeguard-failover-w3")]


def test_before_the_run_deadline_calls_are_sent(apiserver):
    apiserver.set_deadline(600)
    assert apiserver.get_node("w3")["metadata"]["name"] == "w3"


def test_a_modules_cluster_has_timeouts_that_fit_its_lock_ttl():
    from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.connect import cluster_for

    class Module:
        def __init__(self, **params):
            self.params = {"host": "https://127.0.0.1:16443", **params}

    assert cluster_for(Module(lock_ttl_seconds=30))._timeouts == call_timeouts(30) == (1.25, 5.0)
    assert cluster_for(Module())._timeouts == (5.0, 20.0)  # a module without a lock
