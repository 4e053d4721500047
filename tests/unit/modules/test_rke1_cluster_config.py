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


def test_list_item_offset_file_changes_only_the_owned_lines_and_masks_secrets(run_module, copy_fixture):
    path = copy_fixture("rke1-cluster-list-offset.yml", "cluster.yml")
    before = path.read_text()
    services = {"kube-controller": {"node-monitor-grace-period": "20s"}, "kube-api": {"oidc-client-secret": "s3cr3t-value"}}
    checked = run_module(rke1_cluster_config, {"path": str(path), "services": services}, check_mode=True)
    assert checked["changed"] and path.read_text() == before
    applied = run_module(rke1_cluster_config, {"path": str(path), "services": services})
    assert path.read_text() == before.replace(
        '      terminated-pod-gc-threshold: "1000"\n', '      terminated-pod-gc-threshold: "1000"\n      node-monitor-grace-period: 20s\n'
    ).replace('      audit-log-maxage: "30"\n', '      audit-log-maxage: "30"\n      oidc-client-secret: s3cr3t-value\n')
    assert applied["checksum"] == checked["checksum"]
    shown = repr((applied["diff"], applied["changes"], applied["extra_args"], checked["diff"]))
    for secret in ("s3cr3t-value", "EXAMPLEACCESSKEY0000", "example/secret/key", "not-a-real-password", "-----BEGIN OPENSSH"):
        assert secret not in shown, secret
    assert "    ssh_key: <redacted by nodeguard.failover>\n" in applied["diff"]["after"]
    assert applied["extra_args"]["kube-api"]["oidc-client-secret"] == "<redacted by nodeguard.failover>"
    again = run_module(rke1_cluster_config, {"path": str(path), "services": services})
    assert again["changed"] is False and again["checksum"] == applied["checksum"]


def test_empty_cluster_yml_is_refused(run_module, tmp_path):
    path = tmp_path / "cluster.yml"
    path.write_text("")
    result = run_module(rke1_cluster_config, {"path": str(path), "services": SERVICES})
    assert result["failed"] and result["msg"].startswith(f"{path} exists but is empty") and "create" not in result["msg"]
    assert path.read_text() == ""
