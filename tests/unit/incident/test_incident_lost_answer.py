"""The taint write and the untaint write whose answer is lost after the API took them (issue 38, item 6), and the
run's deadline (item 5).

The fake cluster takes the write, then raises what services.Cluster raises when the reply never comes (NoAnswerError:
no HTTP status). tests/unit/k8s/test_services_timeouts.py shows the real client raising it against a local server
that commits a PATCH and drops the connection.
"""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import deadline, history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import NoAnswerError, RunDeadlineError
from incident_fakes import FakePower
from incident_scenario import options, setup
from test_incident_recover import after_outage, node_back

LOST = "patch node w3: no answer from the API server (https://127.0.0.1:16443): Read timed out. (read timeout=20.0)"


def lose_reply(cluster, writes, take=True):
    """The first patch of the Node for which ``writes(patch)`` holds is taken (unless not ``take``) and its reply lost."""
    real_patch = cluster.patch_node
    state = {"lost": False}

    def patch_node(name, patch):
        if not state["lost"] and writes(patch):
            state["lost"] = True
            if take:
                real_patch(name, patch)
            raise NoAnswerError(LOST)
        return real_patch(name, patch)

    cluster.patch_node = patch_node


def tainting(patch):
    return "node.kubernetes.io/out-of-service" in str((patch.get("spec") or {}).get("taints"))


def untainting(patch):
    return "spec" in patch and not tainting(patch)


def test_a_taint_taken_whose_answer_is_lost_is_a_change_and_the_run_goes_on_from_its_record():
    cluster, clock, power = setup()
    lose_reply(cluster, tainting)
    run = OutageRun(cluster, power, options(), clock)
    result = run.run()  # before: RefusedError "the API did not take the taint", changed false, no history copy
    assert result["changed"] and result["message"] == "outage complete"
    w3 = cluster.nodes["w3"]
    assert has_out_of_service_taint(w3)
    on_node = records.read(w3)
    assert on_node["phase"] == records.OUTAGE_COMPLETE
    kept = history.read(cluster, "nodeguard-history", "w3")
    assert kept[-1] == on_node  # the history has its copy: node-recover can trust it
    assert [e[1]["reason"] for e in cluster.events][:2] == ["FailoverPowerOffProven", "FailoverTainted"]
    assert cluster.leases == {}  # both locks released


def test_a_taint_not_taken_whose_answer_is_lost_stops_the_run_saying_it_may_be_there():
    cluster, clock, power = setup()
    lose_reply(cluster, tainting, take=False)
    with pytest.raises(ClusterError) as stopped:
        OutageRun(cluster, power, options(), clock).run()
    assert not isinstance(stopped.value, RefusedError)  # never "the API did not take the taint"
    message = str(stopped.value)
    assert message.startswith(LOST + "; node w3 read back is unchanged, so the write may still be taken.")
    assert "may or may not be there: rerun node-outage, it continues from that incident's record" in message
    assert not has_out_of_service_taint(cluster.nodes["w3"])
    assert cluster.leases == {}


def test_a_taint_lost_while_the_node_moved_on_is_decided_again_on_a_fresh_read():
    cluster, clock, power = setup()
    real_patch = cluster.patch_node
    state = {"lost": False}

    def patch_node(name, patch):
        if not state["lost"] and tainting(patch):
            state["lost"] = True
            real_patch(name, {"metadata": {"annotations": {"heartbeat": "1"}}})  # the kubelet's status came first
            raise NoAnswerError(LOST)
        return real_patch(name, patch)

    cluster.patch_node = patch_node
    result = OutageRun(cluster, power, options(), clock).run()
    assert result["changed"] and has_out_of_service_taint(cluster.nodes["w3"])
    assert [c for c in cluster.calls if c[0] == "patch_node"][:3] == [("patch_node", "w3")] * 3  # heartbeat, taint again, ...


def test_a_run_past_its_deadline_at_the_taint_says_the_call_was_not_sent_not_that_the_api_refused():
    cluster, clock, power = setup()
    not_sent = RunDeadlineError("patch node w3: not sent: the run's deadline (2470s, the sum of its waits and timeouts) has passed")
    cluster.fail_on["patch_node"] = not_sent
    with pytest.raises(RunDeadlineError) as stopped:
        OutageRun(cluster, power, options(), clock).run()
    assert stopped.value is not_sent
    assert not has_out_of_service_taint(cluster.nodes["w3"])
    assert cluster.leases == {}


def test_an_untaint_taken_whose_answer_is_lost_closes_the_incident():
    cluster, clock = after_outage()
    node_back(cluster, clock)
    lose_reply(cluster, untainting)
    run = RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2", healthy_seconds=60), clock)
    result = run.run()  # before: ClusterError, changed false, the incident left open in the history
    assert result["changed"] and result["message"] == "taint removed, incident closed"
    w3 = cluster.nodes["w3"]
    assert not has_out_of_service_taint(w3)
    assert records.read(w3)["phase"] == records.RECOVERED
    assert history.read(cluster, "nodeguard-history", "w3")[-1]["phase"] == records.RECOVERED
    assert cluster.events[-1][1]["reason"] == "FailoverRecovered"


def test_an_untaint_not_taken_whose_answer_is_lost_says_the_taint_may_still_be_removed():
    cluster, clock = after_outage()
    node_back(cluster, clock)
    lose_reply(cluster, untainting, take=False)
    with pytest.raises(ClusterError, match=r"may still be taken\. The taint may or may not be removed: rerun node-recover"):
        RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2", healthy_seconds=60), clock).run()
    assert has_out_of_service_taint(cluster.nodes["w3"])
    assert cluster.leases == {}


def test_the_run_deadline_is_the_sum_of_its_waits_and_an_allowance():
    o = options(fence=True, fence_retries=2, fence_backoff_seconds=5, fence_confirm_timeout=120, lock_wait_seconds=30)
    waits = 30 + (o.not_ready_seconds + o.lease_margin_seconds + 0) + (2 * 60 + 5 * 4 + 120) + (o.lock_ttl_seconds + 6)
    waits += o.pod_delete_timeout + 2 * o.detach_timeout + o.replacement_timeout
    assert deadline.outage_seconds(o) == waits + deadline.ALLOWANCE_SECONDS
    assert deadline.outage_seconds(options(verify_replacements=False)) == deadline.outage_seconds(options()) - 30
    assert deadline.recover_seconds(RecoverOptions(node="w3", job_id="j", lock_wait_seconds=45)) == 45 + deadline.ALLOWANCE_SECONDS
