"""nodeguard.failover.rke1_cluster_config on a real cluster.yml."""

from ansible_collections.nodeguard.failover.plugins.modules import rke1_cluster_config

SERVICES = {
    "kube-controller": {"node-monitor-period": "2s", "node-monitor-grace-period": "20s"},
    "kube-api": {"default-unreachable-toleration-seconds": 30},
    "kubelet": {"node-status-update-frequency": "4s"},
}


def test_apply_check_idempotent(run_module, copy_fixture):
    path = copy_fixture("rke1-cluster.yml", "cluster.yml")
    before = path.read_bytes()
    checked = run_module(rke1_cluster_config, {"path": str(path), "services": SERVICES}, check_mode=True)
    assert checked["changed"] and path.read_bytes() == before
    applied = run_module(rke1_cluster_config, {"path": str(path), "services": SERVICES})
    assert applied["changed"] and applied["backup_file"]
    assert applied["extra_args"]["kube-controller"] == {"node-monitor-period": "2s", "node-monitor-grace-period": "20s"}
    assert applied["extra_args"]["kubelet"] == {"max-pods": "150", "node-status-update-frequency": "4s"}
    assert "      # keep audit logs for the security team\n" in path.read_text()
    again = run_module(rke1_cluster_config, {"path": str(path), "services": SERVICES})
    assert again["changed"] is False


def test_bad_input_changes_nothing(run_module, copy_fixture):
    path = copy_fixture("rke1-cluster.yml", "cluster.yml")
    before = path.read_bytes()
    for services, message in [
        ({"kube-controller-manager": {"a": "1"}}, "unknown RKE1 service"),
        ({"kube-api": {"a": ["1"]}}, "must be a string, number, boolean or null"),
        ({"kube-api": "a=1"}, "flags must be a mapping"),
    ]:
        result = run_module(rke1_cluster_config, {"path": str(path), "services": services})
        assert result["failed"] and message in result["msg"], result
    assert path.read_bytes() == before


def test_real_ansible_run(ansible_adhoc, copy_fixture):
    path = copy_fixture("rke1-cluster.yml", "cluster.yml")
    result = ansible_adhoc("rke1_cluster_config", {"path": str(path), "services": SERVICES})
    assert result["changed"] is True, result
    assert ansible_adhoc("rke1_cluster_config", {"path": str(path), "services": SERVICES})["changed"] is False
