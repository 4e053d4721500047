"""nodeguard.failover.kubelet_config on real files."""

import os

from ansible_collections.nodeguard.failover.plugins.modules import kubelet_config

SETTINGS = {"nodeStatusUpdateFrequency": "4s", "nodeLeaseDurationSeconds": 20}


def test_apply_is_idempotent_and_backed_up_next_to_the_file(run_module, copy_fixture):
    path = copy_fixture("kubelet-config.yaml", "var/lib/kubelet/config.yaml")
    before = path.read_text()
    first = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS})
    assert first["changed"] is True
    assert first["settings"]["nodeStatusUpdateFrequency"] == "4s"
    assert os.path.dirname(first["backup_file"]) == str(path.parent)
    assert open(first["backup_file"]).read() == before  # noqa: SIM115
    assert "# graceful shutdown tuned by the platform team, keep" in path.read_text()
    second = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS})
    assert second["changed"] is False and second["changes"] == []


def test_check_mode_and_wrong_type(run_module, copy_fixture):
    path = copy_fixture("kubelet-config.yaml", "config.yaml")
    before = path.read_bytes()
    checked = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS}, check_mode=True)
    assert checked["changed"] is True and "nodeLeaseDurationSeconds: 20" in checked["diff"]["after"]
    failed = run_module(kubelet_config, {"path": str(path), "settings": {"nodeLeaseDurationSeconds": {"s": 20}}})
    assert failed["failed"] and "must be an integer" in failed["msg"]
    assert path.read_bytes() == before


def test_missing_file_fails_unless_create(run_module, tmp_path):
    path = tmp_path / "kubelet.conf.d" / "50-nodeguard.conf"
    path.parent.mkdir()
    missing = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS})
    assert missing["failed"] and "does not exist" in missing["msg"]
    checked = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS, "create": True}, check_mode=True)
    assert checked["changed"] and not path.exists()
    created = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS, "create": True})
    assert created["changed"] and "backup_file" not in created
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert path.read_text().startswith("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
    again = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS, "create": True})
    assert again["changed"] is False


def test_real_ansible_run(ansible_adhoc, copy_fixture):
    path = copy_fixture("kubelet-config.yaml", "config.yaml")
    result = ansible_adhoc("kubelet_config", {"path": str(path), "settings": SETTINGS})
    assert result["changed"] is True, result
    assert "nodeLeaseDurationSeconds: 20" in path.read_text()
    assert ansible_adhoc("kubelet_config", {"path": str(path), "settings": SETTINGS})["changed"] is False


def test_filter_through_real_ansible(ansible_adhoc, copy_fixture):
    path = copy_fixture("kubelet-config.yaml", "cm-kubelet.yaml")
    expression = (
        f"{{{{ lookup('ansible.builtin.file', '{path}') | nodeguard.failover.kubelet_config_merge({{'nodeLeaseDurationSeconds': 20}}) }}}}"
    )
    result = ansible_adhoc("ansible.builtin.debug", {"msg": expression}, fqcn=True)
    assert "nodeLeaseDurationSeconds: 20" in result["msg"], result


def test_owner_mode_and_symlink_are_kept(run_module, copy_fixture, tmp_path):
    real = copy_fixture("kubelet-config.yaml", "real/config.yaml")
    os.chown(real, 1234, 2345)
    os.chmod(real, 0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    result = run_module(kubelet_config, {"path": str(link), "settings": SETTINGS})
    assert result["changed"] is True
    assert link.is_symlink() and "nodeLeaseDurationSeconds: 20" in real.read_text()
    stat = os.stat(real)
    assert (stat.st_uid, stat.st_gid, oct(stat.st_mode & 0o777)) == (1234, 2345, "0o640")
    backup = os.stat(result["backup_file"])
    assert (backup.st_uid, backup.st_gid, oct(backup.st_mode & 0o777)) == (1234, 2345, "0o640")


def test_existing_empty_file_is_refused_unless_create(run_module, tmp_path):
    """An empty /var/lib/kubelet/config.yaml must not silently become a file without staticPodPath or clusterDNS."""
    for content in ("", "\n", "# the image build failed to write this file\n"):
        path = tmp_path / "config.yaml"
        path.write_text(content)
        refused = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS})
        assert refused["failed"] and refused["path"] == str(path)
        assert refused["msg"].startswith(f"{path} exists but is empty") and "set create=true" in refused["msg"]
        assert path.read_text() == content
    created = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS, "create": True})
    assert created["changed"] and "nodeLeaseDurationSeconds: 20" in path.read_text()


def test_malformed_file_is_refused_with_its_path_and_line(run_module, tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("kind: KubeletConfiguration\nclusterDNS: [10.96.0.10\n")
    result = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS})
    assert result["failed"] and result["msg"].startswith(f"{path} is not valid YAML: ") and "line 3" in result["msg"]


def test_real_shaped_file_check_mode_is_honest_and_second_run_is_byte_identical(run_module, copy_fixture):
    path = copy_fixture("kubelet-config-trailing-spaces.yaml.fixture", "config.yaml")
    before = path.read_text()
    checked = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS}, check_mode=True)
    assert checked["changed"] and path.read_text() == before and checked["diff"]["before"] == before
    applied = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS})
    after = path.read_text()
    assert checked["diff"]["after"] == applied["diff"]["after"] == after
    assert checked["checksum"] == applied["checksum"]
    assert after == before.replace("nodeStatusUpdateFrequency: 10s\n", "nodeStatusUpdateFrequency: 4s\n") + "\nnodeLeaseDurationSeconds: 20"
    again = run_module(kubelet_config, {"path": str(path), "settings": SETTINGS})
    assert again["changed"] is False and path.read_text() == after
