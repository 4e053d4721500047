"""The record the recovery proof trusts (issue 20, item 6).

The incident record on the Node (an annotation) can be rewritten by the node's own kubelet or anyone who may
patch nodes. node-recover believes the bootID, systemUUID, UID and taint time only as they stand in the history
ConfigMap, which only the remediator may write. On 08a3975 it read the annotation alone: a node that never went
down could rewrite its recorded bootID and have the taint removed. A record without ``node`` or ``id`` was a
KeyError traceback.
"""

import json

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from incident_fakes import FakePower, renewing_lease
from incident_scenario import options, setup

NS = "nodeguard-history"


def tainted_then_back():
    """w3 tainted by an outage run, then Ready again with a fresh Lease: what node-recover sees."""
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    w3 = cluster.nodes["w3"]
    w3["status"]["conditions"][0].update(status="True", lastTransitionTime=format_time(clock.now() - 120))
    renewing_lease(cluster, clock, "w3")
    return cluster, clock


def recover(cluster, clock):
    return RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2", healthy_seconds=60), clock).run()


def rewrite_annotation(cluster, change):
    annotations = cluster.nodes["w3"]["metadata"]["annotations"]
    record = json.loads(annotations[records.ANNOTATION])
    change(record)
    annotations[records.ANNOTATION] = json.dumps(record)


def assert_refused_taint_kept(cluster, clock, match):
    before = cluster.snapshot()
    with pytest.raises(RefusedError, match=match):
        recover(cluster, clock)
    assert cluster.snapshot() == before
    assert has_out_of_service_taint(cluster.nodes["w3"])


def test_a_node_that_never_went_down_cannot_rewrite_its_recorded_boot_id():
    """The node kept bootID boot-w3-1 (it never restarted) and rewrote the record's bootID to look restarted."""
    cluster, clock = tainted_then_back()
    rewrite_annotation(cluster, lambda r: r["identity"].update(boot_id="boot-w3-0"))
    assert_refused_taint_kept(cluster, clock, r"differs from its history copy \(ConfigMap nodeguard-history/nodeguard-history-w3\) in identity")


def test_a_rewritten_taint_time_is_refused():
    cluster, clock = tainted_then_back()
    cluster.nodes["w3"]["status"]["nodeInfo"]["bootID"] = "boot-w3-2"
    rewrite_annotation(cluster, lambda r: r["steps"]["taint"].update(end=format_time(clock.now())))
    assert_refused_taint_kept(cluster, clock, r"differs from its history copy .* in steps\.taint")


def test_a_record_without_a_history_copy_proves_nothing():
    cluster, clock = tainted_then_back()
    cluster.nodes["w3"]["status"]["nodeInfo"]["bootID"] = "boot-w3-2"
    del cluster.config_maps[(NS, history.config_map_name("w3"))]
    assert_refused_taint_kept(cluster, clock, r"has no copy in its history \(ConfigMap nodeguard-history/nodeguard-history-w3\)")


def test_the_history_copy_agrees_so_the_taint_goes():
    cluster, clock = tainted_then_back()
    cluster.nodes["w3"]["status"]["nodeInfo"]["bootID"] = "boot-w3-2"
    result = recover(cluster, clock)
    assert result["changed"] and not has_out_of_service_taint(cluster.nodes["w3"])


@pytest.mark.parametrize("key", ["node", "id"])
def test_a_record_without_node_or_id_is_refused_clearly_by_recover(key):
    cluster, clock = tainted_then_back()
    rewrite_annotation(cluster, lambda r: r.pop(key))
    assert_refused_taint_kept(cluster, clock, rf"incident record without '{key}'")


@pytest.mark.parametrize("key", ["node", "id"])
def test_a_record_without_node_or_id_is_refused_clearly_by_outage(key):
    cluster, clock = tainted_then_back()
    rewrite_annotation(cluster, lambda r: r.pop(key))
    with pytest.raises(RefusedError, match=rf"incident record without '{key}'"):
        OutageRun(cluster, FakePower("off"), options(), clock).run()


def test_a_record_copied_from_another_node_is_refused():
    cluster, clock = tainted_then_back()
    rewrite_annotation(cluster, lambda r: r.update(node="w1"))
    assert_refused_taint_kept(cluster, clock, r"on node w3 is the record of node 'w1'")
