"""The history copy of node-outage's record is batched: one write per destructive step, never behind the Node."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from incident_scenario import options, setup

NS = "nodeguard-history"


def history_writes(cluster) -> int:
    """How often the history ConfigMap was written: created at resourceVersion 1, each replace adds one (incident_fakes)."""
    return int(cluster.config_maps[(NS, history.config_map_name("w3"))]["metadata"]["resourceVersion"])


def test_a_full_run_writes_the_history_after_the_taint_after_each_destructive_step_and_at_the_end():
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    # Right after the taint, after delete-pods, after detach-volumes, at outage-complete: a step's start
    # and verify-replacements' end go with the next of these (one write each before the batching: 8).
    assert history_writes(cluster) == 4
    (kept,) = history.read(cluster, NS, "w3")
    assert kept == records.read(cluster.nodes["w3"])


def test_a_run_stopped_inside_a_step_leaves_its_last_record_in_the_history():
    cluster, clock, power = setup()
    cluster.fail_on["force_delete_pod"] = ClusterError("delete pod: API answered 500")
    with pytest.raises(ClusterError):
        OutageRun(cluster, power, options(), clock).run()
    on_node = records.read(cluster.nodes["w3"])
    assert on_node["steps"]["delete-pods"].get("start") and not on_node["steps"]["delete-pods"].get("end")
    (kept,) = history.read(cluster, NS, "w3")
    assert kept == on_node
