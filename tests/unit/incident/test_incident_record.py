"""The incident record and the resume state machine."""

import json

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from incident_fakes import T0, node

TAINT = [{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]


def recorded(steps_done, phase=None):
    rec = records.new(node("w3"), "job-1", T0, T0 - 100)
    for step in steps_done:
        records.start_step(rec, step, T0)
        records.end_step(rec, step, T0 + 1)
    if phase:
        rec["phase"] = phase
    return rec


def with_record(rec, tainted=True):
    annotations = records.annotations_patch(rec)["metadata"]["annotations"] if rec else {}
    return node("w3", ready="Unknown", taints=TAINT if tainted else None, annotations=annotations)


def test_no_taint_no_record_is_fresh():
    assert records.decide(node("w3"), None) == (records.FRESH, "prove")


def test_taint_without_record_is_adopted():
    assert records.decide(with_record(None), None)[0] == records.ADOPT


def test_resume_at_first_unfinished_step():
    rec = recorded(["prove", "fence", "taint"])
    records.start_step(rec, "delete-pods", T0 + 2)  # crashed inside delete-pods
    n = with_record(rec)
    assert records.decide(n, records.read(n)) == (records.RESUME, "delete-pods")


def test_all_steps_done_is_complete():
    rec = recorded(records.OUTAGE_STEPS, phase=records.OUTAGE_COMPLETE)
    n = with_record(rec)
    assert records.decide(n, records.read(n)) == (records.COMPLETE, None)


def test_interrupted_run_is_stopped():
    rec = recorded(["prove", "fence", "taint"], phase=records.INTERRUPTED)
    n = with_record(rec)
    assert records.decide(n, records.read(n))[0] == records.STOPPED


def test_recovered_record_and_no_taint_starts_fresh():
    rec = recorded(records.OUTAGE_STEPS, phase=records.RECOVERED)
    n = with_record(rec, tainted=False)
    assert records.decide(n, records.read(n))[0] == records.FRESH


def test_annotation_round_trip_and_phase():
    rec = recorded(["prove"])
    patch = records.annotations_patch(rec)["metadata"]["annotations"]
    assert json.loads(patch[records.ANNOTATION]) == rec
    assert patch[records.PHASE_ANNOTATION] == "prove"


def test_unreadable_record_is_refused_not_overwritten():
    with pytest.raises(RefusedError, match="record-unreadable"):
        records.read(node("w3", annotations={records.ANNOTATION: "{not json"}))
