"""Filters for the kubeadm-config and kubelet-config ConfigMaps."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.nodeguard.failover.plugins.filter import cluster_config


def test_filter_names():
    assert set(cluster_config.FilterModule().filters()) == {
        "kubeadm_cluster_config_merge",
        "kubelet_config_merge",
        "kubelet_settings_to_flags",
    }


@pytest.mark.parametrize("fixture", ["kubeadm-cluster-config-v1beta3.yaml", "kubeadm-cluster-config-v1beta4.yaml"])
def test_kubeadm_merge_is_idempotent_and_returns_input_when_unchanged(fixture, load):
    _unused, text = load(fixture)
    merged = cluster_config.kubeadm_cluster_config_merge(
        text, {"node-monitor-grace-period": "20s"}, {"default-unreachable-toleration-seconds": "30"},
        controller_manager_feature_gates={"NodeOutOfServiceVolumeDetach": True},
    )
    assert merged != text
    assert "NodeOutOfServiceVolumeDetach=true" in merged
    again = cluster_config.kubeadm_cluster_config_merge(
        merged, {"node-monitor-grace-period": "20s"}, {"default-unreachable-toleration-seconds": "30"},
        controller_manager_feature_gates={"NodeOutOfServiceVolumeDetach": True},
    )
    assert again is merged


def test_kubeadm_merge_shapes_differ_by_api_version(load):
    _unused, v3 = load("kubeadm-cluster-config-v1beta3.yaml")
    _unused, v4 = load("kubeadm-cluster-config-v1beta4.yaml")
    flags = {"node-monitor-period": "2s"}
    assert "controllerManager:\n  extraArgs:\n    node-monitor-period: 2s\n" in cluster_config.kubeadm_cluster_config_merge(v3, flags)
    assert "  - name: node-monitor-period\n    value: 2s\n" in cluster_config.kubeadm_cluster_config_merge(v4, flags)


def test_kubeadm_merge_errors_become_filter_errors(load):
    with pytest.raises(AnsibleFilterError, match=r"unsupported apiVersion 'kubeadm\.k8s\.io/v1beta1'"):
        cluster_config.kubeadm_cluster_config_merge("apiVersion: kubeadm.k8s.io/v1beta1\nkind: ClusterConfiguration\n", {"a": "1"})
    with pytest.raises(AnsibleFilterError, match="is not valid YAML"):
        cluster_config.kubeadm_cluster_config_merge("kind: [\n", {"a": "1"})
    with pytest.raises(AnsibleFilterError, match="expected the YAML text"):
        cluster_config.kubeadm_cluster_config_merge({"kind": "ClusterConfiguration"}, {"a": "1"})
    _unused, text = load("kubeadm-cluster-config-v1beta4.yaml")
    with pytest.raises(AnsibleFilterError, match="not both"):
        cluster_config.kubeadm_cluster_config_merge(text, {"feature-gates": "A=true"}, None, {"B": True})


def test_kubelet_merge(load):
    _unused, text = load("kubelet-config.yaml")
    merged = cluster_config.kubelet_config_merge(text, {"nodeStatusUpdateFrequency": "4s"})
    assert "nodeStatusUpdateFrequency: 4s\n" in merged
    assert cluster_config.kubelet_config_merge(merged, {"nodeStatusUpdateFrequency": "4s"}) is merged
    with pytest.raises(AnsibleFilterError, match="must be a duration string"):
        cluster_config.kubelet_config_merge(text, {"nodeStatusUpdateFrequency": 4})


def test_kubelet_settings_to_flags():
    assert cluster_config.kubelet_settings_to_flags({"nodeStatusUpdateFrequency": "4s"}) == {"node-status-update-frequency": "4s"}
    with pytest.raises(AnsibleFilterError, match="no command-line flag for nodeLeaseDurationSeconds"):
        cluster_config.kubelet_settings_to_flags({"nodeLeaseDurationSeconds": 20})


def test_kubelet_settings_to_flags_can_skip_fields_without_a_flag():
    settings = {"nodeLeaseDurationSeconds": 20, "nodeStatusUpdateFrequency": "4s"}
    assert cluster_config.kubelet_settings_to_flags(settings, skip_unsupported=True) == {"node-status-update-frequency": "4s"}


def test_kubeadm_merge_refuses_an_api_the_clusters_kubeadm_does_not_read():
    v1beta2 = "apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\n"
    merged = cluster_config.kubeadm_cluster_config_merge(v1beta2, {"node-monitor-grace-period": "20s"},
                                                         kubernetes_version="1.20.15")
    assert "node-monitor-grace-period: 20s" in merged
    with pytest.raises(AnsibleFilterError, match=r"kubeadm 1\.31\.0 does not read apiVersion 'kubeadm\.k8s\.io/v1beta2'"):
        cluster_config.kubeadm_cluster_config_merge(v1beta2, {"a": "1"}, kubernetes_version="1.31.0")


# --- Values from playbook variables (issue 22.4): Ansible 2.19 tags strings and numbers ---------------------


class TaggedInt(int):
    """An int subclass, as Ansible 2.19 hands a templated number (ruamel.yaml cannot write it)."""


def tagged(value):
    """``value`` as Ansible 2.19 hands a playbook variable to a filter: a str subclass carrying a tag."""
    from ansible.template import trust_as_template

    text = trust_as_template(value)
    assert text.__class__.__name__ != "str"  # a real tagged string, or the test proves nothing
    return text


@pytest.mark.parametrize("fixture", ["kubeadm-cluster-config-v1beta3.yaml", "kubeadm-cluster-config-v1beta4.yaml"])
def test_kubeadm_merge_takes_tagged_strings(fixture, load):
    _unused, text = load(fixture)
    plain = cluster_config.kubeadm_cluster_config_merge(text, {"node-monitor-grace-period": "20s", "kube-api-qps": "20"},
                                                        {"default-unreachable-toleration-seconds": 30})
    merged = cluster_config.kubeadm_cluster_config_merge(
        tagged(text), {tagged("node-monitor-grace-period"): tagged("20s"), "kube-api-qps": tagged("20")},
        {"default-unreachable-toleration-seconds": TaggedInt(30)},
        controller_manager_feature_gates={tagged("NodeOutOfServiceVolumeDetach"): True},
    )
    assert merged == cluster_config.kubeadm_cluster_config_merge(
        text, {"node-monitor-grace-period": "20s", "kube-api-qps": "20"}, {"default-unreachable-toleration-seconds": 30},
        controller_manager_feature_gates={"NodeOutOfServiceVolumeDetach": True})
    assert "NodeOutOfServiceVolumeDetach=true" in merged and "20s" in merged and merged != plain


def test_kubelet_merge_takes_tagged_strings_and_numbers(load):
    _unused, text = load("kubelet-config.yaml")
    settings = {"nodeStatusUpdateFrequency": "4s", "nodeLeaseDurationSeconds": 20}
    merged = cluster_config.kubelet_config_merge(
        text, {tagged("nodeStatusUpdateFrequency"): tagged("4s"), "nodeLeaseDurationSeconds": TaggedInt(20)})
    assert merged == cluster_config.kubelet_config_merge(text, settings)
    assert cluster_config.kubelet_settings_to_flags({"nodeStatusUpdateFrequency": tagged("4s")}) == {
        "node-status-update-frequency": "4s"}


def test_a_value_that_cannot_be_written_names_the_source_and_the_key(load):
    _unused, text = load("kubelet-config.yaml")
    with pytest.raises(AnsibleFilterError, match=r"^kubelet-config: topologyManagerScope\.x\[1\] is a object; give a string"):
        cluster_config.kubelet_config_merge(text, {"topologyManagerScope": {"x": ["a", object()]}})
    with pytest.raises(AnsibleFilterError, match=r"^ClusterConfiguration controllerManager\.extraArgs: node-monitor-period is a set"):
        cluster_config.kubeadm_cluster_config_merge(load("kubeadm-cluster-config-v1beta4.yaml")[1], {"node-monitor-period": {"1s"}})


def test_the_dump_names_the_file_and_key_of_a_value_ruamel_cannot_write():
    from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
    from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

    document = yamldoc.load("a:\n  b: 1\n", "x")
    document["a"]["b"] = TaggedInt(2)
    with pytest.raises(FileEditError, match=r"^/etc/x\.yaml: cannot write a\.b \(TaggedInt\) as YAML"):
        yamldoc.dump(document, "a:\n  b: 1\n", "/etc/x.yaml")
