"""The event filter nodeguard.failover.alertmanager_nodes on its own: splitting, the nodes-down count
across posts, and forgetting a node whose firing alert stopped being repeated (no process needed)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from rulebook_process import alert, webhook_payload

FILTER = Path(__file__).resolve().parents[3] / "extensions" / "eda" / "plugins" / "event_filter" / "alertmanager_nodes.py"


@pytest.fixture
def alertmanager_nodes():
    """A fresh copy of the filter module (as ansible-rulebook loads it: runpy, one namespace per source)."""
    return runpy.run_path(str(FILTER))


def event(alerts: list[dict]) -> dict:
    return {"payload": webhook_payload(alerts), "meta": {"endpoint": "alerts"}}


def test_one_event_per_node_alert_with_the_count(alertmanager_nodes) -> None:
    out = alertmanager_nodes["main"](event([alert("w1"), alert("w2")]))
    assert [(e["node"], e["status"], e["nodes_down"], e["down_nodes"]) for e in out] == [
        ("w1", "firing", 2, ["w1", "w2"]),
        ("w2", "firing", 2, ["w1", "w2"]),
    ]
    assert out[0]["alert"]["labels"]["alertname"] == "NodeguardNodeDown"
    assert out[0]["meta"] == {"endpoint": "alerts"}


def test_count_spans_posts_and_resolved_alerts_leave_it(alertmanager_nodes) -> None:
    main = alertmanager_nodes["main"]
    main(event([alert("w1")]))
    assert main(event([alert("w2")]))[0]["nodes_down"] == 2
    out = main(event([alert("w1", status="resolved")]))
    assert (out[0]["status"], out[0]["nodes_down"], out[0]["down_nodes"]) == ("resolved", 1, ["w2"])


def test_other_alerts_do_not_count_and_unlabelled_alerts_are_dropped(alertmanager_nodes) -> None:
    other = alert("w1", alertname="KubeletTooManyPods")
    unlabelled = alert("w2")
    del unlabelled["labels"]["node"]
    out = alertmanager_nodes["main"](event([other, unlabelled]))
    assert [(e["node"], e["alertname"], e["nodes_down"]) for e in out] == [("w1", "KubeletTooManyPods", 0)]


def test_a_node_not_repeated_within_the_ttl_is_forgotten(alertmanager_nodes, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    main = alertmanager_nodes["main"]
    fake_time = type("FakeTime", (), {"monotonic": staticmethod(lambda: clock[0])})
    monkeypatch.setitem(main.__globals__, "time", fake_time)
    main(event([alert("w1")]), firing_ttl_seconds=600)
    clock[0] += 601
    assert main(event([alert("w2")]), firing_ttl_seconds=600)[0]["down_nodes"] == ["w2"]


def test_non_alertmanager_events_pass_through(alertmanager_nodes) -> None:
    plain = {"payload": {"hello": "world"}, "meta": {}}
    assert alertmanager_nodes["main"](plain) == [plain]
