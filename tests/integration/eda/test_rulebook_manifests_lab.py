"""deploy/rulebook/ against the lab's apiserver: the manifests are valid as the server validates them (a server-side
dry run: schema, defaults, admission), and the node watch's RBAC gives the remediation ServiceAccount exactly the
watch node_watch.py needs, on top of deploy/rbac, and nothing more.

The Deployments are not started here (the lab's nodes do not hold the decision environment's image):
tests/integration/ee/test_decision_environment_deployments.py runs the node watch's container under podman.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
RBAC = REPO / "deploy" / "rbac"
RULEBOOK = REPO / "deploy" / "rulebook"
ACCOUNT = "system:serviceaccount:nodeguard-system:nodeguard-remediator"
# (verb, resource, namespace or None): what node_watch.py lists and watches
WATCHED = [("watch", "nodes", None), ("list", "leases", "kube-node-lease"), ("watch", "leases", "kube-node-lease")]
NOT_GRANTED = [
    ("watch", "pods", None),
    ("watch", "leases", "nodeguard-system"),
    ("list", "leases", "default"),
    ("update", "leases", "kube-node-lease"),
    ("watch", "secrets", "nodeguard-system"),
]


def can(lab, verb: str, resource: str, namespace: str | None) -> bool:
    where = ["-n", namespace] if namespace else []
    result = lab.kubectl("auth", "can-i", verb, resource, *where, f"--as={ACCOUNT}", check=False)
    assert result.stdout.strip() in ("yes", "no"), result.stdout + result.stderr
    return result.stdout.strip() == "yes"


def node_watch_rbac() -> list[str]:
    return [str(p) for p in sorted((RULEBOOK / "node-watch").glob("1*.yaml"))]


@pytest.fixture(scope="module")
def rbac(lab) -> Iterator[None]:
    lab.kubectl("apply", "-f", str(RBAC))
    yield
    for path in node_watch_rbac():
        lab.kubectl("delete", "-f", path, "--ignore-not-found", check=False)


def test_the_server_accepts_every_manifest(lab, rbac) -> None:
    for directory in ("node-watch", "power-events"):
        result = lab.kubectl("apply", "--dry-run=server", "-f", str(RULEBOOK / directory), check=False)
        assert result.returncode == 0, result.stdout + result.stderr
        applied = [line for line in result.stdout.splitlines() if line.endswith("(server dry run)")]
        expected = len(list((RULEBOOK / directory).glob("*.yaml")))
        assert len(applied) == expected, result.stdout


def test_the_node_watch_rbac_grants_the_watch_and_nothing_more(lab, rbac) -> None:
    for path in node_watch_rbac():
        lab.kubectl("delete", "-f", path, "--ignore-not-found", check=False)
    lab.wait_for(lambda: not can(lab, "watch", "nodes", None), timeout=30, what="no watch without deploy/rulebook/node-watch")
    assert not any(can(lab, *access) for access in WATCHED), "deploy/rbac alone grants a watch"
    for path in node_watch_rbac():
        lab.kubectl("apply", "-f", path)
    lab.wait_for(lambda: all(can(lab, *access) for access in WATCHED), timeout=30, what="the node watch's grants")
    assert [access for access in NOT_GRANTED if can(lab, *access)] == []
