"""A local HTTP server standing in for kube-apiserver, for the tests of services.Cluster's own calls."""

import threading
from http.server import ThreadingHTTPServer

import pytest


@pytest.fixture
def serve():
    """serve(handler_class) -> the base URL of a local HTTP server answering with that handler; stopped after the test."""
    servers = []

    def start(handler_class) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler_class)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
