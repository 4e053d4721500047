"""Durable, bounded incident history per node (one ConfigMap in the lock namespace)."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError, NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time
from incident_fakes import FakeCluster, FakePower, lease, node, renewing_lease
from incident_scenario import options, setup

NS = "nodeguard-history"


def phases(cluster, name="w3"):
    return [(r["id"], r["phase"]) for r in history.read(cluster, NS, name)]


def node_back(cluster, clock):
    w3 = cluster.nodes["w3"]
    w3["status"]["conditions"][0].update(status="True", lastTransitionTime=format_time(clock.now() - 120))
    w3["status"]["nodeInfo"]["bootID"] = "boot-w3-2"
    return renewing_lease(cluster, clock, "w3")


def node_down_again(cluster, clock, kubelet_dies):
    kubelet_dies()
    w3 = cluster.nodes["w3"]
    clock.sleep(700)
    w3["status"]["conditions"][0].update(status="Unknown", lastTransitionTime=format_time(clock.now() - 600))
    cluster.node_leases["w3"] = lease("w3", clock.now() - 600)


def test_outage_and_recovery_are_kept_in_history():
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    (incident, phase), = phases(cluster)
    assert phase == records.OUTAGE_COMPLETE
    node_back(cluster, clock)
    RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2"), clock).run()
    assert phases(cluster) == [(incident, records.RECOVERED)]
    cm = cluster.config_maps[(NS, "nodeguard-history-w3")]
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "nodeguard.failover"


def test_new_incident_keeps_the_previous_record():
    cluster, clock, power = setup()
    OutageRun(cluster, power, options(), clock).run()
    first = records.read(cluster.nodes["w3"])["id"]
    kubelet_dies = node_back(cluster, clock)
    RecoverRun(cluster, FakePower("on"), RecoverOptions(node="w3", job_id="job-2"), clock).run()
    node_down_again(cluster, clock, kubelet_dies)
    OutageRun(cluster, power, options(), clock).run()
    second = records.read(cluster.nodes["w3"])
    assert second["previous"] == first
    assert [p for _i, p in phases(cluster)] == [records.RECOVERED, records.OUTAGE_COMPLETE]


def test_interrupted_record_survives_a_new_run():
    cluster, clock, power = setup()
    interrupted = records.new(cluster.nodes["w3"], "job-0", clock.now() - 5000, None)
    interrupted["phase"] = records.INTERRUPTED
    history.upsert(cluster, NS, interrupted)  # the remediator copied it into the history as it wrote it
    # the taint of that incident was removed by hand; its record is still on the Node
    cluster.nodes["w3"]["metadata"]["annotations"][records.ANNOTATION] = records.annotations_patch(interrupted)["metadata"]["annotations"][
        records.ANNOTATION
    ]
    OutageRun(cluster, power, options(), clock).run()
    kept = history.read(cluster, NS, "w3")
    assert kept[0]["id"] == interrupted["id"] and kept[0]["phase"] == records.INTERRUPTED
    assert records.read(cluster.nodes["w3"])["previous"] == interrupted["id"]


def test_a_history_that_cannot_be_read_blocks_the_taint():
    # The previous record is named in the new one only when the history holds it: unreadable, nothing is written.
    cluster, clock, power = setup()
    old = records.new(cluster.nodes["w3"], "job-0", clock.now() - 5000, None)
    old["phase"] = records.RECOVERED
    cluster.nodes["w3"]["metadata"]["annotations"][records.ANNOTATION] = records.annotations_patch(old)["metadata"]["annotations"][records.ANNOTATION]

    def forbidden(namespace, name):
        raise ClusterError("get configmap: API answered 403 Forbidden")

    cluster.get_config_map = forbidden
    before = cluster.snapshot()
    with pytest.raises(NodeguardError, match="403"):
        OutageRun(cluster, power, options(), clock).run()
    assert cluster.snapshot() == before


def test_history_is_bounded():
    cluster = FakeCluster([node("w3")])
    for i in range(history.KEEP + 5):
        rec = records.new(cluster.nodes["w3"], "job", 1_800_000_000.0 + i * 3600, None)
        history.upsert(cluster, NS, rec)
    kept = history.read(cluster, NS, "w3")
    assert len(kept) == history.KEEP
    assert kept[-1]["started"] > kept[0]["started"]


def test_history_write_conflict_merges_instead_of_losing_entries():
    cluster = FakeCluster([node("w3")])
    first = records.new(cluster.nodes["w3"], "job", 1_800_000_000.0, None)
    history.upsert(cluster, NS, first)
    real_get = cluster.get_config_map
    raced = {"done": False}

    def get_config_map(namespace, name):
        current = real_get(namespace, name)
        if not raced["done"]:
            raced["done"] = True  # another writer lands between our read and our write
            other = records.new(cluster.nodes["w3"], "job-x", 1_800_003_600.0, None)
            history.upsert(cluster, NS, other)
        return current

    cluster.get_config_map = get_config_map
    third = records.new(cluster.nodes["w3"], "job", 1_800_007_200.0, None)
    history.upsert(cluster, NS, third)
    cluster.get_config_map = real_get
    assert len(history.read(cluster, NS, "w3")) == 3


def test_long_node_names_get_a_valid_config_map_name():
    name = history.config_map_name("n" * 253)
    assert len(name) <= 253 and name.startswith(history.PREFIX)


def test_history_stays_within_one_config_map():
    cluster = FakeCluster([node("w3")])
    for i in range(10):
        rec = records.new(cluster.nodes["w3"], "job", 1_800_000_000.0 + i * 3600, None)
        rec["pods"] = {"moved": [{"name": f"pod-{j}-" + "x" * 200} for j in range(800)]}  # about 170 KiB each
        history.upsert(cluster, NS, rec)
    data = cluster.config_maps[(NS, "nodeguard-history-w3")]["data"]
    assert sum(len(v) for v in data.values()) <= history.MAX_BYTES
    assert 1 < len(data) < 10 and rec["id"] in data  # the oldest went, the newest stays
