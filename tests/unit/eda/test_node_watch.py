"""The event source nodeguard.failover.node_watch: the watch loop (list, resume from the last resourceVersion,
bookmarks, relist on 410) against a fake watch stream, the node-down / node-up decisions, node-outage's storm
rule, the Lease state on our own clock, and the argument schema."""

from __future__ import annotations

import runpy
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SOURCE = REPO / "extensions" / "eda" / "plugins" / "event_source" / "node_watch.py"
EVENT_KEYS = {"node", "state", "ready", "lease", "event_id", "source"}


@pytest.fixture(scope="module")
def source() -> dict:
    """The source's namespace, loaded as ansible-rulebook loads it (runpy)."""
    return runpy.run_path(str(SOURCE))


@pytest.fixture(scope="module")
def api(source) -> dict:
    return source["_import_collection"]()


def node(name: str, ready: str | None = "True", version: str = "1") -> dict:
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready, "reason": "KubeletReady" if ready == "True" else "NodeStatusUnknown"})
    return {"metadata": {"name": name, "resourceVersion": version}, "status": {"conditions": conditions}}


def lease(name: str, renew: str, version: str = "1") -> dict:
    return {
        "metadata": {"name": name, "namespace": "kube-node-lease", "resourceVersion": version},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": renew},
    }


class FakeServer:
    """Answers the Watch loop like an apiserver: a list with its resourceVersion, then the scripted watches.

    Each watch is a list of events or an exception to raise when it is requested; after the last one it stops the loop.
    """

    def __init__(self, items: list, list_versions: list[str], watches: list, stop: threading.Event):
        self.items = items
        self.list_versions = list(list_versions)
        self.watches = list(watches)
        self.stop = stop
        self.lists = 0
        self.watched_from: list[str] = []

    def lister(self):
        self.lists += 1
        return list(self.items), self.list_versions.pop(0)

    def watcher(self, resource_version: str):
        self.watched_from.append(resource_version)
        script = self.watches.pop(0)
        last = not self.watches
        if isinstance(script, Exception):
            if last:
                self.stop.set()
            raise script
        return self._stream(script, last)

    def _stream(self, script: list, last: bool):
        yield from script
        if last:
            self.stop.set()


def run_watch(source, server: FakeServer, stop: threading.Event) -> list:
    delivered, slept = [], []
    watch = source["Watch"]("nodes", server.lister, server.watcher, lambda *change: delivered.append(change), sleep=slept.append)
    watch.run(stop)
    return delivered, slept


def test_watch_resumes_from_the_last_resource_version_and_bookmarks_move_it_on(source) -> None:
    stop = threading.Event()
    server = FakeServer(
        [node("w1")],
        ["100"],
        [
            [
                {"type": "MODIFIED", "object": node("w1", "False", "105")},
                {"type": "BOOKMARK", "object": {"kind": "Node", "metadata": {"resourceVersion": "120"}}},
            ],
            [],  # the server ends a watch (its timeout): the next one resumes, no list
            [{"type": "MODIFIED", "object": node("w1", "True", "130")}],
        ],
        stop,
    )
    delivered, slept = run_watch(source, server, stop)
    assert server.lists == 1
    assert server.watched_from == ["100", "120", "120"]
    assert [(kind, change) for kind, change, _obj in delivered] == [("nodes", "LIST"), ("nodes", "MODIFIED"), ("nodes", "MODIFIED")]
    assert slept == []


def test_a_410_in_the_stream_or_on_the_request_lists_again(source) -> None:
    stop = threading.Event()
    gone_event = {
        "type": "ERROR",
        "object": {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410, "message": "too old resource version: 1 (2345)"},
    }
    server = FakeServer(
        [node("w1")],
        ["1", "2345", "2400"],
        [
            [gone_event],
            source["Gone"](),  # a 410 answer to the watch request itself
            [{"type": "ADDED", "object": node("w2", "True", "2401")}],
        ],
        stop,
    )
    delivered, _slept = run_watch(source, server, stop)
    assert server.lists == 3
    assert server.watched_from == ["1", "2345", "2400"]
    assert [change for _kind, change, _obj in delivered] == ["LIST", "LIST", "LIST", "ADDED"]


def test_other_failures_back_off_and_resume_without_a_list(source) -> None:
    stop = threading.Event()
    server = FakeServer([node("w1")], ["10"], [ConnectionResetError(), ConnectionResetError(), [{"type": "ERROR", "object": {"code": 500}}], []], stop)
    _delivered, slept = run_watch(source, server, stop)
    assert server.lists == 1
    assert server.watched_from == ["10", "10", "10", "10"]
    assert slept == [1.0, 2.0, 4.0]


def events(tracker, *changes) -> list[dict]:
    found = []
    for change in changes:
        found.extend(e["nodeguard_node_event"] for e in tracker.handle(*change))
    return found


