"""Who else owns the tuned settings (model/ownership.py): kubelet flag overrides, kubespray, managed control planes."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.model import ownership
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import build_profile

FACTS = {"kubernetes_version": "1.35.4", "node_count": 3, "distribution": "kubeadm"}
# What failover_node_info returns for a flag in kubeadm's KUBELET_EXTRA_ARGS file (/etc/default/kubelet on DEB).
EXTRA_ARGS = {"setting": "nodeStatusUpdateFrequency", "flag": "--node-status-update-frequency", "value": "4s",
              "source": "/etc/default/kubelet:1"}


def test_a_kubelet_flag_that_overrides_a_tuned_setting_is_refused_naming_file_and_line():
    """Issue 34: a real node passed --node-status-update-frequency in KUBELET_EXTRA_ARGS and nothing noticed."""
    refusal = ownership.override_refusal({"w1": {"overrides": [EXTRA_ARGS]}, "w2": {"overrides": []}},
                                         build_profile(FACTS, "balanced"))
    assert "w1: --node-status-update-frequency=4s in /etc/default/kubelet:1 overrides nodeStatusUpdateFrequency" in refusal
    assert refusal.endswith("Nothing was changed.") and "w2" not in refusal


def test_a_flag_that_gives_the_profiles_own_value_is_not_refused():
    fast = build_profile(FACTS, "fast")  # nodeStatusUpdateFrequency 10s
    assert ownership.override_refusal({"w1": {"overrides": [dict(EXTRA_ARGS, value="10.0s")]}}, fast) == ""
    assert ownership.override_refusal({"w1": {"overrides": []}, "cfg": {}}, fast) == ""


def test_plan_checks_refuse_overrides_and_name_kubespray_variables():
    infos = {"w1": {"overrides": [EXTRA_ARGS], "kubespray": True}}
    checks = ownership.plan_checks(infos, build_profile(FACTS, "fast"))
    assert checks["refusal"].startswith("kubelet flags override settings this profile tunes")
    assert checks["notes"][0].startswith("kubespray manages this cluster (w1: /etc/kubernetes/kubelet.env)")


def test_a_kubelet_reading_another_config_file_is_refused():
    kubespray = {"distribution": "kubeadm", "kubelet_process": {"config": "/etc/kubernetes/kubelet-config.yaml"}}
    kubeadm = {"distribution": "kubeadm", "kubelet_process": {"config": "/var/lib/kubelet/config.yaml"}}
    refusal = ownership.plan_checks({"w1": kubespray, "w2": kubeadm}, build_profile(FACTS, "fast"))["refusal"]
    assert refusal.startswith("the kubelet reads another config file than the one tune-failover writes")
    assert "w1: the running kubelet reads --config=/etc/kubernetes/kubelet-config.yaml, tune-failover writes " \
           "/var/lib/kubelet/config.yaml" in refusal and "w2" not in refusal
    # RKE2/k3s (a drop-in directory, no config file of the registry's) and no running kubelet: nothing to refuse.
    rke2 = {"distribution": "rke2", "kubelet_process": {"config": "/var/lib/rancher/rke2/agent/etc/kubelet.conf"}}
    assert ownership.config_refusal({"s1": rke2, "w3": {"distribution": "kubeadm", "kubelet_process": {"config": ""}},
                                     "cfg": {"distribution": "rke1"}}) == ""


def test_kubespray_variables_keep_the_tuning_on_its_next_run():
    assert ownership.kubespray_variables(build_profile(FACTS, "fast")) == {
        "kubelet_status_update_frequency": "10s",
        "kube_controller_node_monitor_grace_period": "4s",
        "kube_controller_node_monitor_period": "1s",
        "kube_apiserver_pod_eviction_not_ready_timeout_seconds": 20,
        "kube_apiserver_pod_eviction_unreachable_timeout_seconds": 20,
        "kubelet_config_extra_args": {"nodeStatusReportFrequency": "5m0s", "nodeLeaseDurationSeconds": 3},
    }
    assert ownership.kubespray_note({"w1": {"kubespray": False}}, build_profile(FACTS, "fast")) == []


# Node objects as each provider's API shows them (providerID schemes of the cloud providers: aws:///<zone>/<instance>,
# gce://<project>/<zone>/<instance>, azure:///subscriptions/.../virtualMachines/<n>; EKS and GKE kubelet builds carry
# -eks-<hash> and -gke.<build> in status.nodeInfo.kubeletVersion; AKS labels its nodes kubernetes.azure.com/cluster).
def node(name, provider_id, version, labels=None):
    return {"metadata": {"name": name, "labels": dict({"kubernetes.io/hostname": name}, **(labels or {}))},
            "spec": {"providerID": provider_id}, "status": {"nodeInfo": {"kubeletVersion": version}}}


EKS = [node("ip-10-0-1-23.eu-west-1.compute.internal", "aws:///eu-west-1a/i-0a1b2c3d4e5f60718", "v1.31.4-eks-aeac579"),
       node("ip-10-0-2-41.eu-west-1.compute.internal", "aws:///eu-west-1b/i-0f1e2d3c4b5a60789", "v1.31.4-eks-aeac579")]
GKE = [node("gke-prod-default-pool-8e1b2c3d-x7k2", "gce://acme-prod/europe-west1-b/gke-prod-default-pool-8e1b2c3d-x7k2",
            "v1.31.5-gke.1233000")]
AKS = [node("aks-nodepool1-12345678-vmss000000",
            "azure:///subscriptions/0000/resourceGroups/mc_rg_prod_westeurope/providers/Microsoft.Compute/"
            "virtualMachineScaleSets/aks-nodepool1-12345678-vmss/virtualMachines/0", "v1.31.2",
            {"kubernetes.azure.com/cluster": "MC_rg_prod_westeurope"})]


@pytest.mark.parametrize("nodes, provider", [(EKS, "EKS"), (GKE, "GKE"), (AKS, "AKS")])
def test_a_managed_control_plane_is_refused(nodes, provider):
    refusal = ownership.managed_control_plane(nodes)
    assert refusal.startswith(f"this cluster's control plane is managed by {provider} (Node {nodes[0]['metadata']['name']}")
    assert "Nothing was changed." in refusal


def test_a_self_managed_cluster_on_a_cloud_is_not_refused():
    kubeadm_on_aws = [node("cp1", "aws:///eu-west-1a/i-0123", "v1.31.4", {ownership.CONTROL_PLANE_LABEL: ""}),
                      node("w1", "aws:///eu-west-1a/i-0456", "v1.31.4")]
    assert ownership.managed_control_plane(kubeadm_on_aws) == ""
    # A control-plane node of its own beside marked nodes: not managed.
    assert ownership.managed_control_plane([*EKS, kubeadm_on_aws[0]]) == ""
    # One node without the mark (a self-managed node group joined by hand): not refused on a guess.
    assert ownership.managed_control_plane([*EKS, node("w9", "aws:///eu-west-1a/i-0789", "v1.31.4")]) == ""
    assert ownership.managed_control_plane([]) == "" and ownership.managed_control_plane(None) == ""
