"""kubeadm static pod manifests: flags in spec.containers[].command."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import (
    static_pod,
    yamldoc,
)

KCM = "kube-controller-manager.yaml"


def command(document, container="kube-controller-manager"):
    return static_pod.command_of(document, container, "test")


def test_changes_existing_flag_in_place_and_appends_new_ones(load):
    document, _text = load(KCM)
    rendered = static_pod.render(
        document,
        "kube-controller-manager",
        {"leader-elect": "false", "node-monitor-grace-period": "20s"},
        None,
        KCM,
    )
    after = command(rendered.document)
    assert after[after.index("--leader-elect=false")] == "--leader-elect=false"
    assert after.index("--leader-elect=false") == command(document).index("--leader-elect=true")
    assert after[-1] == "--node-monitor-grace-period=20s"
    assert rendered.changes == [
        "kube-controller-manager: leader-elect true -> false",
        "kube-controller-manager: node-monitor-grace-period (unset) -> 20s",
    ]
    # the input document is not modified (renderers are pure)
    assert "--leader-elect=true" in command(document)


def test_only_the_changed_lines_differ(load):
    document, text = load(KCM)
    rendered = static_pod.render(document, "kube-controller-manager", {"node-monitor-period": "2s"}, None, KCM)
    new_text = yamldoc.dump(rendered.document, text)
    old_lines, new_lines = text.splitlines(), new_text.splitlines()
    assert [line for line in new_lines if line not in old_lines] == ["    - --node-monitor-period=2s"]
    assert [line for line in old_lines if line not in new_lines] == []


def test_same_values_mean_no_change(load):
    document, _unused = load(KCM)
    rendered = static_pod.render(
        document, "kube-controller-manager", {"bind-address": "127.0.0.1", "leader-elect": True}, None, KCM
    )
    assert rendered.changes == []


def test_null_removes_flag_and_every_repeat(load):
    document, _unused = load(KCM)
    doubled = static_pod.render(document, "kube-controller-manager", {"x": "1"}, None, KCM).document
    static_pod.find_container(doubled, "kube-controller-manager", KCM)["command"].append("--x=2")
    rendered = static_pod.render(doubled, "kube-controller-manager", {"x": None, "absent": None}, None, KCM)
    assert not [item for item in command(rendered.document) if item.startswith("--x")]
    assert rendered.changes == ["kube-controller-manager: x 1,2 -> (removed)"]


def test_repeated_flag_is_collapsed_to_one(load):
    document, _unused = load(KCM)
    container = static_pod.find_container(document, "kube-controller-manager", KCM)
    container["command"].append("--leader-elect=false")
    rendered = static_pod.render(document, "kube-controller-manager", {"leader-elect": "true"}, None, KCM)
    assert [c for c in command(rendered.document) if c.startswith("--leader-elect")] == ["--leader-elect=true"]


def test_feature_gates_merge_keeps_other_gates(load):
    document, _unused = load(KCM)
    rendered = static_pod.render(
        document,
        "kube-controller-manager",
        {},
        {"SomeAlphaGate": None, "NodeOutOfServiceVolumeDetach": True},
        KCM,
    )
    gates = [c for c in command(rendered.document) if c.startswith("--feature-gates=")]
    assert gates == ["--feature-gates=RotateKubeletServerCertificate=true,NodeOutOfServiceVolumeDetach=true"]


def test_feature_gates_as_dict_flag_value_and_removal_of_last_gate(load):
    document, _unused = load(KCM)
    rendered = static_pod.render(
        document,
        "kube-controller-manager",
        {"feature-gates": {"RotateKubeletServerCertificate": None, "SomeAlphaGate": None}},
        None,
        KCM,
    )
    assert not [c for c in command(rendered.document) if c.startswith("--feature-gates")]


def test_feature_gate_already_set_is_no_change(load):
    document, _unused = load(KCM)
    assert static_pod.render(document, "kube-controller-manager", None, {"SomeAlphaGate": "false"}, KCM).changes == []


def test_feature_gates_added_when_missing(load):
    document, _unused = load("kube-apiserver.yaml")
    rendered = static_pod.render(document, "kube-apiserver", None, {"A": True, "B": False}, "x")
    assert command(rendered.document, "kube-apiserver")[-1] == "--feature-gates=A=true,B=false"


def test_missing_container_names_the_existing_ones(load):
    document, _unused = load("kube-apiserver.yaml")
    with pytest.raises(FileEditError, match=r"no container named 'kube-scheduler' \(containers: kube-apiserver, audit-log-shipper\)"):
        static_pod.render(document, "kube-scheduler", {"a": "b"}, None, "kube-apiserver.yaml")


def test_container_without_command_is_refused(load):
    document, _unused = load("kube-apiserver.yaml")
    with pytest.raises(FileEditError, match="no command list"):
        static_pod.render(document, "audit-log-shipper", {"a": "b"}, None, "kube-apiserver.yaml")


def test_sidecar_and_its_comment_survive(load):
    document, text = load("kube-apiserver.yaml")
    rendered = static_pod.render(document, "kube-apiserver", {"default-unreachable-toleration-seconds": "30"}, None, "x")
    new_text = yamldoc.dump(rendered.document, text)
    assert "  - name: audit-log-shipper   # a sidecar someone added by hand; must survive edits" in new_text
    assert '    args: ["--config=/fluent-bit/etc/fluent-bit.conf"]' in new_text


@pytest.mark.parametrize(
    "flags, message",
    [
        ({"node-monitor-period": {"seconds": 5}}, "must be a string, number, boolean or null"),
        ({"node-monitor-period": ["5s"]}, "must be a string, number, boolean or null"),
        ({"--node-monitor-period": "5s"}, "without leading dashes"),
        ({"a=b": "c"}, "must not contain"),
        ("node-monitor-period=5s", "flags must be a mapping"),
    ],
)
def test_wrong_types_are_refused(load, flags, message):
    document, _unused = load(KCM)
    with pytest.raises(FileEditError, match=message):
        static_pod.render(document, "kube-controller-manager", flags, None, KCM)


def test_wrong_gate_value_is_refused(load):
    document, _unused = load(KCM)
    with pytest.raises(FileEditError, match="must be true, false or null"):
        static_pod.render(document, "kube-controller-manager", None, {"A": "yes please"}, KCM)


def test_gate_string_and_gate_mapping_together_are_refused(load):
    document, _unused = load(KCM)
    with pytest.raises(FileEditError, match="either as the feature-gates flag string or as a mapping"):
        static_pod.render(document, "kube-controller-manager", {"feature-gates": "A=true"}, {"B": True}, KCM)


def test_not_a_pod_is_refused():
    document = yamldoc.load("apiVersion: v1\nkind: ConfigMap\ndata: {}\n", "cm.yaml")
    with pytest.raises(FileEditError, match="is a ConfigMap, not a static Pod manifest"):
        static_pod.render(document, "x", {"a": "b"}, None, "cm.yaml")


def test_numbers_and_booleans_become_flag_strings(load):
    document, _unused = load(KCM)
    rendered = static_pod.render(document, "kube-controller-manager", {"concurrent-syncs": 5, "profiling": False}, None, KCM)
    assert command(rendered.document)[-2:] == ["--concurrent-syncs=5", "--profiling=false"]
