"""KubeletConfiguration: top-level camelCase fields, typed, comments kept."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubelet, yamldoc

SOURCE = "config.yaml"


def test_sets_changes_and_merges(load):
    document, text = load("kubelet-config.yaml")
    rendered = kubelet.render(
        document,
        {
            "nodeStatusUpdateFrequency": "4s",
            "nodeLeaseDurationSeconds": "20",  # Ansible often hands numbers over as strings
            "featureGates": {"NodeSwap": False},
        },
        SOURCE,
    )
    new_text = yamldoc.dump(rendered.document, text)
    assert "nodeStatusUpdateFrequency: 4s" in new_text.splitlines()
    assert "nodeLeaseDurationSeconds: 20" in new_text.splitlines()
    assert "featureGates:\n  GracefulNodeShutdown: true\n  NodeSwap: false\n" in new_text
    assert "# graceful shutdown tuned by the platform team, keep\nshutdownGracePeriod: 30s\n" in new_text
    assert rendered.changes == [
        "nodeStatusUpdateFrequency: '0s' -> '4s'",
        "nodeLeaseDurationSeconds: (unset) -> 20",
        "featureGates.NodeSwap: (unset) -> False",
    ]


def test_second_apply_is_no_change(load):
    document, _unused = load("kubelet-config.yaml")
    settings = {"nodeStatusUpdateFrequency": "4s", "nodeLeaseDurationSeconds": 20, "featureGates": {"A": True}}
    once = kubelet.render(document, settings, SOURCE).document
    assert kubelet.render(once, settings, SOURCE).changes == []


def test_null_removes_field_and_gate(load):
    document, _unused = load("kubelet-config.yaml")
    rendered = kubelet.render(document, {"shutdownGracePeriod": None, "featureGates": {"GracefulNodeShutdown": None}}, SOURCE)
    assert "shutdownGracePeriod" not in rendered.document
    assert dict(rendered.document["featureGates"]) == {}
    assert kubelet.render(rendered.document, {"shutdownGracePeriod": None}, SOURCE).changes == []


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"nodeStatusUpdateFrequency": 4}, "must be a duration string"),
        ({"nodeStatusUpdateFrequency": "4 seconds"}, "must be a duration string"),
        ({"nodeLeaseDurationSeconds": "20s"}, "must be an integer"),
        ({"nodeLeaseDurationSeconds": True}, "must be an integer"),
        ({"featureGates": "A=true"}, "must be a mapping"),
        ({"featureGates": {"A": "yes"}}, "must be true, false or null"),
        ({"node-status-update-frequency": "4s"}, "is not a KubeletConfiguration field name"),
        ({"kind": "Pod"}, "is not a setting"),
        (["nodeStatusUpdateFrequency"], "settings must be a mapping"),
    ],
)
def test_wrong_types_are_refused(load, settings, message):
    document, _unused = load("kubelet-config.yaml")
    with pytest.raises(FileEditError, match=message):
        kubelet.render(document, settings, SOURCE)


def test_other_kinds_are_refused():
    document = yamldoc.load("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n", "x")
    with pytest.raises(FileEditError, match=r"not a kubelet\.config\.k8s\.io"):
        kubelet.render(document, {"nodeStatusUpdateFrequency": "4s"}, "x")


def test_empty_document_becomes_a_typed_drop_in():
    rendered = kubelet.render(yamldoc.load("", "x"), {"nodeLeaseDurationSeconds": 20}, "x")
    assert yamldoc.dump(rendered.document) == (
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nnodeLeaseDurationSeconds: 20\n"
    )


def test_read_settings_treats_zero_as_default(load):
    document, _unused = load("kubelet-config.yaml")
    assert kubelet.read_settings(document, SOURCE) == {
        "shutdownGracePeriod": "30s",
        "shutdownGracePeriodCriticalPods": "10s",
        "featureGates": {"GracefulNodeShutdown": True},
    }


@pytest.mark.parametrize("value, zero", [("0s", True), ("0m0s", True), ("0.0s", True), ("1ms", False), (0, True), (40, False), (False, False)])
def test_is_zero(value, zero):
    assert kubelet.is_zero(value) is zero


def test_settings_to_flags_and_back():
    flags = kubelet.settings_to_flags({"nodeStatusUpdateFrequency": "4s", "featureGates": {"A": True}}, "rke2")
    assert flags == {"node-status-update-frequency": "4s", "feature-gates": {"A": True}}
    assert kubelet.flags_to_settings({"node-status-update-frequency": ["4s"], "feature-gates": ["A=true,B=false"], "max-pods": ["9"]}) == {
        "nodeStatusUpdateFrequency": "4s",
        "featureGates": {"A": True, "B": False},
    }


def test_fields_without_a_kubelet_flag_are_refused():
    with pytest.raises(FileEditError, match="no command-line flag for nodeLeaseDurationSeconds"):
        kubelet.settings_to_flags({"nodeLeaseDurationSeconds": 20}, "rke1")
