"""An API error that stops a step after the taint is written into the step's record, as a timeout is: the Node, the
history and node-recover's refusal name the cause. Three lab runs once stopped in delete-pods and left a record with
only the step's start; nobody could say why without the module's output."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from incident_fakes import FakePower
from incident_scenario import options, setup

API_ERROR = "delete pod app/db-0: API answered 500 Internal Server Error: etcdserver: request timed out"


def stopped_by_an_api_error():
    cluster, clock, power = setup()
    cluster.fail_on["force_delete_pod"] = ClusterError(API_ERROR)
    run = OutageRun(cluster, power, options(), clock)
    with pytest.raises(ClusterError, match="etcdserver: request timed out"):
        run.run()
    return cluster, clock, run


def test_the_step_keeps_the_api_error_on_the_node_in_the_history_and_as_an_event():
    cluster, _clock, run = stopped_by_an_api_error()
    on_node = records.read(cluster.nodes["w3"])
    assert on_node["phase"] == "delete-pods"
    step = on_node["steps"]["delete-pods"]
    assert step["error"] == API_ERROR and "end" not in step  # still open: a rerun continues at this step
    assert history.read(cluster, "nodeguard-history", "w3")[-1] == on_node
    warnings = [body for _ns, body in cluster.events if body["reason"] == "FailoverStepFailed"]
    assert [w["message"] for w in warnings] == [f"delete-pods: {API_ERROR}"] and warnings[0]["type"] == "Warning"
    assert not run.lock.held


def test_node_recover_names_the_error_the_outage_run_stopped_on():
    cluster, clock, _run = stopped_by_an_api_error()
    before = cluster.snapshot()
    with pytest.raises(RefusedError, match=r"outage-stopped.*stopped at step delete-pods .*it stopped on the error: delete pod app/db-0"):
        RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2"), clock).run()
    assert cluster.snapshot() == before


def test_an_error_that_cannot_be_recorded_is_reported_and_never_claimed_by_the_history():
    cluster, clock, power = setup()
    cluster.fail_on["force_delete_pod"] = ClusterError(API_ERROR)
    run = OutageRun(cluster, power, options(), clock)
    real_patch = cluster.patch_node

    def patch_node(name, patch):  # the API is down for the record write that would carry the error
        if "etcdserver" in str(patch):
            raise ClusterError("patch node w3: cannot reach the API server")
        return real_patch(name, patch)

    cluster.patch_node = patch_node
    with pytest.raises(ClusterError, match="etcdserver"):
        run.run()
    on_node = records.read(cluster.nodes["w3"])
    assert "error" not in on_node["steps"]["delete-pods"]
    assert history.read(cluster, "nodeguard-history", "w3")[-1] == on_node
    assert any("the error of step delete-pods was not recorded: patch node w3" in e for e in run.recorder.errors)
