"""Fixtures shared by the incident lab tests."""

from __future__ import annotations

import pytest

LOCK_NAMESPACE = "nodeguard-system"
NAMESPACE = "failover-lab"  # the lab's workloads (the db StatefulSet)
HISTORY_PREFIX = "nodeguard-history-"


def find_db_pod(lab, node):
    """The lab db StatefulSet's pod bound to node, or None."""
    pods = lab.core().list_namespaced_pod(NAMESPACE, label_selector="app=db").items
    return next((p for p in pods if p.spec.node_name == node), None)


@pytest.fixture(scope="module")
def db_pod_on():
    """find_db_pod for the tests: db_pod_on(lab, node) is the db pod bound to node, or None."""
    return find_db_pod


def delete_incident_traces(lab) -> None:
    """What incident runs leave on the lab: every worker's durable history (one ConfigMap per node) and lock Lease,
    and nodeguard's Events about Nodes (a test that counts them must not count another module's)."""
    for name in lab.worker_names():
        lab.kubectl("delete", "configmap", "-n", "nodeguard-history", HISTORY_PREFIX + name, "--ignore-not-found", check=False)
        lab.kubectl("delete", "lease", "-n", LOCK_NAMESPACE, f"nodeguard-failover-{name}", "--ignore-not-found", check=False)
    lab.kubectl("delete", "events", "-n", "default", "--field-selector", "involvedObject.kind=Node,source=nodeguard-failover",
                check=False)


def release_held_pods(lab) -> None:
    """Lift the finalizer a test puts on a db pod to hold a run in delete-pods, should the test have stopped early."""
    for pod in lab.core().list_namespaced_pod(NAMESPACE).items:
        if "nodeguard.test/hold" in (pod.metadata.finalizers or []):
            lab.kubectl("patch", "pod", "-n", NAMESPACE, pod.metadata.name, "--type", "merge", "-p",
                        '{"metadata": {"finalizers": null}}', check=False)


@pytest.fixture(scope="module")
def db_worker(lab):
    """A worker that runs a db pod. Before and after the module, whatever happened: its kubelet started again if
    its machine runs, held pods released, the lab reset, and the incident traces removed (the lab left as found)."""
    lab.reset_lab()
    delete_incident_traces(lab)
    candidates = [n for n in lab.worker_names() if find_db_pod(lab, n)]
    assert candidates, "no worker runs a db pod; is the lab's StatefulSet up?"
    node = candidates[0]
    yield node
    if lab.container_state(node) == "running":
        lab.podman("exec", node, "systemctl", "start", "kubelet", check=False)
    release_held_pods(lab)
    lab.reset_lab()
    delete_incident_traces(lab)
