"""The power-event path of node-outage on the real lab (issue 13), the playbook invoked directly.

1. Refusals, on a healthy worker whose kubelet renews its Lease: a power event for it is refused and changes
   nothing (no taint, no record, no history, no lock). The power source is a command hook that reports the
   worker's own machine (its SMBIOS UUID, so identity is shown) as Off: in the lab a BMC that reads Off means
   the container is off, so a hook is the honest way to get "BMC says Off" for a node that lives. Only the
   Lease can refuse then:
   - the event time is before renewals the kubelet made after it -> [lease-renewed], naming both times;
   - the event is "now" and the run waits (proof_timeout): the kubelet renews meanwhile -> refused the same way.
2. End to end: the worker running db-0 is powered off through its lab BMC (Redfish ForceOff), and the playbook
   runs at once with node_outage_power_event_time. It taints while the node is still Ready in the API (before
   the node lifecycle controller's NotReady), db-0 becomes Ready elsewhere, the record says trigger power-event.
   The rulebook-driven version (real BMC event -> ansible-rulebook) is tests/integration/eda (helper D).
3. With the admission policy of deploy/admission/ bound and powerEventPath false (its default), the same run
   for a powered-off, still Ready worker is refused at the taint with the API's own message; nothing changed.
The lab is reset afterwards (resets_lab), and the incident history this module wrote is removed.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_incident_lab import (
    HISTORY_NAMESPACE,
    NAMESPACE,
    OOS,
    assert_refused_unchanged,
    node_obj,
    playbook,
    record,
    state,
)
from test_wrong_bmc_mapping import lab_system_uuid

pytestmark = pytest.mark.resets_lab


def rfc3339(epoch: float) -> str:
    """With microseconds: a renewal in the same second as the event must compare correctly."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def history_names(lab) -> list:
    return sorted(lab.kubectl("get", "configmaps", "-n", HISTORY_NAMESPACE, "-o", "name", check=False).stdout.split())


def off_hook(tmp_path, node: str) -> dict:
    """A command power hook that reports ``node``'s machine (its real SMBIOS UUID) as Off, whatever is true."""
    script = tmp_path / "says-off.sh"
    script.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        f'echo \'{{"power": "off", "detail": "lab hook that says Off for a live node", "system_uuid": "{lab_system_uuid(node)}"}}\'\n'
    )
    script.chmod(0o700)
    return {"type": "command", "command": [str(script)], "off_confirm_seconds": 1}


ADMISSION = Path(__file__).resolve().parents[3] / "deploy" / "admission"
POLICY_OBJECTS = [("validatingadmissionpolicybinding", "nodeguard-out-of-service-taint"),
                  ("validatingadmissionpolicy", "nodeguard-out-of-service-taint")]


def lease_renew_time(lab, node: str) -> float:
    lease = lab.client.CoordinationV1Api(lab.api_client()).read_namespaced_lease(node, "kube-node-lease")
    return lease.spec.renew_time.timestamp()


@pytest.fixture()
def live_worker(lab):
    lab.reset_lab()
    worker = lab.worker_names()[0]
    yield worker
    lab.kubectl("delete", "configmap", "-n", HISTORY_NAMESPACE, f"nodeguard-history-{worker}", "--ignore-not-found", check=False)


