"""Cluster.force_delete_pod on the lab's real kube-apiserver: it deletes one incarnation of a pod, never its successor.

On a node with the out-of-service taint, PodGC force-deletes the node's terminating pods itself, and a StatefulSet
re-creates its pod at once under the same name. node-outage's own force-delete then meets the new incarnation: the
UID precondition fails, and kube-apiserver answers 409 Conflict. That answer once stopped node-outage in delete-pods
(three full runs of the lab suite, always in the middle of it: the race needs PodGC to be first). Here the race is
made on purpose: the first incarnation is deleted and the pod re-created before force_delete_pod is called with the
first one's UID. The pod is never scheduled (its nodeSelector matches no node), so the test touches no worker.
"""

from __future__ import annotations

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import Cluster
from kubernetes.client.rest import ApiException

NAMESPACE = "failover-lab"
NAME = "nodeguard-test-incarnation"


def pod_body() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/managed-by": "nodeguard-tests"}},
        "spec": {
            "nodeSelector": {"nodeguard.test/never": "true"},  # stays Pending: nothing runs, no node is touched
            "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


@pytest.fixture
def incarnations(lab):
    """(first UID, second UID): the pod created, deleted and created again under the same name."""
    core = lab.core()
    lab.kubectl("delete", "pod", "-n", NAMESPACE, NAME, "--ignore-not-found", "--grace-period=0", "--force", check=False)
    lab.wait_for(lambda: not _exists(core), timeout=30, what=f"no pod {NAME} left over")
    first = core.create_namespaced_pod(NAMESPACE, pod_body()).metadata.uid
    core.delete_namespaced_pod(NAME, NAMESPACE, grace_period_seconds=0)  # unscheduled: gone at once
    lab.wait_for(lambda: not _exists(core), timeout=30, what=f"first incarnation of {NAME} gone")
    second = core.create_namespaced_pod(NAMESPACE, pod_body()).metadata.uid
    yield first, second
    lab.kubectl("delete", "pod", "-n", NAMESPACE, NAME, "--ignore-not-found", "--grace-period=0", "--force", check=False)


def _exists(core) -> bool:
    try:
        core.read_namespaced_pod(NAME, NAMESPACE)
    except ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


def test_the_apiserver_answers_409_to_a_delete_of_an_earlier_incarnation(lab, incarnations):
    first, _second = incarnations
    with pytest.raises(ApiException) as answered:
        lab.core().delete_namespaced_pod(NAME, NAMESPACE, body={"gracePeriodSeconds": 0, "preconditions": {"uid": first}})
    assert answered.value.status == 409, answered.value.body


def test_force_delete_of_an_earlier_incarnation_spares_the_new_pod_and_is_not_an_error(lab, incarnations):
    first, second = incarnations
    cluster = Cluster(lab.api_client())
    assert cluster.force_delete_pod(NAMESPACE, NAME, first) is False
    assert lab.core().read_namespaced_pod(NAME, NAMESPACE).metadata.uid == second  # the successor is untouched
    assert cluster.force_delete_pod(NAMESPACE, NAME, second) is True
    lab.wait_for(lambda: not _exists(lab.core()), timeout=30, what=f"{NAME} deleted")
    assert cluster.force_delete_pod(NAMESPACE, NAME, second) is False  # already gone: not an error either