def test_node_down_when_not_ready_or_unknown_and_up_only_after_down(source, api) -> None:
    tracker = source["Tracker"](api, "50%")
    seen = events(
        tracker, ("nodes", "LIST", [node("cp1"), node("w1"), node("w2"), node("w3")]), ("nodes", "MODIFIED", node("w2", "True"))
    )  # an up without a down is no event
    assert seen == []
    seen = events(tracker, ("nodes", "MODIFIED", node("w1", "False")), ("nodes", "MODIFIED", node("w1", "Unknown")), ("nodes", "MODIFIED", node("w1", "True")))
    assert [(e["node"], e["state"], e["ready"]) for e in seen] == [("w1", "down", "False"), ("w1", "up", "True")]
    assert all(set(e) == EVENT_KEYS and e["source"] == "node_watch" for e in seen)
    assert events(tracker, ("nodes", "MODIFIED", node("w2", "Unknown")))[0]["ready"] == "Unknown"


def test_a_node_without_a_ready_condition_is_not_decided(source, api) -> None:
    tracker = source["Tracker"](api, "100%")
    assert events(tracker, ("nodes", "LIST", [node("w1"), node("w2", None)])) == []
    assert [e["state"] for e in events(tracker, ("nodes", "MODIFIED", node("w2", "Unknown")))] == ["down"]


def test_a_node_already_down_at_start_is_reported_once_and_a_relist_does_not_repeat_it(source, api) -> None:
    tracker = source["Tracker"](api, "50%")
    nodes = [node("cp1"), node("w1", "Unknown"), node("w2")]
    assert [e["node"] for e in events(tracker, ("nodes", "LIST", nodes))] == ["w1"]
    assert events(tracker, ("nodes", "LIST", nodes)) == []
    assert [e["state"] for e in events(tracker, ("nodes", "LIST", [node("cp1"), node("w1"), node("w2")]))] == ["up"]


def test_the_storm_rule_is_node_outages_with_its_unit(source, api) -> None:
    tracker = source["Tracker"](api, "40%")  # 5 nodes: 40% allows 2
    events(tracker, ("nodes", "LIST", [node(f"n{i}") for i in range(5)]))
    first, second = (events(tracker, ("nodes", "MODIFIED", node(n, "False")))[0] for n in ("n1", "n2"))
    assert "refused" not in first and "refused" not in second
    third = events(tracker, ("nodes", "MODIFIED", node("n3", "Unknown")))[0]
    assert third["refused"] == "storm"
    assert (third["nodes_down"], third["nodes_total"], third["allowed"], third["down_nodes"]) == (3, 5, 2, ["n1", "n2", "n3"])
    # the same verdict as node-outage's own rule on the same nodes
    with pytest.raises(api["RefusedError"], match=r"refused \[storm\]"):
        api["safety"].check_storm(list(tracker.nodes.values()), "40%")
    count = source["Tracker"](api, "1")
    events(count, ("nodes", "LIST", [node("a"), node("b", "False"), node("c")]))
    assert events(count, ("nodes", "MODIFIED", node("c", "False")))[0]["refused"] == "storm"


def test_only_checked_values_leave_the_source(source, api) -> None:
    tracker = source["Tracker"](api, "100%")
    bad = node("{{ lookup('pipe', 'id') }}", "False")
    assert events(tracker, ("nodes", "LIST", [bad, node("w1", "Maybe")])) == []
    assert events(tracker, ("nodes", "MODIFIED", bad)) == []
    assert "{{ lookup('pipe', 'id') }}" not in tracker.nodes
    odd = node("w2", "False")
    odd["status"]["conditions"][-1]["reason"] = "{{ 7 * 7 }}"
    (event,) = events(tracker, ("nodes", "MODIFIED", odd))
    assert set(event) == EVENT_KEYS and "{{" not in repr(event)


