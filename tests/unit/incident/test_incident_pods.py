"""Which pods are force-deleted, skipped or reported; which belong to the old incarnation."""

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.pods import (
    classify,
    old_incarnation,
    tolerates_out_of_service,
)
from incident_fakes import T0, pod

OOS = "node.kubernetes.io/out-of-service"


def names(entries):
    return [e["name"] for e in entries]


def test_classify_splits_pods():
    pods = [
        pod("db-0", "w3", owner=("StatefulSet", "db")),
        pod("agent-x", "w3", owner=("DaemonSet", "agent")),
        pod("etcd-w3", "w3", annotations={"kubernetes.io/config.mirror": "abc"}),
        pod("sticky", "w3", tolerations=[{"key": OOS, "operator": "Exists", "effect": "NoExecute"}]),
        pod("bare", "w3"),
    ]
    result = classify(pods)
    assert names(result["delete"]) == ["db-0", "bare"]
    assert names(result["skipped"]) == ["agent-x", "etcd-w3"]
    assert names(result["tolerating"]) == ["sticky"]
    assert result["delete"][0]["owner_kind"] == "StatefulSet"


def test_tolerations():
    assert tolerates_out_of_service(pod("a", "n", tolerations=[{"operator": "Exists"}]))
    assert tolerates_out_of_service(pod("a", "n", tolerations=[{"key": OOS, "operator": "Exists"}]))
    assert not tolerates_out_of_service(pod("a", "n", tolerations=[{"key": OOS, "operator": "Exists", "effect": "NoSchedule"}]))
    not_ready = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    assert not tolerates_out_of_service(pod("a", "n", tolerations=[not_ready]))


def test_old_incarnation_ignores_new_mirror_daemonset_and_tolerating_pods():
    pods = [
        pod("old", "w3", created=T0 - 100),
        pod("new", "w3", created=T0 + 100),
        pod("mirror", "w3", created=T0 - 100, annotations={"kubernetes.io/config.mirror": "x"}),
        pod("sticky", "w3", created=T0 - 100, tolerations=[{"operator": "Exists"}]),
        pod("agent", "w3", created=T0 - 100, owner=("DaemonSet", "agent")),
    ]
    assert names(old_incarnation(pods, T0)) == ["old"]
