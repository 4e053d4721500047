"""node_outage: an error outside NodeguardError after the taint (issue 20 item 11) reports changed: true with a clear
message, not a traceback; before the taint it says nothing was changed."""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "incident"))

from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.modules import node_outage
from incident_fakes import FakeClock, FakePower
from incident_scenario import dead_worker_cluster

POWER = {"type": "redfish", "address": "https://bmc-w3.example.test", "username": "u", "password": "p"}


def not_json(*_args, **_kwargs):
    """What services.Cluster raises for a 2xx answer whose body is not JSON (a proxy's HTML page)."""
    return json.loads("<html>OK</html>")


def patched(monkeypatch, cluster):
    monkeypatch.setattr(node_outage, "cluster_for", lambda module: cluster)
    monkeypatch.setattr(node_outage, "reader_for", lambda *args: FakePower("off"))
    monkeypatch.setattr(node_outage, "Clock", FakeClock)


def test_a_non_json_answer_after_the_taint_reports_changed_with_a_clear_message(run_module, monkeypatch):
    cluster = dead_worker_cluster()
    cluster.force_delete_pod = not_json
    patched(monkeypatch, cluster)
    result = run_module(node_outage, {"node": "w3", "power": POWER})
    assert result["failed"] and result["changed"] is True
    assert result["msg"].startswith("unexpected error (JSONDecodeError)")
    incident = records.read(cluster.nodes["w3"])["id"]
    assert f"after the out-of-service taint was written (incident {incident})" in result["msg"]
    assert has_out_of_service_taint(cluster.nodes["w3"])
    assert not cluster.leases  # the lock was released


def test_a_non_json_answer_before_the_taint_says_nothing_was_changed(run_module, monkeypatch):
    cluster = dead_worker_cluster()
    cluster.list_volume_attachments = not_json
    patched(monkeypatch, cluster)
    before = cluster.snapshot()
    result = run_module(node_outage, {"node": "w3", "power": POWER}, check_mode=True)
    assert result["failed"] and result["changed"] is False
    assert result["msg"].startswith("unexpected error (JSONDecodeError)") and result["msg"].endswith("Nothing was changed")
    assert cluster.snapshot() == before
