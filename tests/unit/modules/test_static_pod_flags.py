"""nodeguard.failover.static_pod_flags on real files (in-process and through `ansible`)."""

import hashlib
import os
import pathlib

from ansible_collections.nodeguard.failover.plugins.module_utils.files import REDACTED
from ansible_collections.nodeguard.failover.plugins.modules import static_pod_flags

KCM_FLAGS = {"node-monitor-period": "2s", "node-monitor-grace-period": "20s"}


def manifest(copy_fixture, name="kube-controller-manager.yaml"):
    return copy_fixture(name, "etc/kubernetes/manifests/" + name)


def test_sets_flags_backs_up_outside_the_manifest_dir_and_is_idempotent(run_module, copy_fixture):
    path = manifest(copy_fixture)
    os.chmod(path, 0o600)
    before = path.read_text()

    first = run_module(static_pod_flags, {"path": str(path), "flags": KCM_FLAGS})
    assert first["changed"] is True and not first["failed"]
    assert "    - --node-monitor-grace-period=20s" in path.read_text().splitlines()
    assert first["command"][-2:] == ["--node-monitor-period=2s", "--node-monitor-grace-period=20s"]
    backup = first["backup_file"]
    assert os.path.dirname(backup) == str(path.parent.parent / "nodeguard-backups")
    assert pathlib.Path(backup).read_text() == before
    assert os.listdir(path.parent) == ["kube-controller-manager.yaml"]  # no backup, no temp file left
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"  # mode kept
    assert first["checksum"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert first["diff"]["before"] == before and first["diff"]["after"] == path.read_text()

    second = run_module(static_pod_flags, {"path": str(path), "flags": KCM_FLAGS})
    assert second["changed"] is False
    assert "backup_file" not in second and "diff" not in second


def test_check_mode_writes_nothing_but_reports_the_diff(run_module, copy_fixture):
    path = manifest(copy_fixture)
    before = path.read_bytes()
    result = run_module(static_pod_flags, {"path": str(path), "flags": KCM_FLAGS}, check_mode=True)
    assert result["changed"] is True
    assert "+    - --node-monitor-period=2s" not in result["diff"]["before"]
    assert "--node-monitor-period=2s" in result["diff"]["after"]
    assert path.read_bytes() == before
    assert "backup_file" not in result
    assert not (path.parent.parent / "nodeguard-backups").exists()


def test_expected_checksum_mismatch_refuses(run_module, copy_fixture):
    path = manifest(copy_fixture)
    before = path.read_bytes()
    result = run_module(static_pod_flags, {"path": str(path), "flags": KCM_FLAGS, "expected_checksum": "0" * 64})
    assert result["failed"] and "not the expected_checksum" in result["msg"]
    assert path.read_bytes() == before

    good = hashlib.sha256(before).hexdigest()
    result = run_module(static_pod_flags, {"path": str(path), "flags": KCM_FLAGS, "expected_checksum": good})
    assert result["changed"] is True


def test_file_changed_between_read_and_write_is_not_overwritten(run_module, copy_fixture, monkeypatch):
    from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import (
        static_pod,
    )

    path = manifest(copy_fixture)
    real_render = static_pod.render

    def render_while_someone_edits(document, *args):
        path.write_text(path.read_text() + "# edited by kubeadm meanwhile\n")
        return real_render(document, *args)

    monkeypatch.setattr(static_pod, "render", render_while_someone_edits)
    result = run_module(static_pod_flags, {"path": str(path), "flags": KCM_FLAGS})
    assert result["failed"] and "changed on disk since it was read" in result["msg"]
    assert path.read_text().endswith("# edited by kubeadm meanwhile\n")
    assert "--node-monitor-period=2s" not in path.read_text()
    assert not (path.parent.parent / "nodeguard-backups").exists()


def test_bad_input_fails_and_changes_nothing(run_module, copy_fixture, tmp_path):
    path = manifest(copy_fixture)
    before = path.read_bytes()
    cases = [
        ({"path": str(path), "container": "etcd", "flags": KCM_FLAGS}, "no container named 'etcd'"),
        ({"path": str(path), "flags": {"node-monitor-period": {"a": 1}}}, "must be a string, number, boolean or null"),
        ({"path": str(tmp_path / "missing.yaml"), "flags": KCM_FLAGS}, "does not exist"),
    ]
    for args, message in cases:
        result = run_module(static_pod_flags, args)
        assert result["failed"], args
        assert message in result["msg"]
    assert path.read_bytes() == before

    broken = tmp_path / "broken.yaml"
    broken.write_text("spec:\n  containers:\n  - command: [kube-apiserver\n")
    result = run_module(static_pod_flags, {"path": str(broken), "flags": KCM_FLAGS})
    assert result["failed"] and "is not valid YAML" in result["msg"]
    assert broken.read_text() == "spec:\n  containers:\n  - command: [kube-apiserver\n"


def test_backup_can_be_turned_off_and_redirected(run_module, copy_fixture, tmp_path):
    path = manifest(copy_fixture)
    result = run_module(static_pod_flags, {"path": str(path), "flags": {"a": "1"}, "backup": False})
    assert result["changed"] and "backup_file" not in result
    result = run_module(static_pod_flags, {"path": str(path), "flags": {"a": "2"}, "backup_dir": str(tmp_path / "bk")})
    assert os.path.dirname(result["backup_file"]) == str(tmp_path / "bk")
    assert oct(os.stat(tmp_path / "bk").st_mode & 0o777) == "0o700"


def test_real_ansible_run(ansible_adhoc, copy_fixture):
    path = manifest(copy_fixture, "kube-apiserver.yaml")
    args = {"path": str(path), "flags": {"default-unreachable-toleration-seconds": "30"}}
    checked = ansible_adhoc("static_pod_flags", args, check=True)
    assert checked["changed"] is True and "--default-unreachable-toleration-seconds=30" not in path.read_text()
    applied = ansible_adhoc("static_pod_flags", args)
    assert applied["changed"] is True, applied
    assert "    - --default-unreachable-toleration-seconds=30" in path.read_text().splitlines()
    again = ansible_adhoc("static_pod_flags", args)
    assert again["changed"] is False


def test_missing_ruamel_is_reported_with_the_package_names(run_module, copy_fixture, monkeypatch):
    from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

    monkeypatch.setattr(yamldoc, "HAS_RUAMEL", False)
    path = manifest(copy_fixture)
    before = path.read_bytes()
    result = run_module(static_pod_flags, {"path": str(path), "flags": KCM_FLAGS})
    assert result["failed"] and "python3-ruamel.yaml" in result["msg"]
    assert path.read_bytes() == before


def test_empty_manifest_is_refused(run_module, tmp_path):
    path = tmp_path / "manifests" / "kube-scheduler.yaml"
    path.parent.mkdir()
    path.write_text("")
    result = run_module(static_pod_flags, {"path": str(path), "flags": {"kube-api-qps": "100"}})
    assert result["failed"] and result["msg"].startswith(f"{path} exists but is empty") and result["path"] == str(path)
    assert path.read_text() == ""


def test_commented_manifest_changes_only_the_owned_lines(run_module, copy_fixture):
    path = manifest(copy_fixture, "kube-scheduler-commented.yaml")
    before = path.read_text()
    args = {"path": str(path), "container": "kube-scheduler", "flags": {"kube-api-burst": "200"}}
    checked = run_module(static_pod_flags, args, check_mode=True)
    applied = run_module(static_pod_flags, args)
    expected = before.replace("    - --kube-api-qps=100\n", "    - --kube-api-qps=100\n    - --kube-api-burst=200\n")
    assert path.read_text() == expected == checked["diff"]["after"] == applied["diff"]["after"]
    assert "    image: registry.k8s.io/kube-scheduler:v1.30.4  \n" in expected  # trailing spaces kept
    again = run_module(static_pod_flags, args)
    assert again["changed"] is False and path.read_text() == expected


def test_returns_the_components_flags_only_with_the_value_it_uses_and_secrets_masked(run_module, copy_fixture):
    apiserver = run_module(static_pod_flags, {"path": str(manifest(copy_fixture, "kube-apiserver.yaml")), "flags": {}})
    assert apiserver["flags"]["advertise-address"] == "10.89.77.10" and apiserver["flags"]["secure-port"] == "6443"
    # kOps runs go-runner with flags of its own before the binary: those are not the component's
    kops = manifest(copy_fixture, "kube-controller-manager-kops-go-runner.manifest")
    flags = run_module(static_pod_flags, {"path": str(kops), "container": "kube-controller-manager", "flags": {}})["flags"]
    assert "log-file" not in flags and "also-stdout" not in flags
    assert flags["leader-elect"] == "true" and flags["cluster-name"] == "ha.example.k8s.local"
    # where a key is kept is not a secret; a secret given inline is masked
    assert flags["service-account-private-key-file"] == "/srv/kubernetes/kube-controller-manager/service-account.key"
    secret = run_module(static_pod_flags, {"path": str(kops), "container": "kube-controller-manager",
                                           "flags": {"bootstrap-token": "abcdef.0123456789abcdef"}})
    assert secret["flags"]["bootstrap-token"] == REDACTED
    assert "0123456789abcdef" not in str(secret)
