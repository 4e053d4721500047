"""Issue 22: each real file shape through its module: check mode shows the diff the real run makes,
only owned lines change (tests/unit/renderers/test_file_shapes.py checks which), a second run changes nothing."""

import json

import pytest
from ansible_collections.nodeguard.failover.plugins.modules import kubelet_config, rancher_config, rke1_cluster_config, static_pod_flags

SHAPES = [
    pytest.param(
        "rke2-windows-agent-config-crlf.yaml", rancher_config,
        {"distribution": "rke2", "args": {"kubelet-arg": {"max-pods": None}, "kube-proxy-arg": {"v": "2"}}},
        id="crlf-windows-rke2-agent",
    ),
    pytest.param(
        "rke2-config-indented.yaml", rancher_config,
        {"distribution": "rke2", "args": {"kube-controller-manager-arg": {"node-monitor-grace-period": "20s", "node-monitor-period": "2s"}}},
        id="rke2-indented-six-spaces",
    ),
    pytest.param(
        "rke2-config-flag-twice.yaml", rancher_config,
        {"distribution": "rke2", "args": {"kube-controller-manager-arg": {"node-monitor-grace-period": "4s"}}},
        id="rke2-flag-given-twice",
    ),
    pytest.param(
        "rke1-cluster-feature-gates-comments.yml", rke1_cluster_config,
        {"services": {"kube-controller": {"feature-gates": None, "node-monitor-period": "2s", "node-monitor-grace-period": "20s"}}},
        id="rke1-comment-above-removed-key",
    ),
    pytest.param(
        "rke1-cluster-anchors.yml", rke1_cluster_config,
        {"services": {"kube-controller": {"node-monitor-grace-period": "20s", "node-monitor-period": "2s"}}},
        id="rke1-anchors-and-aliases",
    ),
    pytest.param(
        "kube-controller-manager-kops-go-runner.manifest", static_pod_flags,
        {"flags": {"node-monitor-period": "2s", "node-monitor-grace-period": "20s"}},
        id="kops-go-runner-args",
    ),
    pytest.param(
        "kube-controller-manager-flow-command-args.yaml", static_pod_flags,
        {"flags": {"node-monitor-period": "2s", "node-monitor-grace-period": "20s"}},
        id="flow-command-and-args",
    ),
    pytest.param(
        "kube-controller-manager-flag-in-command-and-args.yaml", static_pod_flags,
        {"flags": {"node-monitor-grace-period": "4s"}},
        id="flag-in-command-and-args",
    ),
    # issue 38.12
    pytest.param(
        "k3s-config-terraform-heredoc.yaml", rancher_config,
        {"distribution": "k3s", "args": {"kubelet-arg": {"node-status-update-frequency": "4s"}}},
        id="k3s-indented-new-list-key",
    ),
    pytest.param(
        "kubelet-config.json", kubelet_config,
        {"settings": {"nodeStatusUpdateFrequency": "4s", "nodeLeaseDurationSeconds": 20}},
        id="kubelet-config-json",
    ),
    pytest.param(
        "kube-controller-manager-commented.yaml", static_pod_flags,
        {"flags": {"feature-gates": None, "node-monitor-grace-period": "20s"}},
        id="comment-above-removed-flag",
    ),
    pytest.param(
        "rke2-config-flow-lists-multiline.yaml", rancher_config,
        {"distribution": "rke2", "args": {"kube-controller-manager-arg": {"node-monitor-grace-period": None}, "kubelet-arg": {"v": "2"}}},
        id="rke2-flow-list-over-several-lines",
    ),
    pytest.param(
        "k3s-config-comments-only.yaml", rancher_config,
        {"distribution": "k3s", "args": {"kubelet-arg": {"node-status-update-frequency": "4s"}}},
        id="k3s-comments-only",
    ),
    pytest.param(
        "kubelet-config-tab-before-comment.yaml.fixture", kubelet_config,
        {"settings": {"nodeStatusUpdateFrequency": "4s"}},
        id="kubelet-tab-before-comment",
    ),
]


@pytest.mark.parametrize(("fixture", "module", "args"), SHAPES)
def test_check_mode_diff_is_the_real_diff_and_a_second_run_changes_nothing(run_module, copy_fixture, fixture, module, args):
    # static_pod_flags names the container after the file: kube-controller-manager.yaml / .manifest
    name = fixture if module is not static_pod_flags else "kube-controller-manager" + fixture[fixture.rindex("."):]
    path = copy_fixture(fixture, "etc/" + name)
    before = path.read_bytes()
    args = dict(args, path=str(path), backup=False)

    checked = run_module(module, args, check_mode=True)
    assert checked["changed"] is True and not checked["failed"], checked.get("msg")
    assert path.read_bytes() == before

    applied = run_module(module, args)
    assert applied["changed"] is True
    assert applied["diff"] == checked["diff"]
    assert applied["checksum"] == checked["checksum"]
    written = path.read_bytes().decode("utf-8")
    assert applied["diff"]["after"] == written or "<redacted" in applied["diff"]["after"]
    assert ("\r\n" in written) == (b"\r\n" in before)
    if b"\r\n" in before:
        assert written.count("\r\n") == written.count("\n"), "every line keeps CR LF"
    if fixture.endswith(".json"):  # still JSON, one key a line (a KubeletConfiguration read with --config)
        assert list(json.loads(written))[: len(json.loads(before))] == list(json.loads(before))
        assert written.count("\n") > before.count(b"\n")

    again = run_module(module, args)
    assert again["changed"] is False
    assert path.read_bytes().decode("utf-8") == written


def test_json_the_module_cannot_write_back_is_refused_before_any_write(run_module, tmp_path):
    """Issue 38.12: JSON laid out with " : " is refused, in check mode as in a real run, and the file stays as it was."""
    path = tmp_path / "kubelet.json"
    before = b'{\n  "kind" : "KubeletConfiguration",\n  "apiVersion" : "kubelet.config.k8s.io/v1beta1"\n}\n'
    path.write_bytes(before)
    for check_mode in (True, False):
        result = run_module(kubelet_config, {"path": str(path), "settings": {"nodeLeaseDurationSeconds": 20}}, check_mode=check_mode)
        assert result["failed"] and "is JSON in a layout" in result["msg"] and "nothing changed" in result["msg"]
        assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["kubelet.json"], "no backup, no temporary file"