def test_the_lease_state_is_measured_on_our_own_clock(source, api) -> None:
    now = [1000.0]
    tracker = source["Tracker"](api, "100%", clock=lambda: now[0])
    # The Lease's renewTime is from another machine's clock (here far in the future): it is never compared with ours.
    events(
        tracker,
        ("nodes", "LIST", [node("w1"), node("w2")]),
        ("leases", "LIST", [lease("w1", "2099-01-01T00:00:00.000000Z"), lease("w2", "2099-01-01T00:00:00.000000Z")]),
    )
    assert tracker.lease_state("w1") == "unknown"  # listed, no renewal seen yet
    now[0] += 10
    events(tracker, ("leases", "MODIFIED", lease("w1", "2099-01-01T00:00:10.000000Z", "2")))
    assert tracker.lease_state("w1") == "renewing"
    now[0] += 41
    assert tracker.lease_state("w1") == "silent"
    assert tracker.lease_state("w2") == "silent"  # 51 s watched, no renewal seen
    events(tracker, ("leases", "MODIFIED", lease("w2", "2099-01-01T00:00:00.000000Z", "3")))  # same renewTime: no renewal
    assert tracker.lease_state("w2") == "silent"
    assert events(tracker, ("nodes", "MODIFIED", node("w1", "Unknown")))[0]["lease"] == "silent"
    assert tracker.lease_state("ghost") == "unknown"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"max_unhealthy": "lots"}, "max_unhealthy"),
        ({"max_unhealthy": "150%"}, "more than 100%"),
        ({"watch_timeout": 5}, "watch_timeout"),
        ({"kubeconfig": "/k", "token": "x"}, "token"),
    ],
)
def test_the_arguments_are_checked_against_the_schema(source, api, args: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        source["checked_args"](args, api)


def test_defaults_and_empty_values(source, api) -> None:
    checked = source["checked_args"]({"kubeconfig": "", "context": "", "max_unhealthy": 2, "eda_feedback_queue": None}, api)
    assert checked == {"kubeconfig": None, "context": None, "max_unhealthy": "2", "watch_timeout": 300, "rereport_interval": 300}
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(source["ARGS_SCHEMA"])


def test_a_refused_watch_says_its_http_status(source, caplog) -> None:
    from kubernetes.client.exceptions import ApiException

    stop = threading.Event()
    server = FakeServer([node("w1")], ["10"], [ApiException(status=403, reason="Forbidden"), []], stop)
    with caplog.at_level("WARNING", logger="nodeguard.failover.node_watch"):
        run_watch(source, server, stop)
    assert "nodes watch failed (ApiException, HTTP 403); retrying in 1 s" in caplog.text


# -- issue 38 item 9: a node down is reported again while it stays down and untainted; unreported nodes are no storm


def tainted(found: dict) -> dict:
    found["spec"] = {"taints": [{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]}
    return found


def test_a_node_still_down_and_untainted_is_reported_again(source, api) -> None:
    """A run that failed for a transient reason (or was refused) is not the end: the node is reported again every
    rereport_interval seconds while it stays down and has no out-of-service taint."""
    now = [1000.0]
    tracker = source["Tracker"](api, "50%", clock=lambda: now[0], rereport_seconds=300)
    assert [e["node"] for e in events(tracker, ("nodes", "LIST", [node("cp1"), node("w1", "Unknown"), node("w2")]))] == ["w1"]
    now[0] += 299
    assert tracker.still_down() == []
    now[0] += 2
    (again,) = [e["nodeguard_node_event"] for e in tracker.still_down()]
    assert (again["node"], again["state"], again["ready"]) == ("w1", "down", "Unknown") and set(again) == EVENT_KEYS
    assert tracker.still_down() == []  # the next one, a full interval later
    events(tracker, ("nodes", "MODIFIED", tainted(node("w1", "Unknown", "2"))))  # a run acted: no more reports
    now[0] += 1000
    assert tracker.still_down() == []
    assert [e["state"] for e in events(tracker, ("nodes", "MODIFIED", node("w1", "True", "3")))] == ["up"]
    now[0] += 1000
    assert tracker.still_down() == []


def test_a_node_hidden_by_a_storm_is_reported_when_the_storm_is_over(source, api) -> None:
    now = [1000.0]
    tracker = source["Tracker"](api, "1", clock=lambda: now[0], rereport_seconds=300)
    events(tracker, ("nodes", "LIST", [node("a"), node("b"), node("c")]))
    assert "refused" not in events(tracker, ("nodes", "MODIFIED", node("b", "False")))[0]
    assert events(tracker, ("nodes", "MODIFIED", node("c", "False")))[0]["refused"] == "storm"
    assert [e["state"] for e in events(tracker, ("nodes", "MODIFIED", node("b", "True")))] == ["up"]
    now[0] += 301
    (again,) = [e["nodeguard_node_event"] for e in tracker.still_down()]
    assert again["node"] == "c" and "refused" not in again


def test_nodes_without_a_ready_condition_are_left_out_of_the_storm_count(source, api) -> None:
    """Three nodes registering (no Ready condition yet) while one dies: 1 of 3 reported nodes is down, not 4 of 6."""
    tracker = source["Tracker"](api, "40%")
    registering = [node(f"new{i}", None) for i in range(3)]
    events(tracker, ("nodes", "LIST", [node("cp1"), node("w1"), node("w2"), *registering]))
    (down,) = events(tracker, ("nodes", "MODIFIED", node("w1", "Unknown")))
    assert down["node"] == "w1" and "refused" not in down
    # a real storm still counts only reported nodes: 2 of 3 down, 40% of 3 allows 1
    storm = events(tracker, ("nodes", "MODIFIED", node("w2", "False")))[0]
    assert (storm["refused"], storm["nodes_down"], storm["nodes_total"], storm["down_nodes"]) == ("storm", 2, 3, ["w1", "w2"])


def test_the_rereport_interval_is_an_argument(source, api) -> None:
    assert source["checked_args"]({}, api)["rereport_interval"] == 300
    with pytest.raises(ValueError, match="rereport_interval"):
        source["checked_args"]({"rereport_interval": 5}, api)
