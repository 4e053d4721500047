"""VolumeAttachment filtering and blocker reports."""

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.attachments import blockers, describe, on_node
from incident_fakes import T0, volume_attachment


def test_only_attachments_of_the_node():
    vas = [volume_attachment("a", "w3"), volume_attachment("b", "w1")]
    assert [v["metadata"]["name"] for v in on_node(vas, "w3")] == ["a"]


def test_blockers_report_pv_driver_age_and_detach_error():
    va = volume_attachment("csi-1", "w3", pv="pv-db-0", created=T0 - 400)
    va["status"]["detachError"] = {"message": "rpc error: node unreachable"}
    [blocker] = blockers([va], T0)
    assert blocker == {
        "name": "csi-1",
        "pv": "pv-db-0",
        "driver": "csi.example.com",
        "age_seconds": 400,
        "attached": True,
        "deleting": False,
        "detach_error": "rpc error: node unreachable",
    }
    assert "pv pv-db-0" in describe([blocker])
    assert "node unreachable" in describe([blocker])