def test_an_event_for_a_node_whose_lease_is_still_renewed_is_refused(lab, remediator, live_worker, tmp_path):
    worker = live_worker
    hook = off_hook(tmp_path, worker)
    event = time.time() - 25  # the kubelet (Lease every 10 s, or faster if tuned) has renewed since
    lab.wait_for(lambda: lease_renew_time(lab, worker) > event, timeout=30, what=f"{worker} renewed its Lease after the event time")
    before, histories = state(lab, worker), history_names(lab)
    result = playbook(remediator, "node_outage", worker, node_outage_power_event_time=rfc3339(event),
                      node_outage_power_by_node={worker: hook})
    assert_refused_unchanged(lab, worker, result, before, "refused [lease-renewed]")
    output = result.stdout + result.stderr
    assert "after the power event at " + datetime.fromtimestamp(event, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ") in output
    assert record(lab, worker) is None and history_names(lab) == histories
    assert lab.node_ready(worker)


def test_an_event_now_for_a_node_that_renews_while_the_run_waits_is_refused(lab, remediator, live_worker, tmp_path):
    worker = live_worker
    hook = off_hook(tmp_path, worker)
    before, histories = state(lab, worker), history_names(lab)
    # The event is "now": the Lease is younger than renew interval + margin, so the run waits (proof_timeout),
    # and the living kubelet renews meanwhile.
    result = playbook(remediator, "node_outage", worker, node_outage_power_event_time=rfc3339(time.time()),
                      node_outage_power_by_node={worker: hook}, node_outage_proof_timeout=60)
    output = result.stdout + result.stderr
    assert_refused_unchanged(lab, worker, result, before, "renewed")
    assert "refused [lease-renewed]" in output or "renewed its Lease" in output, output[-3000:]
    assert record(lab, worker) is None and history_names(lab) == histories


def test_a_powered_off_worker_is_failed_over_while_still_ready(lab, remediator):
    lab.reset_lab()
    old_db = lab.core().read_namespaced_pod("db-0", NAMESPACE)
    target = old_db.spec.node_name
    assert target in lab.worker_names(), f"db-0 runs on {target!r}, not on a worker"
    try:
        lab.power_off(target)  # Redfish ForceOff at the lab BMC: the kubelet is dead from here on
        event = time.time()
        assert lab.node_ready(target), "the node was NotReady already; the lab is tuned too fast for this test"
        result = playbook(remediator, "node_outage", target, node_outage_power_event_time=rfc3339(event),
                          node_outage_proof_timeout=60)
        finished = time.time()
        output = result.stdout + result.stderr
        assert result.returncode == 0, lab.playbook_failure(output)
        rec = record(lab, target)
        assert rec["trigger"] == "power-event" and rec["phase"] == "outage-complete", rec
        assert rec["power_event"]["ready_since"], "the run did not see the node Ready"
        assert rec["first_not_ready"] is None
        assert [p["name"] for p in rec["proofs"]] == ["lease-silent", "power-off"]
        # The taint came before the node lifecycle controller's NotReady (stock grace period, tens of seconds).
        lab.wait_for(lambda: not lab.node_ready(target), timeout=120, what=f"{target} NotReady")
        ready = next(c for c in node_obj(lab, target).status.conditions if c.type == "Ready")
        tainted = datetime.strptime(rec["steps"]["taint"]["end"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert tainted < ready.last_transition_time, (rec["steps"]["taint"], ready.last_transition_time)
        # db-0 runs Ready on another node: a new pod, not the old one.
        replacement = lab.core().read_namespaced_pod("db-0", NAMESPACE)
        assert replacement.metadata.uid != old_db.metadata.uid and replacement.spec.node_name != target
        assert any(c.type == "Ready" and c.status == "True" for c in replacement.status.conditions or [])
        assert f"{NAMESPACE}/db-0" in [r["pod"] for r in rec["replacements"]["replaced"]]
        tainted_events = lab.core().list_namespaced_event("default", field_selector=f"involvedObject.name={target},reason=FailoverTainted").items
        assert any("trigger power-event at" in e.message for e in tainted_events)
        print(f"\npower-off to taint {tainted.timestamp() - event:.0f}s (node still Ready), to the run's end "
              f"(replacements Ready) {finished - event:.1f}s; steps: {rec['steps']}; proofs: {rec['proofs']}; "
              f"replacements: {rec['replacements']['replaced']}")
    finally:
        lab.kubectl("delete", "configmap", "-n", HISTORY_NAMESPACE, f"nodeguard-history-{target}", "--ignore-not-found", check=False)


@pytest.fixture()
def policy_bound(lab):
    """deploy/admission/ bound with its defaults (powerEventPath false) for one test; removed afterwards if it was not there."""
    existed = {obj: bool(lab.kubectl("get", *obj, "--ignore-not-found", "-o", "name").stdout.strip()) for obj in POLICY_OBJECTS}
    lab.reset_lab()
    probe = ("patch", "node", lab.worker_names()[0], "--dry-run=server", "--type=merge", "-p",
             json.dumps({"spec": {"taints": [{"key": OOS, "value": "nodeshutdown", "effect": "NoExecute"}]}}))
    lab.kubectl("apply", "-f", str(ADMISSION))
    try:
        # A server-side dry run (changes nothing) shows when the API server enforces the new policy.
        lab.wait_for(lambda: "incident record" in lab.kubectl(*probe, check=False).stderr, timeout=60, what="the admission policy in force")
        yield
    finally:
        for obj in POLICY_OBJECTS:
            if not existed[obj]:
                lab.kubectl("delete", *obj, "--ignore-not-found", check=False)


def test_the_admission_policy_without_power_event_path_refuses_the_taint(lab, remediator, policy_bound):
    target = lab.worker_names()[-1]
    before, histories = state(lab, target), history_names(lab)
    try:
        lab.power_off(target)
        event = time.time()
        result = playbook(remediator, "node_outage", target, node_outage_power_event_time=rfc3339(event),
                          node_outage_proof_timeout=60)
        output = result.stdout + result.stderr
        assert_refused_unchanged(lab, target, result, before, "refused [taint-refused]")
        assert "ValidatingAdmissionPolicy" in output and "powerEventPath is false" in output, output[-3000:]
        assert record(lab, target) is None and history_names(lab) == histories
    finally:
        lab.kubectl("delete", "configmap", "-n", HISTORY_NAMESPACE, f"nodeguard-history-{target}", "--ignore-not-found", check=False)
