"""The rulebook's decisions, with a real ansible-rulebook process and real playbook runs.

The action playbooks are replaced by recorders (playbooks/record-*.yml) that write one file per run,
so each test sees exactly which runs the rulebook started. No lab needed: the remediation itself is
tested in test_rulebook_lab.py.

Runs are sequential and events are handled in order, so "nothing ran for X" is checked by posting a
control alert for another node afterwards and waiting for its run: once it is recorded, X's alert
has been decided.

One rulebook process serves the module (starting the JVM is the slow part); every test uses its
own node names and resolves the nodes it took down, so the tests do not see each other's state.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rulebook_process import RulebookProcess, alert, webhook_payload

HERE = Path(__file__).resolve().parent
RUN_TIMEOUT = 300  # generous: the machine may be busy with the lab
_control_nodes = (f"ng-control-{n}" for n in itertools.count())
ALLOWED = ["ng-a1", "ng-b1", "ng-r1", "ng-s1", "ng-s2", "ng-s3", "ng-t1", "ng-d1", "ng-d2", "ng-d3", "ng-e1", "ng-f1", "ng-i1", "123",
           *(f"ng-control-{n}" for n in range(40))]


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("records")


@pytest.fixture(scope="module")
def rulebook(tmp_path_factory: pytest.TempPathFactory, records: Path) -> Iterator[RulebookProcess]:
    process = RulebookProcess(
        tmp_path_factory.mktemp("rulebook"),
        overrides={
            "nodeguard_outage_playbook": str(HERE / "playbooks" / "record-outage.yml"),
            "nodeguard_recover_playbook": str(HERE / "playbooks" / "record-recover.yml"),
            "nodeguard_storm_max_nodes": 2,
            "nodeguard_deny_nodes": ["ng-cp1"],
            # exact names only; db-node-7 and every injection attempt are not on it
            "nodeguard_allow_nodes": ALLOWED,
        },
        env={"NODEGUARD_EDA_RECORD_DIR": str(records)},
    )
    yield process
    process.stop()


def runs(records: Path, action: str, node: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(records.glob(f"{action}-{node}-*"))]


def wait_for_run(rulebook: RulebookProcess, records: Path, action: str, node: str, count: int = 1) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT
    while len(runs(records, action, node)) < count:
        if time.monotonic() > deadline:
            pytest.fail(f"no {action} run for {node} within {RUN_TIMEOUT}s; ansible-rulebook log:\n{rulebook.log()[-4000:]}")
        if rulebook.process.poll() is not None:
            pytest.fail(f"ansible-rulebook exited ({rulebook.process.returncode}):\n{rulebook.log()[-4000:]}")
        time.sleep(0.5)


def decided_after_control(rulebook: RulebookProcess, records: Path) -> None:
    """Post a clean alert for another node and wait for its run: everything before it is decided."""
    control_node = next(_control_nodes)
    assert rulebook.post(webhook_payload([alert(control_node)])) == 200
    wait_for_run(rulebook, records, "outage", control_node)
    # the control node is resolved again, so it does not count towards later storms
    assert rulebook.post(webhook_payload([alert(control_node, status="resolved")])) == 200
    wait_for_run(rulebook, records, "recover", control_node)


def test_node_down_alert_runs_node_outage_for_that_node(rulebook: RulebookProcess, records: Path) -> None:
    assert rulebook.post(webhook_payload([alert("ng-a1")])) == 200
    wait_for_run(rulebook, records, "outage", "ng-a1")
    (run,) = runs(records, "outage", "ng-a1")
    assert run["outage_nodes"] == ["ng-a1"]
    assert run["job_id"] == ""  # no fixed job id: node-outage makes a unique one per run
    assert rulebook.post(webhook_payload([alert("ng-a1", status="resolved")])) == 200
    wait_for_run(rulebook, records, "recover", "ng-a1")


def wait_for_log(rulebook: RulebookProcess, line: str) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT
    while line not in rulebook.log():
        if time.monotonic() > deadline:
            pytest.fail(f"no {line!r} within {RUN_TIMEOUT}s; ansible-rulebook log:\n{rulebook.log()[-4000:]}")
        time.sleep(0.5)


def test_repeated_alert_runs_once(rulebook: RulebookProcess, records: Path) -> None:
    first = webhook_payload([alert("ng-b1")])
    for _attempt in range(3):  # Alertmanager re-sends a firing group at every group_interval/repeat_interval
        assert rulebook.post(first) == 200
    wait_for_log(rulebook, "nodeguard: the run left ng-b1 tainted")
    assert rulebook.post(first) == 200  # re-sent after the run: the dedupe
    # the same node down again soon after (a new alert, new startsAt): inside the cool-down
    assert rulebook.post(webhook_payload([alert("ng-b1", starts_at="2026-11-22T03:05:00Z")])) == 200
    assert rulebook.post(webhook_payload([alert("ng-b1", status="resolved")])) == 200
    decided_after_control(rulebook, records)
    assert len(runs(records, "outage", "ng-b1")) == 1


def test_a_refused_run_arms_neither_dedupe_nor_cool_down(rulebook: RulebookProcess, records: Path) -> None:
    """Issue 21: a forged alert for a healthy node, refused by node-outage, must not silence the real one."""
    refuse = records / "refuse-ng-r1"
    refuse.touch()  # the recorder fails for ng-r1, as node-outage refuses a node that is not proven dead
    assert rulebook.post(webhook_payload([alert("ng-r1", starts_at="2026-11-22T04:00:00Z")])) == 200
    wait_for_run(rulebook, records, "outage", "ng-r1", count=3)  # the run and its two retries, all refused
    refuse.unlink()
    # the real outage's alert (its own startsAt), minutes later: it runs, and this run acts
    real = webhook_payload([alert("ng-r1", starts_at="2026-11-22T04:10:00Z")])
    assert rulebook.post(real) == 200
    wait_for_run(rulebook, records, "outage", "ng-r1", count=4)
    wait_for_log(rulebook, "nodeguard: the run left ng-r1 tainted")
    # the acted alert re-sent (dedupe), then a new alert for the node (cool-down): neither runs
    assert rulebook.post(real) == 200
    assert rulebook.post(webhook_payload([alert("ng-r1", starts_at="2026-11-22T04:20:00Z")])) == 200
    assert rulebook.post(webhook_payload([alert("ng-r1", status="resolved")])) == 200
    decided_after_control(rulebook, records)
    assert len(runs(records, "outage", "ng-r1")) == 4
    log = rulebook.log()
    assert "nodeguard: ng-r1: the alert of 2026-11-22T04:10:00Z again, a run already tainted the node for it (dedupe)" in log
    assert "nodeguard: ng-r1 is down again within 30 minutes of a run that tainted it (cool-down)" in log


def test_storm_remediates_nothing(rulebook: RulebookProcess, records: Path) -> None:
    storm = [alert(node) for node in ("ng-s1", "ng-s2", "ng-s3")]
    assert rulebook.post(webhook_payload(storm)) == 200
    # the storm is over for the control alert only once every storm node is resolved
    assert rulebook.post(webhook_payload([alert(a["labels"]["node"], status="resolved") for a in storm])) == 200
    decided_after_control(rulebook, records)
    assert not list(records.glob("outage-ng-s?-*"))
    assert "nodeguard STORM: 3 nodes down (ng-s1, ng-s2, ng-s3)" in rulebook.log()


def test_storm_counts_alerts_across_posts(rulebook: RulebookProcess, records: Path) -> None:
    # Alertmanager routes grouped by node send one POST per node: the third node is a storm.
    for node in ("ng-d1", "ng-d2"):
        assert rulebook.post(webhook_payload([alert(node)])) == 200
        wait_for_run(rulebook, records, "outage", node)
    assert rulebook.post(webhook_payload([alert("ng-d3")])) == 200
    assert rulebook.post(webhook_payload([alert(n, status="resolved") for n in ("ng-d1", "ng-d2", "ng-d3")])) == 200
    decided_after_control(rulebook, records)
    assert runs(records, "outage", "ng-d3") == []


def test_a_truncated_storm_remediates_nothing(rulebook: RulebookProcess, records: Path) -> None:
    """max_alerts: 1 with three nodes down: Alertmanager posts one alert and truncatedAlerts 2 (issue 21)."""
    truncated = webhook_payload([alert("ng-t1")])
    truncated.update({"truncatedAlerts": 2, "commonLabels": {"alertname": "NodeguardNodeDown"}})
    assert rulebook.post(truncated) == 200
    assert rulebook.post(webhook_payload([alert("ng-t1", status="resolved")])) == 200
    decided_after_control(rulebook, records)
    assert runs(records, "outage", "ng-t1") == []
    assert "nodeguard STORM: 3 nodes down (ng-t1) counting 2 alerts Alertmanager left out" in rulebook.log()
    assert "2 alerts of this group were left out by Alertmanager (truncatedAlerts" in rulebook.log()


def test_deny_and_allow_lists(rulebook: RulebookProcess, records: Path) -> None:
    assert rulebook.post(webhook_payload([alert("ng-cp1")])) == 200  # deny-listed
    assert rulebook.post(webhook_payload([alert("ng-cp1", status="resolved")])) == 200
    assert rulebook.post(webhook_payload([alert("db-node-7")])) == 200  # not in nodeguard_allow_nodes
    assert rulebook.post(webhook_payload([alert("db-node-7", status="resolved")])) == 200
    decided_after_control(rulebook, records)
    assert not list(records.glob("*-ng-cp1-*"))
    assert not list(records.glob("*-db-node-7-*"))


def test_resolved_alert_runs_node_recover(rulebook: RulebookProcess, records: Path) -> None:
    assert rulebook.post(webhook_payload([alert("ng-e1")])) == 200
    wait_for_run(rulebook, records, "outage", "ng-e1")
    assert rulebook.post(webhook_payload([alert("ng-e1", status="resolved")])) == 200
    wait_for_run(rulebook, records, "recover", "ng-e1")
    assert runs(records, "recover", "ng-e1")[0]["outage_nodes"] == ["ng-e1"]


def test_wrong_token_is_refused_and_changes_nothing(rulebook: RulebookProcess, records: Path) -> None:
    assert rulebook.post(webhook_payload([alert("ng-f1")]), token="not-the-token") == 401
    decided_after_control(rulebook, records)
    assert runs(records, "outage", "ng-f1") == []


def test_a_numeric_node_name_reaches_the_playbook_as_a_string(rulebook: RulebookProcess, records: Path) -> None:
    assert rulebook.post(webhook_payload([alert("123")])) == 200
    wait_for_run(rulebook, records, "outage", "123")
    assert runs(records, "outage", "123")[0]["outage_nodes"] == ["123"]
    assert rulebook.post(webhook_payload([alert("123", status="resolved")])) == 200
    wait_for_run(rulebook, records, "recover", "123")


def test_an_injection_alert_runs_nothing_and_is_logged(rulebook: RulebookProcess, records: Path, tmp_path: Path) -> None:
    """The recorder playbooks read outage_nodes, as node-outage does: a template there would run."""
    marker = tmp_path / "injected"
    payloads = [
        f"{{{{ lookup('pipe', 'touch {marker}') }}}}w9",
        f"ng-{{{{ lookup('pipe', 'touch {marker}') }}}}",
        "ng-{{ 7*7 }}",
    ]
    for node in payloads:
        assert rulebook.post(webhook_payload([alert(node)])) == 200
        assert rulebook.post(webhook_payload([alert(node, status="resolved")])) == 200
    # a valid, allowed node whose other fields carry the payload: refused too (fingerprint), or dropped (annotations)
    forged = alert("ng-i1")
    forged["fingerprint"] = f"{{{{ lookup('pipe', 'touch {marker}') }}}}"
    forged["annotations"]["summary"] = f"{{{{ lookup('pipe', 'touch {marker}') }}}}"
    assert rulebook.post(webhook_payload([forged])) == 200
    decided_after_control(rulebook, records)
    assert not marker.exists(), "a command from the alert ran"
    assert not list(records.glob("*-ng-4*")) and not list(records.glob("*-ng-i1-*"))
    assert not [p for p in records.iterdir() if "{" in p.name or "w9" in p.name]
    log = rulebook.log()
    assert log.count("nodeguard REFUSED: alert refused, nothing runs for it: label node:") == 2 * len(payloads)
    assert "nodeguard REFUSED: alert refused, nothing runs for it: fingerprint" in log
