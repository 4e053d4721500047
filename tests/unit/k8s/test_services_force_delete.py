"""Cluster.force_delete_pod deletes one incarnation of a pod (a UID precondition). When PodGC force-deleted it first
and its StatefulSet re-created the pod under the same name, kube-apiserver answers 409 with the registry's wording
("the UID in the precondition (...) does not match the UID in record (...)"), which says nothing of "Precondition
failed". That answer once stopped node-outage in delete-pods. A local HTTP server stands in for the apiserver and
answers as kube-apiserver's rest.BeforeDelete does; the lab proves the same on the real apiserver
(tests/integration/incident/test_pod_incarnation_lab.py)."""

import json
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

kubernetes = pytest.importorskip("kubernetes")

from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import Cluster, ConflictError  # noqa: E402

OLD, NEW = "0b1e6a52-0000-4000-8000-000000000001", "0b1e6a52-0000-4000-8000-000000000002"


def pod(uid):
    return {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "db-0", "namespace": "app", "uid": uid}}


def uid_conflict(precondition, in_record):
    """The Status kube-apiserver's registry (rest.BeforeDelete) answers when a delete's UID precondition fails."""
    return 409, {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'Operation cannot be fulfilled on Pod "db-0": the UID in the precondition ({precondition}) does not match '
        f"the UID in record ({in_record}). The object might have been deleted and then recreated",
        "reason": "Conflict",
        "details": {"name": "db-0", "kind": "Pod"},
        "code": 409,
    }


class Apiserver(BaseHTTPRequestHandler):
    answers: ClassVar[dict] = {}  # method -> (status, body)
    seen: ClassVar[list] = []

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        sent = json.loads(self.rfile.read(length)) if length else None
        Apiserver.seen.append((self.command, self.path, sent))
        status, body = Apiserver.answers[self.command]
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_DELETE = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def cluster(serve):
    Apiserver.seen = []
    configuration = kubernetes.client.Configuration()
    configuration.host = serve(Apiserver)
    return Cluster(kubernetes.client.ApiClient(configuration))


def test_a_deleted_incarnation_is_deleted_with_grace_zero_and_its_uid(cluster):
    Apiserver.answers = {"DELETE": (200, pod(OLD))}
    assert cluster.force_delete_pod("app", "db-0", OLD) is True
    ((method, path, body),) = Apiserver.seen
    assert (method, path.split("?")[0]) == ("DELETE", "/api/v1/namespaces/app/pods/db-0")
    assert body["gracePeriodSeconds"] == 0 and body["preconditions"] == {"uid": OLD}


def test_a_pod_already_gone_is_not_an_error(cluster):
    Apiserver.answers = {"DELETE": (404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})}
    assert cluster.force_delete_pod("app", "db-0", OLD) is False


def test_a_pod_recreated_under_the_same_name_is_not_deleted_and_not_an_error(cluster):
    Apiserver.answers = {"DELETE": uid_conflict(OLD, NEW), "GET": (200, pod(NEW))}
    assert cluster.force_delete_pod("app", "db-0", OLD) is False
    assert [m for m, _p, _b in Apiserver.seen] == ["DELETE", "GET"]  # read again, never deleted without the precondition


def test_a_pod_gone_after_the_conflict_is_not_an_error(cluster):
    Apiserver.answers = {"DELETE": uid_conflict(OLD, NEW), "GET": (404, {"kind": "Status", "code": 404, "reason": "NotFound"})}
    assert cluster.force_delete_pod("app", "db-0", OLD) is False


def test_a_conflict_while_our_incarnation_is_still_there_is_an_error_with_the_apis_words(cluster):
    Apiserver.answers = {"DELETE": uid_conflict(OLD, OLD), "GET": (200, pod(OLD))}
    with pytest.raises(ConflictError, match=r"delete pod app/db-0: conflict.*does not match the UID in record"):
        cluster.force_delete_pod("app", "db-0", OLD)
