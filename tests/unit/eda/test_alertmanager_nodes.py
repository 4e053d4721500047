"""The event filter nodeguard.failover.alertmanager_nodes: what it lets through to the rulebook, and what it refuses.

ansible-rulebook copies event fields into a playbook's extra vars, and Ansible evaluates extra vars as
templates. So every value the filter emits must be checked, and an alert that does not check out must
become a refusal event whose text is inert.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FILTER = REPO / "extensions" / "eda" / "plugins" / "event_filter" / "alertmanager_nodes.py"

INJECTIONS = [
    "{{ lookup('pipe', 'id') }}w9",
    "ng-{{ 7*7 }}",
    "ng-{% if true %}x{% endif %}",
    "ng-{# c #}",
    "a" * 254,
    "NG-Worker1",
    "",
    "ng worker",
    "ng-w1\n",
    "-ng",
    "ng..w1",
    "$ANSIBLE_VAULT;1.1;AES256",
]


@pytest.fixture
def main():
    """A fresh copy of the filter (as ansible-rulebook loads it: runpy, one namespace per source)."""
    return runpy.run_path(str(FILTER))["main"]


def alert(node="ng-w1", status="firing", fingerprint="0a1b2c3d4e5f6789", alertname="NodeguardNodeDown",
          starts_at="2026-11-22T03:00:00.123Z") -> dict:
    return {
        "status": status,
        "labels": {"alertname": alertname, "node": node, "severity": "critical"},
        "annotations": {"summary": "{{ lookup('pipe', 'touch /tmp/x') }}"},
        "startsAt": starts_at,
        "fingerprint": fingerprint,
    }


def event(*alerts) -> dict:
    return {"payload": {"version": "4", "alerts": list(alerts)}, "meta": {"endpoint": "alerts", "headers": {"User-Agent": "{{ 1 }}"}}}


def test_a_valid_alert_becomes_one_event_of_checked_values_only(main) -> None:
    (out,) = main(event(alert()))
    assert out == {
        "node": "ng-w1",
        "status": "firing",
        "alertname": "NodeguardNodeDown",
        "fingerprint": "0a1b2c3d4e5f6789",
        "starts_at": "2026-11-22T03:00:00.123Z",
        "nodes_down": 1,
        "down_nodes": ["ng-w1"],
        "truncated_alerts": 0,
    }  # no raw alert (annotations), no request headers


@pytest.mark.parametrize("node", INJECTIONS)
def test_a_node_label_that_is_not_a_kubernetes_name_is_refused_inertly(main, node: str) -> None:
    out = main(event(alert(node=node)))
    if node == "":  # an empty node label names no node: dropped, and the log says so
        (dropped,) = out
        assert "has no label node" in dropped["nodeguard_refused"]
        return
    (refused,) = out
    assert set(refused) == {"nodeguard_refused"}
    text = refused["nodeguard_refused"]
    assert "alert refused" in text and "label node" in text
    # the value is shown escaped: no template syntax, no newline, nothing a vault or a shell would read
    assert not set("{}%#\n$;") & set(text)


def test_refused_alerts_do_not_count_and_others_in_the_post_still_pass(main) -> None:
    out = main(event(alert(node="{{ lookup('pipe', 'id') }}w9"), alert(node="ng-w2")))
    assert "nodeguard_refused" in out[0]
    assert (out[1]["node"], out[1]["nodes_down"], out[1]["down_nodes"]) == ("ng-w2", 1, ["ng-w2"])


@pytest.mark.parametrize("field, value", [
    ("fingerprint", "{{ lookup('pipe', 'id') }}"),
    ("fingerprint", "0A1B"),
    ("fingerprint", ""),
    ("status", "{{ 1 }}"),
    ("alertname", "Node{{ 1 }}"),
    ("starts_at", "{{ now() }}"),
    ("starts_at", ""),
])
def test_other_fields_are_checked_too(main, field: str, value: str) -> None:
    (out,) = main(event(alert(**{field: value})))
    assert set(out) == {"nodeguard_refused"}
    assert field in out["nodeguard_refused"]
    assert "{" not in out["nodeguard_refused"]


def test_a_payload_that_is_not_from_alertmanager_is_refused(main) -> None:
    (out,) = main({"payload": {"node": "{{ lookup('pipe', 'id') }}", "nodeguard_request": "node-outage"}, "meta": {}})
    assert set(out) == {"nodeguard_refused"}


def test_non_string_node_labels_are_refused(main) -> None:
    (out,) = main(event(alert(node=["ng-w1"])))
    assert "must be a string" in out["nodeguard_refused"]


def test_count_spans_posts_and_resolved_alerts_leave_it(main) -> None:
    main(event(alert(node="w1")))
    assert main(event(alert(node="w2")))[0]["nodes_down"] == 2
    (out,) = main(event(alert(node="w1", status="resolved")))
    assert (out["status"], out["nodes_down"], out["down_nodes"]) == ("resolved", 1, ["w2"])


def test_a_numeric_node_name_stays_a_string(main) -> None:
    (out,) = main(event(alert(node="123")))
    assert out["node"] == "123"


def test_a_node_not_repeated_within_the_ttl_is_forgotten(main, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    fake_time = type("FakeTime", (), {"monotonic": staticmethod(lambda: clock[0])})
    monkeypatch.setitem(main.__globals__, "time", fake_time)
    main(event(alert(node="w1")), firing_ttl_seconds=600)
    clock[0] += 601
    assert main(event(alert(node="w2")), firing_ttl_seconds=600)[0]["down_nodes"] == ["w2"]


def refusals(out: list) -> list[str]:
    return [e["nodeguard_refused"] for e in out if "nodeguard_refused" in e]


def test_every_dropped_alert_is_logged_with_its_reason(main) -> None:
    """Nothing vanishes: an alert that is not a node-down alert, and one without the node label, each get a refusal
    event (the rulebook logs it) that says why, and neither counts as a node down."""
    other = alert(node="w1", alertname="KubeletTooManyPods")
    unlabelled = alert(node="w2")
    del unlabelled["labels"]["node"]
    out = main(event(other, unlabelled))
    assert [e for e in out if "nodeguard_refused" not in e] == []
    not_node_down, no_label = refusals(out)
    assert "KubeletTooManyPods for node w1 is not a node-down alert (NodeguardNodeDown, KubeNodeNotReady, KubeNodeUnreachable)" in not_node_down
    assert "alert 'NodeguardNodeDown' has no label node, so it names no node (labels: 'alertname', 'severity')" in no_label
    assert main(event(alert(node="w3")))[0]["nodes_down"] == 1  # neither counted


@pytest.mark.parametrize("label", ["instance", "kubernetes_node", "nodename"])
def test_a_node_down_alert_labelled_otherwise_is_logged_with_the_label_it_has(main, label: str) -> None:
    """A NodeguardNodeDown whose node label is named instance, kubernetes_node or nodename was dropped without a line."""
    misnamed = alert(node="w1")
    misnamed["labels"][label] = misnamed["labels"].pop("node")
    (dropped,) = main(event(misnamed))
    text = dropped["nodeguard_refused"]
    assert f"has no label node (it has {label}: set the rule's node label to node), so it names no node" in text
    assert not set("{}%#\n$;") & set(text)


@pytest.mark.parametrize("alertname", ["KubeNodeNotReady", "KubeNodeUnreachable"])
def test_kube_prometheus_node_alerts_are_understood(main, alertname: str) -> None:
    """kube-prometheus' KubeNodeNotReady and KubeNodeUnreachable carry kube-state-metrics' label node."""
    kube = alert(node="w1", alertname=alertname)
    kube["labels"].update({"job": "kube-state-metrics", "namespace": "monitoring", "severity": "warning"})
    (out,) = main(event(kube))
    assert (out["node"], out["alertname"], out["status"], out["nodes_down"]) == ("w1", alertname, "firing", 1)


def test_a_node_with_two_node_down_alerts_counts_once_and_stays_down_until_both_resolve(main) -> None:
    main(event(alert(node="w1"), alert(node="w1", alertname="KubeNodeNotReady", fingerprint="ff")))
    assert main(event(alert(node="w2")))[0]["nodes_down"] == 2
    (out,) = main(event(alert(node="w1", status="resolved")))
    assert (out["nodes_down"], out["down_nodes"]) == (2, ["w1", "w2"])  # KubeNodeNotReady still fires for w1
    (out,) = main(event(alert(node="w1", alertname="KubeNodeNotReady", fingerprint="ff", status="resolved")))
    assert out["down_nodes"] == ["w2"]


def test_truncated_alerts_count_toward_the_storm(main) -> None:
    """max_alerts: 1 and three nodes down: one alert and truncatedAlerts 2 must read as three nodes down."""
    posted = event(alert(node="w1"))
    posted["payload"].update({"truncatedAlerts": 2, "commonLabels": {"alertname": "NodeguardNodeDown"}})
    out = main(posted)
    (note,) = refusals(out)
    assert "2 alerts of this group were left out by Alertmanager (truncatedAlerts" in note
    (seen,) = [e for e in out if "node" in e]
    assert (seen["nodes_down"], seen["down_nodes"], seen["truncated_alerts"]) == (3, ["w1"], 2)


def test_truncated_alerts_of_a_mixed_group_count_and_of_another_alert_do_not(main) -> None:
    mixed = event(alert(node="w1"))
    mixed["payload"]["truncatedAlerts"] = 1  # no common alertname: the unseen ones may be node-down alerts
    assert [e["nodes_down"] for e in main(mixed) if "node" in e] == [2]
    other = event(alert(node="w1", alertname="KubeletTooManyPods"))
    other["payload"].update({"truncatedAlerts": 5, "commonLabels": {"alertname": "KubeletTooManyPods"}})
    assert len(refusals(main(other))) == 1  # only the dropped alert's line: the 5 are not node-down alerts


@pytest.mark.parametrize("count", [-1, "2", 1.5, True, None])
def test_a_malformed_truncated_count_refuses_the_post(main, count) -> None:
    posted = event(alert(node="w1"))
    posted["payload"]["truncatedAlerts"] = count
    (out,) = main(posted)
    assert "truncatedAlerts" in out["nodeguard_refused"] and "is not a count" in out["nodeguard_refused"]
