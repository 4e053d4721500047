"""node_outage and node_recover return the lines their roles print (plan_lines, summary; issue 24 item 1), so the
roles hold no Jinja logic. The text is what the roles' Jinja printed before: each test renders those expressions
(copied here from roles/node_*/tasks/node.yml as they were) with ansible-core's Templar on the module's own result."""

import json
import pathlib
import sys

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "incident"))

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import MissingProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from ansible_collections.nodeguard.failover.plugins.modules import node_outage, node_recover
from incident_fakes import FakeClock, FakePower, lease, renewing_lease
from incident_scenario import dead_worker_cluster, options, setup

POWER = {"type": "redfish", "address": "https://bmc-w3.example.test", "username": "u", "password": "p"}

BEFORE_PLAN = (
    "{{ [node_outage_result.timing.detail] + (node_outage_result.plan | map(attribute='step') | zip(node_outage_result.plan"
    " | map(attribute='status'), node_outage_result.plan | map(attribute='action')) | map('join', ' | ') | list) }}"
)
BEFORE_SUMMARY = [
    "{{ node_outage_result.message }} ({{ node_outage_result.action }}{{ ' from ' ~ node_outage_result.resumed_from"
    " if node_outage_result.resumed_from else '' }})",
    "proofs: {{ node_outage_result.proofs | map(attribute='detail') | list }}",
    "replacements: {{ (node_outage_result.record | default({}, true)).replacements | default('n/a') }}",
]


RECOVER_BEFORE = (
    "{{ [node_recover_result.message] + (node_recover_result.checks | map(attribute='detail') | list)"
    " + node_recover_result.timeline_table.split('\n') }}"  # a newline in the string, as YAML's "\n" made it
)


def as_the_role_printed(result: dict, template, name="node_outage_result"):
    """The old Jinja on the result as the controller has it (after JSON)."""
    variables = {name: json.loads(json.dumps(result))}
    templar = Templar(loader=DataLoader(), variables=variables)
    if isinstance(template, list):
        return [templar.template(trust_as_template(line)) for line in template]
    return templar.template(trust_as_template(template))


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_printed_lines_are_what_the_role_printed(run_module, monkeypatch, check_mode):
    cluster = dead_worker_cluster()
    monkeypatch.setattr(node_outage, "cluster_for", lambda module: cluster)
    monkeypatch.setattr(node_outage, "reader_for", lambda *args: FakePower("off"))
    monkeypatch.setattr(node_outage, "Clock", FakeClock)
    args = {"node": "w3", "power": POWER, "delete_volume_attachments": True, "verify_replacements": False}
    result = run_module(node_outage, args, check_mode=check_mode)
    assert not result["failed"], result["msg"]
    assert result["error"] is None
    # As before, but for the prove step: one line per proof under it (issue 34 item 5), not one "a; b; c" line.
    before = as_the_role_printed(result, BEFORE_PLAN)
    proofs = [f"    {p['name']}: OK ({p['detail']})" for p in result["proofs"]]
    assert len(proofs) == 3
    assert result["plan_lines"] == [before[0], f"prove | {result['plan'][0]['status']} | the power-off proofs, as read now:", *proofs, *before[2:]]
    assert result["summary"] == as_the_role_printed(result, BEFORE_SUMMARY)


@pytest.mark.parametrize("record", [None, {}, {"replacements": {"replaced": [{"pod": "default/db-0", "seconds": 12.5, "node": "w1"}], "all_ready": True}}])
def test_a_resumed_run_and_its_replacements_read_as_before(record):
    result = {"message": "done", "action": "resumed", "resumed_from": "delete-pods", "proofs": [{"detail": "it's off"}], "record": record}
    assert node_outage._summary(result) == as_the_role_printed(result, BEFORE_SUMMARY)
    assert node_outage._summary(result)[0] == "done (resumed from delete-pods)"


