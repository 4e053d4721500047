"""Matching old pods with Ready replacements elsewhere, and how long each took."""

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.pods import summary
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.replacements import label_selector, match
from incident_fakes import T0, pod


def old(p, deployment=None):
    entry = summary(p)
    if deployment:
        entry["deployment"] = deployment
    return entry


def test_statefulset_pod_replaced_by_same_name_new_uid_elsewhere():
    gone = pod("db-0", "w3", owner=("StatefulSet", "db"))
    new = pod("db-0", "w1", owner=("StatefulSet", "db"), created=T0 + 20)
    result = match([old(gone)], {("StatefulSet", "app", "db-0"): [new]}, "w3", T0)
    assert result["waiting"] == []
    [done] = result["replaced"]
    assert done["node"] == "w1"
    assert done["owner"] == "StatefulSet/db"
    assert done["seconds"] == 20


def test_same_incarnation_or_same_node_is_no_replacement():
    gone = pod("db-0", "w3", owner=("StatefulSet", "db"))
    on_dead_node = pod("db-0", "w3", owner=("StatefulSet", "db"), created=T0 + 5)
    result = match([old(gone)], {("StatefulSet", "app", "db-0"): [gone, on_dead_node]}, "w3", T0)
    assert result["replaced"] == []
    assert result["waiting"][0]["pod"] == "app/db-0"


def test_not_ready_replacement_does_not_count():
    gone = pod("db-0", "w3", owner=("StatefulSet", "db"))
    starting = pod("db-0", "w1", owner=("StatefulSet", "db"), created=T0 + 5, ready=False)
    assert match([old(gone)], {("StatefulSet", "app", "db-0"): [starting]}, "w3", T0)["waiting"]


def test_each_deployment_pod_needs_its_own_replacement():
    gone = [pod("web-a", "w3", owner=("ReplicaSet", "web-1")), pod("web-b", "w3", owner=("ReplicaSet", "web-1"))]
    survivor = pod("web-c", "w1", owner=("ReplicaSet", "web-1"), created=T0 - 500)  # older than the incident
    new = pod("web-d", "w2", owner=("ReplicaSet", "web-1"), created=T0 + 9)
    candidates = {("Deployment", "app", "web"): [survivor, new]}
    result = match([old(p, "web") for p in gone], candidates, "w3", T0)
    assert [r["replacement"] for r in result["replaced"]] == ["app/web-d"]
    assert [w["pod"] for w in result["waiting"]] == ["app/web-b"]


def test_other_owners_are_reported_unverified():
    result = match([old(pod("job-x", "w3", owner=("Job", "x")))], {}, "w3", T0)
    assert result["unverified"] == [{"pod": "app/job-x", "owner": "Job/x"}]
    assert result["waiting"] == []


def test_label_selector_string():
    selector = {
        "matchLabels": {"app": "web", "tier": "front"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["a", "b"]},
            {"key": "canary", "operator": "DoesNotExist"},
        ],
    }
    assert label_selector(selector) == "app=web,tier=front,env in (a,b),!canary"
