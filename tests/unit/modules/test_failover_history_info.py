"""failover_history_info reads the durable incident history; node_outage refuses a node without a power source."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "incident"))

from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.modules import failover_history_info, node_outage
from incident_fakes import T0, FakeCluster, node
from incident_scenario import dead_worker_cluster


def test_history_module_returns_the_newest_incidents_with_timelines(run_module, monkeypatch):
    cluster = FakeCluster([node("w3")])
    for i in range(3):
        rec = records.new(cluster.nodes["w3"], f"job-{i}", T0 + i * 3600, T0 + i * 3600 - 60)
        rec["phase"] = records.RECOVERED
        history.upsert(cluster, "nodeguard-history", rec)
    monkeypatch.setattr(failover_history_info, "cluster_for", lambda module: cluster)
    result = run_module(failover_history_info, {"node": "w3", "last": 2})
    assert not result["failed"] and not result["changed"]
    assert result["config_map"] == "nodeguard-history/nodeguard-history-w3"
    assert [i["record"]["job"] for i in result["incidents"]] == ["job-1", "job-2"]
    assert all(i["phase"] == records.RECOVERED and i["timeline"] for i in result["incidents"])


def test_history_module_without_history_returns_nothing(run_module, monkeypatch):
    monkeypatch.setattr(failover_history_info, "cluster_for", lambda module: FakeCluster([]))
    result = run_module(failover_history_info, {"node": "gone-node"})
    assert not result["failed"] and result["incidents"] == []


def test_node_outage_without_power_source_is_refused_by_the_module(run_module, monkeypatch):
    cluster = dead_worker_cluster()
    monkeypatch.setattr(node_outage, "cluster_for", lambda module: cluster)
    before = cluster.snapshot()
    result = run_module(node_outage, {"node": "w3"})
    assert result["failed"] and "No power source for w3" in result["msg"] and not result["changed"]
    assert cluster.snapshot() == before


def test_node_outage_refuses_a_control_plane_node_without_power_source_as_control_plane(run_module, monkeypatch):
    cluster = dead_worker_cluster()
    cluster.nodes["w3"]["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] = ""
    monkeypatch.setattr(node_outage, "cluster_for", lambda module: cluster)
    result = run_module(node_outage, {"node": "w3"})
    assert result["failed"] and result["msg"].startswith("refused [control-plane]")
