"""The audit's risk rules (model/risks.py), once Jinja in roles/failover_audit/tasks/report.yml."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.model import risks
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import audit_timeline

FACTS = {"kubernetes_version": "1.35.4", "node_count": 3, "distribution": "kubeadm"}


def node(name, version):
    return {"metadata": {"name": name}, "status": {"nodeInfo": {"kubeletVersion": version}}}


def pod(name, tolerations, owner="ReplicaSet", mirror=False):
    metadata = {"namespace": "app", "name": name, "ownerReferences": [{"kind": owner}]}
    if mirror:
        metadata["annotations"] = {"kubernetes.io/config.mirror": "x"}
    return {"metadata": metadata, "spec": {"tolerations": tolerations}}


def names(found):
    return [entry["risk"] for entry in found]


@pytest.mark.parametrize("version, risk", [
    ("v1.10.13", "kubelet-dead-connection"), ("v1.14.3-eks-1", "kubelet-dead-connection"),
    ("v1.18.20", "kubelet-no-http2-health-check"), ("v1.19.16", None), ("v1.35.4", None), ("garbage", None),
])
def test_kubelet_versions(version, risk):
    found = risks.kubelet_risks(risks.kubelet_versions([node("n1", version)]))
    assert names(found) == ([risk] if risk else [])


def test_without_node_objects_every_host_gets_the_cluster_version():
    assert risks.kubelet_versions([], ["w1", "w2"], "1.18.0") == {"w1": "1.18.0", "w2": "1.18.0"}


def test_single_apiserver_and_kubelets_on_one_of_several():
    one = [{"subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]}]
    assert names(risks.endpoint_risks(risks.endpoint_ips(one), [])) == ["single-apiserver"]
    three = [{"subsets": [{"addresses": [{"ip": f"10.0.0.{i}"} for i in (1, 2, 3)]}]}]
    assert names(risks.endpoint_risks(risks.endpoint_ips(three), ["https://10.0.0.2:6443"] * 3)) == [
        "kubelets-on-one-apiserver"]
    assert names(risks.endpoint_risks(risks.endpoint_ips(three), ["https://vip.example:6443", ""])) == [
        "single-apiserver-address"]
    assert risks.endpoint_risks(risks.endpoint_ips(three), ["https://127.0.0.1:6443"]) == []


def test_tolerations_are_compared_with_the_clusters_defaults_not_300():
    tuned = audit_timeline({"kube_apiserver": {"default-not-ready-toleration-seconds": "20",
                                               "default-unreachable-toleration-seconds": "20"}}, FACTS)
    pods = [
        pod("follows-the-default", [{"key": risks.UNREACHABLE, "effect": "NoExecute", "tolerationSeconds": 20}]),
        pod("stale-300", [{"key": risks.UNREACHABLE, "effect": "NoExecute", "tolerationSeconds": 300}]),
        pod("forever", [{"key": risks.NOT_READY, "operator": "Exists"}]),
        pod("daemon", [{"key": risks.NOT_READY, "operator": "Exists"}], owner="DaemonSet"),
        pod("mirror", [{"key": risks.NOT_READY, "operator": "Exists"}], mirror=True),
    ]
    found = risks.toleration_risks(pods, tuned)
    assert names(found) == ["tolerations-overridden"]
    assert [(e["pod"], e["seconds"], e["default"]) for e in found[0]["examples"]] == [
        ("app/stale-300", 300, 20), ("app/forever", "unbounded", 20)]
    assert found[0]["message"].startswith("2 pods")
    # On a stock cluster the 300 s pod follows the default and the 20 s one does not.
    stock = audit_timeline({}, FACTS)
    assert [e["pod"] for e in risks.toleration_risks(pods, stock)[0]["examples"]] == [
        "app/follows-the-default", "app/forever"]


def test_all_risks_in_report_order():
    timeline = audit_timeline({"kubelet": {"nodeStatusUpdateFrequency": "1s"},
                               "kube_controller_manager": {"node-monitor-grace-period": "4s"}}, FACTS)
    found = risks.audit_risks(timeline, unaudited_hosts=["w3"], nodes=[node("w1", "v1.18.0")],
                              endpoints=[{"subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]}])
    assert names(found)[:3] == ["nodes-not-audited", "kubelet-no-http2-health-check", "single-apiserver"]
    assert "inconsistent-settings" in names(found)


def test_short_tolerations_behind_one_address_are_a_risk_the_stock_300_s_is_not():
    fast = audit_timeline({"kube_apiserver": {"default-not-ready-toleration-seconds": "20",
                                              "default-unreachable-toleration-seconds": "20"}}, FACTS)
    one_lb = ["https://lb.example:6443"] * 3
    found = risks.one_address_outage_risks(fast, one_lb)
    assert names(found) == ["short-tolerations-one-address"]
    assert "lb.example" in found[0]["message"] and "20 s" in found[0]["message"]
    assert risks.one_address_outage_risks(audit_timeline({}, FACTS), one_lb) == []  # stock 300 s
    assert risks.one_address_outage_risks(fast, ["https://127.0.0.1:6443"]) == []  # a local proxy per node
    assert risks.one_address_outage_risks(fast, ["https://cp1:6443", "https://cp2:6443"]) == []
    assert "short-tolerations-one-address" in names(risks.audit_risks(fast, kubelet_servers=one_lb))