def test_recover_prints_what_the_role_printed():
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    condition = cluster.nodes["w3"]["status"]["conditions"][0]
    condition.update(status="True", lastTransitionTime=format_time(clock.now() - 120))
    renewing_lease(cluster, clock, "w3")
    cluster.nodes["w3"]["status"]["nodeInfo"]["bootID"] = "boot-w3-2"
    result = RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2", healthy_seconds=60), clock, False).run()
    summary = node_recover._summary(result)
    assert len(summary) > 1 + len(result["checks"]) and "taint removed" in summary[-1] + summary[-2]
    assert summary == as_the_role_printed(result, RECOVER_BEFORE, "node_recover_result")


def dry_run_on_a_ready_node(run_module, monkeypatch) -> dict:
    """node-outage --check on a worker that is up (Ready, Lease fresh, power On): the finding of issue 34 item 5."""
    cluster = dead_worker_cluster(w3_ready="True")
    cluster.node_leases["w3"] = lease("w3", FakeClock().now() - 3)
    monkeypatch.setattr(node_outage, "cluster_for", lambda module: cluster)
    monkeypatch.setattr(node_outage, "reader_for", lambda *args: FakePower("on"))
    monkeypatch.setattr(node_outage, "Clock", FakeClock)
    return run_module(node_outage, {"node": "w3", "power": POWER}, check_mode=True)


def test_a_dry_run_refusal_prints_its_plan_and_each_proof_as_lines(run_module, monkeypatch):
    result = dry_run_on_a_ready_node(run_module, monkeypatch)
    assert result["failed"] and result["error"] == result["msg"]
    lines = result["plan_lines"]
    assert lines[0].startswith("timing: ") and "prove | pending | the power-off proofs, as read now:" in lines
    assert "    not-ready: MISSING (node is Ready in the API)" in lines
    assert any(line.startswith("    lease-stale: MISSING (") for line in lines)
    assert any(line.startswith("    power-off: MISSING (") for line in lines)
    assert all("\n" not in line for line in lines)


def test_a_dry_run_refusal_leads_with_the_first_reason_and_no_return_or_lock_holder(run_module, monkeypatch):
    result = dry_run_on_a_ready_node(run_module, monkeypatch)
    assert result["msg"].startswith("w3 is Ready (this run never saw it NotReady): not waiting for it to go down: power-off not proven")
    assert "became Ready" not in result["msg"] and "go down again" not in result["msg"]
    assert "Missing proof(s): not-ready, lease-stale, power-off." in result["msg"]
    assert result["lock"]["holder"] is None  # check mode takes no lock


@pytest.mark.parametrize("check_mode", [False, True])
def test_the_lock_holder_is_shown_only_when_the_run_took_the_lock(run_module, monkeypatch, check_mode):
    cluster = dead_worker_cluster()
    monkeypatch.setattr(node_outage, "cluster_for", lambda module: cluster)
    monkeypatch.setattr(node_outage, "reader_for", lambda *args: FakePower("off"))
    monkeypatch.setattr(node_outage, "Clock", FakeClock)
    args = {"node": "w3", "power": POWER, "delete_volume_attachments": True, "verify_replacements": False}
    result = run_module(node_outage, args, check_mode=check_mode)
    assert not result["failed"], result["msg"]
    assert (result["lock"]["holder"] is None) == check_mode


def test_a_missing_proof_leads_with_its_first_detail():
    error = MissingProofError(["not-ready", "power-off"], ["not-ready: node is Unknown for 5s only, need 60s", "power-off: unreadable"])
    assert str(error) == (
        "not-ready: node is Unknown for 5s only, need 60s: power-off not proven, nothing was changed. "
        "Missing proof(s): not-ready, power-off. power-off: unreadable"
    )


def test_a_missing_proof_after_the_taint_does_not_say_nothing_was_changed():
    error = MissingProofError(["power-off"], ["power-off before delete-pods: unreadable", "the taint stays"], unchanged=False)
    assert str(error) == "power-off before delete-pods: unreadable: power-off not proven. Missing proof(s): power-off. the taint stays"
