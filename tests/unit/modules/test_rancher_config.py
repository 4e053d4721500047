"""nodeguard.failover.rancher_config on RKE2/k3s config.yaml and drop-ins."""

from ansible_collections.nodeguard.failover.plugins.modules import rancher_config

ARGS = {
    "kube-controller-manager-arg": {"node-monitor-grace-period": "20s"},
    "kubelet-arg": {"node-status-update-frequency": "4s"},
}


def test_config_yaml_in_place(run_module, copy_fixture):
    path = copy_fixture("rke2-config.yaml", "etc/rancher/rke2/config.yaml")
    applied = run_module(rancher_config, {"distribution": "rke2", "path": str(path), "args": ARGS})
    assert applied["changed"] and applied["drop_in"] is False and applied["backup_file"]
    text = path.read_text()
    assert '  - "node-monitor-grace-period=20s"\n' in text
    assert 'token: "K10example::server:secret"   # rotated quarterly\n' in text
    assert run_module(rancher_config, {"distribution": "rke2", "path": str(path), "args": ARGS})["changed"] is False


def test_drop_in_is_created_with_append_keys(run_module, tmp_path):
    path = tmp_path / "etc/rancher/k3s/config.yaml.d/50-nodeguard.yaml"
    path.parent.mkdir(parents=True)
    args = {"distribution": "k3s", "path": str(path), "args": ARGS}
    missing = run_module(rancher_config, args)
    assert missing["failed"] and "does not exist" in missing["msg"]
    created = run_module(rancher_config, dict(args, create=True))
    assert created["changed"] and created["drop_in"] is True
    assert path.read_text() == (
        "kube-controller-manager-arg+:\n- node-monitor-grace-period=20s\nkubelet-arg+:\n- node-status-update-frequency=4s\n"
    )
    assert run_module(rancher_config, dict(args, create=True))["changed"] is False


def test_bad_input(run_module, copy_fixture, tmp_path):
    path = copy_fixture("rke2-config.yaml", "config.yaml")
    before = path.read_bytes()
    result = run_module(rancher_config, {"distribution": "kubeadm", "path": str(path), "args": ARGS})
    assert result["failed"] and "value of distribution must be one of: rke2, k3s" in result["msg"]
    result = run_module(rancher_config, {"distribution": "rke2", "path": str(path), "args": {"kubelet-arg": {"x": {"y": 1}}}})
    assert result["failed"] and "must be a string, number, boolean or null" in result["msg"]
    assert path.read_bytes() == before
    broken = tmp_path / "broken.yaml"
    broken.write_text("kubelet-arg:\n  - a=b\n - c=d\n")
    result = run_module(rancher_config, {"distribution": "rke2", "path": str(broken), "args": ARGS})
    assert result["failed"] and "is not valid YAML" in result["msg"]


def test_real_ansible_run(ansible_adhoc, copy_fixture):
    path = copy_fixture("rke2-config.yaml", "config.yaml")
    args = {"distribution": "rke2", "path": str(path), "args": ARGS}
    assert ansible_adhoc("rancher_config", args)["changed"] is True
    assert ansible_adhoc("rancher_config", args)["changed"] is False


def test_nothing_to_set_creates_no_file(run_module, tmp_path):
    path = tmp_path / "config.yaml.d" / "50-nodeguard.yaml"
    path.parent.mkdir()
    args = {"distribution": "rke2", "path": str(path), "create": True,
            "args": {"kubelet-arg": {"node-status-update-frequency": None}}}
    result = run_module(rancher_config, args)
    assert result["changed"] is False and not path.exists()


def test_diff_masks_tokens_but_the_file_keeps_them(run_module, copy_fixture):
    path = copy_fixture("rke2-config.yaml", "config.yaml")
    result = run_module(rancher_config, {"distribution": "rke2", "path": str(path), "args": ARGS}, check_mode=True)
    for side in ("before", "after"):
        assert "K10example" not in result["diff"][side]
        assert "token: <redacted by nodeguard.failover>\n" in result["diff"][side]
    applied = run_module(rancher_config, {"distribution": "rke2", "path": str(path), "args": ARGS})
    assert applied["changed"] and 'token: "K10example::server:secret"   # rotated quarterly\n' in path.read_text()


def test_empty_config_yaml_is_valid_input(run_module, tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("")
    result = run_module(rancher_config, {"distribution": "k3s", "path": str(path), "args": ARGS})
    assert result["changed"] and path.read_text() == (
        "kube-controller-manager-arg:\n- node-monitor-grace-period=20s\nkubelet-arg:\n- node-status-update-frequency=4s\n"
    )


def test_hyphenated_and_underscored_secret_keys_are_masked_in_the_diff(run_module, copy_fixture):
    path = copy_fixture("rke2-config-comments.yaml", "config.yaml")
    before = path.read_text()
    result = run_module(rancher_config, {"distribution": "rke2", "path": str(path), "args": ARGS})
    assert result["changed"]
    for secret in ("EXAMPLEACCESSKEY1111", "EXAMPLEACCESSKEY2222", "example-secret-1111", "K10example-token"):
        assert secret in before and secret in path.read_text()
        assert secret not in result["diff"]["before"] and secret not in result["diff"]["after"], secret
    assert "etcd-s3-access-key: <redacted by nodeguard.failover>\n" in result["diff"]["after"]
    assert "etcd_s3_access_key: <redacted by nodeguard.failover>\n" in result["diff"]["after"]
    assert path.read_text() == before.replace(
        '  - "node-monitor-grace-period=40s"   # platform default\n', '  - "node-monitor-grace-period=20s"   # platform default\n'
    ).replace('  - "eviction-hard=memory.available<300Mi"\n', '  - "eviction-hard=memory.available<300Mi"\n  - node-status-update-frequency=4s\n')
    assert run_module(rancher_config, {"distribution": "rke2", "path": str(path), "args": ARGS})["changed"] is False
