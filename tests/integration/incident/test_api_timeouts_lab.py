"""An apiserver that does not answer, and a taint whose answer is lost after the commit (issue 38, items 5 and 6).

Item 5. A loopback listener in this test accepts connections and never sends a byte: a blackholed apiserver. Given
as the API host, node-outage and node-recover used to wait on it for ever, their lock no longer renewed and the
rulebook's queue stalled behind them. Now each call has timeouts that fit the lock TTL: the run ends with an error
that names the call, well before the TTL, and the cluster is as it was.

Item 6. A TLS proxy in this test stands in front of the lab's apiserver. It passes every request on, but the taint
write (the PATCH of the Node that carries the out-of-service taint): that one it passes on, the apiserver commits
it, and the proxy closes the connection without the reply. node-outage used to report "the API did not take the
taint", changed false, with the node tainted, no history copy and nothing continuing the incident. Now it reads the
Node back, finds its taint and record, and completes the outage.

Everything stays on loopback inside the lab's network namespace (the proxy forwards only to the lab's apiserver).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from test_incident_lab import (
    HISTORY_NAMESPACE,
    OOS,
    assert_unchanged,
    has_taint,
    node_proven_dead,
    playbook,
    record,
    state,
)

LOCK_TTL = 30  # seconds: the calls' timeouts are cut to fit it (read 5 s, connect 1.25 s)


@pytest.fixture
def blackhole():
    """(host, port) of a loopback listener that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    accepted, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()
    stop.set()
    for conn in accepted:
        conn.close()
    listener.close()


@pytest.mark.parametrize(("name", "first_call"), [("node_outage", "read node"), ("node_recover", "read node")])
def test_a_blackholed_apiserver_ends_the_run_naming_the_call_before_the_lock_ttl(lab, remediator, blackhole, name, first_call):
    worker = lab.worker_names()[0]
    before = state(lab, worker)
    host = f"https://127.0.0.1:{blackhole[1]}"
    prefix = name.replace("-", "_")
    started = time.monotonic()
    options = {f"{prefix}_lock_ttl_seconds": LOCK_TTL}
    if name == "node_recover":
        options["node_recover_retries"] = 0  # the role retries a run that is only not recovered yet
    result = playbook(remediator, name, worker, failover_host=host, **options)
    took = time.monotonic() - started
    output = result.stdout + result.stderr
    assert result.returncode != 0, lab.playbook_failure(output)
    assert f"{first_call} {worker}: no answer from the API server ({host})" in output, lab.playbook_failure(output)
    assert "timed out" in output, lab.playbook_failure(output)
    assert took < LOCK_TTL, f"the run took {took:.0f}s, the lock TTL is {LOCK_TTL}s"
    assert_unchanged(lab, worker, before)


class LosesTheTaintReply(BaseHTTPRequestHandler):
    """Passes each request on to the lab's apiserver and its reply back; the first PATCH of ``node`` that carries the
    out-of-service taint is passed on and committed, and its reply dropped (the connection closed without it)."""

    protocol_version = "HTTP/1.1"  # keep-alive, as kube-apiserver speaks it
    upstream = ("127.0.0.1", 16443)
    upstream_tls = None
    node = ""
    dropped: list = []  # noqa: RUF012 - one per test, reset by the fixture

    def _forward(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        connection = http.client.HTTPSConnection(*self.upstream, context=self.upstream_tls, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive")}
        connection.request(self.command, self.path, body=body or None, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        connection.close()
        if self._is_the_taint(body) and answer.status == 200 and not LosesTheTaintReply.dropped:
            LosesTheTaintReply.dropped.append(self.path)
            self.close_connection = True  # committed; the reply never comes
            return
        self.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length", "keep-alive"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _is_the_taint(self, body: bytes) -> bool:
        return self.command == "PATCH" and self.path.split("?")[0] == f"/api/v1/nodes/{self.node}" and OOS.encode() in body

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    def log_message(self, *args):
        pass


@pytest.fixture
def lossy_proxy(remediator, tmp_path):
    """start(node) -> (host, ca_cert) of a TLS proxy in front of the lab's apiserver that loses the taint's reply."""
    servers = []

    def start(node):
        cert, key = tmp_path / "proxy.crt", tmp_path / "proxy.key"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=nodeguard-test-proxy",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
                "-keyout",
                str(key),
                "-out",
                str(cert),
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        served.load_cert_chain(cert, key)
        upstream = urlsplit(remediator["failover_host"])
        LosesTheTaintReply.upstream = (upstream.hostname, upstream.port)
        LosesTheTaintReply.upstream_tls = ssl.create_default_context(cafile=remediator["failover_ca_cert"])
        LosesTheTaintReply.node, LosesTheTaintReply.dropped = node, []
        server = ThreadingHTTPServer(("127.0.0.1", 0), LosesTheTaintReply)
        server.socket = served.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"https://127.0.0.1:{server.server_address[1]}", str(cert)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.resets_lab
def test_a_taint_whose_reply_is_lost_after_the_commit_completes_the_outage(lab, remediator, db_worker, lossy_proxy):
    host, ca_cert = lossy_proxy(db_worker)
    lab.podman("exec", db_worker, "systemctl", "stop", "kubelet")
    lab.wait_for(lambda: node_proven_dead(lab, db_worker), timeout=150, interval=2, what=f"{db_worker} NotReady with a stale Lease")
    result = playbook(
        remediator,
        "node_outage",
        db_worker,
        failover_host=host,
        failover_ca_cert=ca_cert,
        node_outage_fence=True,
        node_outage_fence_backoff_seconds=2,
        node_outage_lock_ttl_seconds=LOCK_TTL,
    )
    output = result.stdout + result.stderr
    assert LosesTheTaintReply.dropped, "the proxy never saw the taint write: " + lab.playbook_failure(output)
    assert result.returncode == 0, lab.playbook_failure(output)
    assert "did not take the taint" not in output
    assert has_taint(lab, db_worker)
    done = record(lab, db_worker)
    assert done["phase"] == "outage-complete", done["phase"]
    kept = lab.kubectl("get", "configmap", "-n", HISTORY_NAMESPACE, f"nodeguard-history-{db_worker}", "-o", "json").stdout
    assert json.loads(json.loads(kept)["data"][done["id"]])["steps"]["taint"]["outcome"] == "tainted"  # the history has its copy
    assert lab.kubectl("get", "lease", "-n", "nodeguard-system", f"nodeguard-failover-{db_worker}", check=False).returncode != 0
