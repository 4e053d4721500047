"""bench/timeline.py's pure parts: which pods to move so that a chosen victim holds a web and a db pod."""

import timeline


def pod(name, node):
    return {"name": name, "app": name.split("-")[0], "node": node}


def test_a_victim_that_holds_both_needs_no_move():
    pods = [pod("db-0", "ng-worker4"), pod("db-1", "ng-worker1"), pod("web-a", "ng-worker4"), pod("web-b", "ng-worker2")]
    assert timeline.pods_to_move(pods, "ng-worker4") == []


def test_the_first_db_pod_and_a_web_pod_from_the_fullest_worker_are_moved():
    pods = [pod("db-1", "ng-worker2"), pod("db-0", "ng-worker1"),
            pod("web-a", "ng-worker1"), pod("web-b", "ng-worker2"), pod("web-c", "ng-worker2")]
    assert timeline.pods_to_move(pods, "ng-worker4") == ["db-0", "web-b"]


def test_only_what_the_victim_lacks_is_moved():
    pods = [pod("db-0", "ng-worker1"), pod("db-1", "ng-worker4"), pod("web-a", "ng-worker1"), pod("web-b", "ng-worker2")]
    assert timeline.pods_to_move(pods, "ng-worker4") == ["web-a"]
    pods = [pod("db-0", "ng-worker1"), pod("db-1", "ng-worker2"), pod("web-a", "ng-worker4"), pod("agent-x", "ng-worker1")]
    assert timeline.pods_to_move(pods, "ng-worker4") == ["db-0"]
