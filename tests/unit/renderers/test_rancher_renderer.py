"""RKE2/k3s config.yaml and config.yaml.d drop-ins: <component>-arg lists."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import rancher, yamldoc

ARGS = {
    "kube-controller-manager-arg": {"node-monitor-grace-period": "20s", "node-monitor-period": "2s"},
    "kube-apiserver-arg": {"default-unreachable-toleration-seconds": "30"},
    "kubelet-arg": {"node-status-update-frequency": "4s"},
}


def test_edits_lists_in_place_and_keeps_comments_and_quotes(load):
    document, text = load("rke2-config.yaml")
    rendered = rancher.render(document, ARGS, "config.yaml")
    new_text = yamldoc.dump(rendered.document, text)
    assert new_text.startswith("# /etc/rancher/rke2/config.yaml -- managed by the platform team\n")
    assert 'token: "K10example::server:secret"   # rotated quarterly\n' in new_text
    assert (
        "kube-apiserver-arg:\n"
        '  - "audit-log-path=/var/lib/rancher/rke2/server/logs/audit.log"\n'
        '  - "audit-log-maxage=30"   # days\n'
        "  - default-unreachable-toleration-seconds=30\n"
    ) in new_text
    assert (
        "kube-controller-manager-arg:\n"
        '  - "bind-address=127.0.0.1"\n'
        '  - "node-monitor-grace-period=20s"\n'
        "  - node-monitor-period=2s\n"
    ) in new_text
    # a single string value becomes a list only because it changed
    assert "kubelet-arg:\n  - \"max-pods=200\"\n  - node-status-update-frequency=4s\n" in new_text
    assert rancher.render(rendered.document, ARGS, "config.yaml").changes == []


def test_unchanged_string_value_stays_a_string(load):
    document, _unused = load("rke2-config.yaml")
    assert rancher.render(document, {"kubelet-arg": {"max-pods": "200"}}, "config.yaml").changes == []


def test_drop_in_uses_append_keys_and_removes_empty_lists():
    document = yamldoc.load("", "50-nodeguard.yaml")
    rendered = rancher.render(document, ARGS, "50-nodeguard.yaml", drop_in=True)
    assert list(rendered.document) == ["kube-controller-manager-arg+", "kube-apiserver-arg+", "kubelet-arg+"]
    cleared = rancher.render(
        rendered.document, {"kubelet-arg": {"node-status-update-frequency": None}}, "50-nodeguard.yaml", drop_in=True
    )
    assert "kubelet-arg+" not in cleared.document
    assert cleared.changes == ["kubelet-arg+: node-status-update-frequency 4s -> (removed)"]


def test_merge_files_follows_replace_and_append_rules(load):
    base, _unused = load("rke2-config.yaml")
    drop_in = yamldoc.load("kube-controller-manager-arg+:\n  - node-monitor-grace-period=20s\nkubelet-arg:\n  - a=b\n", "d")
    merged = rancher.merge_files([("config.yaml", base), ("d", drop_in)])
    assert merged["kube-controller-manager-arg"]["node-monitor-grace-period"] == ["40s", "20s"]
    assert merged["kubelet-arg"] == {"a": ["b"]}  # plain key in a later file replaces


@pytest.mark.parametrize(
    "text, args, message",
    [
        ("kubelet-arg: {a: b}\n", {"kubelet-arg": {"x": "1"}}, "must be a list"),
        ("kubelet-arg: [a=b]\nkubelet-arg+: [c=d]\n", {"kubelet-arg": {"x": "1"}}, "sets both kubelet-arg and kubelet-arg+"),
        ("", {"controller-manager-arg": {"x": "1"}}, "unknown argument list"),
        ("", {"kubelet-arg": {"x": ["1"]}}, "must be a string, number, boolean or null"),
        ("", {"kubelet-arg": "x=1"}, "flags must be a mapping"),
    ],
)
def test_bad_input(text, args, message):
    with pytest.raises(FileEditError, match=message):
        rancher.render(yamldoc.load(text, "c"), args, "c")


def test_is_drop_in_and_config_dir():
    assert rancher.is_drop_in("/etc/rancher/k3s/config.yaml.d/50-nodeguard.yaml")
    assert not rancher.is_drop_in("/etc/rancher/k3s/config.yaml")
    assert rancher.config_dir("k3s") == "/etc/rancher/k3s"
    with pytest.raises(FileEditError, match="unknown distribution 'kubeadm'"):
        rancher.config_dir("kubeadm")
