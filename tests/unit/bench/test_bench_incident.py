"""bench/incident.py's byte count (issue 23, item 5): a TCP pass-through that counts what the playbook's API client
really receives and sends, each byte once, and forwards it unchanged (the TLS session stays end to end)."""

import json
import socket
import threading
from pathlib import Path

import incident
import yaml


def echo_server():
    """A server that answers every message with it doubled, like an apiserver answering more than it is asked."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _address = listener.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data * 2)

    threading.Thread(target=serve, daemon=True).start()
    return listener


def exchange(port, payload):
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


def test_the_counter_forwards_unchanged_and_counts_each_way():
    upstream = echo_server()
    try:
        with incident.ByteCounter(upstream.getsockname()[1]) as counter:
            first = exchange(counter.port, b"x" * 100_000)
            second = exchange(counter.port, b"hello")
        assert first == b"x" * 200_000 and second == b"hellohello"
        assert counter.counts() == {"bytes_received": 200_010, "bytes_sent": 100_005, "connections": 2}
    finally:
        upstream.close()


def test_the_counted_kubeconfig_points_at_the_counter_and_keeps_the_rest(tmp_path: Path):
    original = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "scale", "cluster": {"server": "https://127.0.0.1:26443", "certificate-authority-data": "Q0E="}}],
        "users": [{"name": "admin", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "scale", "context": {"cluster": "scale", "user": "admin"}}],
        "current-context": "scale",
    }
    path = tmp_path / "incident.kubeconfig"
    path.write_text(yaml.safe_dump(original))
    counted = yaml.safe_load(Path(incident.counted_kubeconfig(str(path), 40123)).read_text())
    assert counted["clusters"][0]["cluster"] == {"server": "https://127.0.0.1:40123", "certificate-authority-data": "Q0E="}
    assert {k: v for k, v in counted.items() if k != "clusters"} == {k: v for k, v in original.items() if k != "clusters"}


def test_the_bytes_model_keeps_the_fixed_part_and_scales_the_node_lists():
    # 100 nodes, 500 B per Node compressed, three full lists: 150 000 B of the 400 000 received grow with the cluster.
    model = incident.bytes_model(400_000, 100, 500.0)
    assert model["fixed_bytes"] == 250_000 and model["full_node_reads"] == incident.OUTAGE_FULL_NODE_READS == 3
    assert model["at_1000_nodes"] == 250_000 + 3 * 500 * 1000
    assert model["at_5000_nodes"] == 250_000 + 3 * 500 * 5000


def audit_event(user, verb, code, resource="pods", grace=None, uri="/api/v1/namespaces/bench/pods/p", stage="ResponseComplete"):
    event = {"stage": stage, "verb": verb, "user": {"username": user}, "requestURI": uri,
             "objectRef": {"resource": resource, "namespace": "bench", "name": "p"}, "responseStatus": {"code": code}}
    if grace is not None:
        event["requestObject"] = {"kind": "DeleteOptions", "gracePeriodSeconds": grace}
    return event


def test_pod_deletes_say_who_removed_the_pods_and_how(tmp_path: Path):
    log = tmp_path / "audit.log"
    events = [
        audit_event("nodeguard-scale-admin", "delete", 200),  # logged before the run: not counted
        audit_event(incident.scale.AUDITED_USER, "delete", 200, grace=0),
        audit_event(incident.scale.AUDITED_USER, "delete", 409, grace=0),  # a refused UID precondition removed nothing
        audit_event(incident.scale.AUDITED_USER, "delete", 404, grace=0),  # already gone
        audit_event("nodeguard-scale-admin", "delete", 200),  # the taint eviction: graceful, the pod turns terminating
        audit_event("nodeguard-scale-admin", "delete", 200, grace=0),  # PodGC: a force-delete in its options
        audit_event("nodeguard-scale-admin", "delete", 200, uri="/api/v1/namespaces/bench/pods/q?gracePeriodSeconds=0"),  # or its query
        audit_event("nodeguard-scale-admin", "delete", 200, grace=0, stage="ResponseStarted"),
        audit_event("nodeguard-scale-admin", "delete", 200, resource="leases", grace=0),
        audit_event(incident.scale.AUDITED_USER, "get", 200),
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert incident.pod_deletes(1, log) == {"node-outage": {"force": 1, "graceful": 0}, "nodeguard-scale-admin": {"force": 2, "graceful": 1}}
    assert incident.audit_requests(1, log) == {"delete": 3, "get": 1}
