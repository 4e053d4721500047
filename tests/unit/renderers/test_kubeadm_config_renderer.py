"""kubeadm ClusterConfiguration extraArgs: v1beta3 map vs v1beta4 list of {name, value}."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubeadm_config, yamldoc

KCM = {"node-monitor-grace-period": "20s", "pod-eviction-timeout": None}
API = {"default-not-ready-toleration-seconds": "30"}


def test_v1beta3_maps(load):
    document, text = load("kubeadm-cluster-config-v1beta3.yaml")
    rendered = kubeadm_config.render(document, KCM, API, "cc")
    new_text = yamldoc.dump(rendered.document, text)
    assert "controllerManager:\n  extraArgs:\n    node-monitor-grace-period: 20s\n" in new_text
    assert "    default-not-ready-toleration-seconds: '30'\n" in new_text or '    default-not-ready-toleration-seconds: "30"\n' in new_text
    assert "  timeoutForControlPlane: 4m0s\n" in new_text
    assert kubeadm_config.render(rendered.document, KCM, API, "cc").changes == []


def test_v1beta4_lists(load):
    document, text = load("kubeadm-cluster-config-v1beta4.yaml")
    rendered = kubeadm_config.render(document, KCM, API, "cc")
    new_text = yamldoc.dump(rendered.document, text)
    assert (
        "controllerManager:\n  extraArgs:\n  - name: bind-address\n    value: 0.0.0.0\n"
        "  - name: node-monitor-grace-period\n    value: 20s\n"
    ) in new_text
    assert '  - name: default-not-ready-toleration-seconds\n    value: "30"\n' in new_text
    assert kubeadm_config.render(rendered.document, KCM, API, "cc").changes == []


def test_v1beta4_removal_and_feature_gates(load):
    document, _unused = load("kubeadm-cluster-config-v1beta4.yaml")
    rendered = kubeadm_config.render(document, {"bind-address": None, "feature-gates": {"A": True}}, None, "cc")
    assert [dict(item) for item in rendered.document["controllerManager"]["extraArgs"]] == [{"name": "feature-gates", "value": "A=true"}]


@pytest.mark.parametrize(
    "text, message",
    [
        ("apiVersion: kubeadm.k8s.io/v1beta1\nkind: ClusterConfiguration\n", "unsupported apiVersion"),
        ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n", "expected kind ClusterConfiguration"),
        ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrollerManager:\n  extraArgs: {a: b}\n", "must be a list of"),
        ("apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\napiServer:\n  extraArgs: [{name: a, value: b}]\n", "must be a map"),
    ],
)
def test_bad_documents(text, message):
    with pytest.raises(FileEditError, match=message):
        kubeadm_config.render(yamldoc.load(text, "cc"), {"x": "1"}, {"y": "2"}, "cc")


def test_v1beta2_of_a_1_20_cluster_gets_map_extra_args():
    text = ("apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\nkubernetesVersion: v1.20.15\n"
            "controllerManager:\n  extraArgs:\n    bind-address: 0.0.0.0\n")
    rendered = kubeadm_config.render(yamldoc.load(text, "cc"), {"node-monitor-grace-period": "20s"},
                                     {"default-unreachable-toleration-seconds": "60"}, "cc")
    assert dict(rendered.document["controllerManager"]["extraArgs"]) == {
        "bind-address": "0.0.0.0", "node-monitor-grace-period": "20s"}
    assert dict(rendered.document["apiServer"]["extraArgs"]) == {"default-unreachable-toleration-seconds": "60"}
