"""The incident's reads ask for a compressed answer (issue 23, item 5): the full Node list, which the safety rules
read at each decision, is about 11 KB per Node as JSON. A local HTTP server stands in for the apiserver: like
kube-apiserver (APIResponseCompression) it gzips an answer only when the request says Accept-Encoding: gzip."""

import gzip
import json
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

kubernetes = pytest.importorskip("kubernetes")

from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import Cluster  # noqa: E402

NODES = {
    "kind": "NodeList",
    "apiVersion": "v1",
    "metadata": {"resourceVersion": "7"},
    "items": [{"metadata": {"name": f"w{i}"}, "status": {"images": [{"names": ["registry.test/app:1"], "sizeBytes": 1}] * 40}} for i in range(50)],
}


class Apiserver(BaseHTTPRequestHandler):
    seen: ClassVar[list] = []

    def do_GET(self):
        body = json.dumps(NODES).encode()
        asked = "gzip" in (self.headers.get("Accept-Encoding") or "")
        Apiserver.seen.append({"path": self.path, "gzip": asked, "plain_bytes": len(body)})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if asked:
            body = gzip.compress(body)
            self.send_header("Content-Encoding", "gzip")
        Apiserver.seen[-1]["sent_bytes"] = len(body)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def apiserver(serve):
    Apiserver.seen = []
    return serve(Apiserver)


def test_the_node_list_is_asked_for_compressed_and_read_whole(apiserver):
    configuration = kubernetes.client.Configuration()
    configuration.host = apiserver
    nodes = Cluster(kubernetes.client.ApiClient(configuration)).list_nodes()
    assert [n["metadata"]["name"] for n in nodes] == [f"w{i}" for i in range(50)]  # inflated before it is parsed
    (request,) = Apiserver.seen
    assert request["path"].startswith("/api/v1/nodes") and request["gzip"]
    assert request["sent_bytes"] * 10 < request["plain_bytes"]
