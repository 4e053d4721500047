"""RKE1 cluster.yml services.<service>.extra_args."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import rke1, yamldoc

SERVICES = {
    "kube-api": {"default-not-ready-toleration-seconds": "30", "default-unreachable-toleration-seconds": 30},
    "kube-controller": {"node-monitor-grace-period": "20s", "feature-gates": {"A": True}},
    "kubelet": {"node-status-update-frequency": "4s", "max-pods": None},
}


def test_creates_missing_extra_args_and_keeps_the_rest(load):
    document, text = load("rke1-cluster.yml")
    rendered = rke1.render(document, SERVICES, "cluster.yml")
    new_text = yamldoc.dump(rendered.document, text)
    assert new_text.startswith("# If you intended to deploy Kubernetes in an air-gapped environment,\n")
    assert (
        "    extra_args:\n"
        "      # keep audit logs for the security team\n"
        "      audit-log-path: /var/log/kube-audit/audit-log.json\n"
        "      audit-log-maxage: \"30\"\n"
        "      default-not-ready-toleration-seconds: '30'\n"
        "      default-unreachable-toleration-seconds: '30'\n"
    ) in new_text
    assert (
        "  kube-controller:\n    cluster_cidr: 10.42.0.0/16\n    service_cluster_ip_range: 10.43.0.0/16\n"
        "    extra_args:\n      node-monitor-grace-period: 20s\n      feature-gates: A=true\n"
    ) in new_text
    assert "max-pods" not in new_text
    assert 'cluster_name: "prod-eu-1"' in new_text
    assert rke1.render(rendered.document, SERVICES, "cluster.yml").changes == []


def test_read_settings(load):
    document, _unused = load("rke1-cluster.yml")
    settings = rke1.read_settings(document, "cluster.yml")
    assert settings["kube-api"] == {"audit-log-path": ["/var/log/kube-audit/audit-log.json"], "audit-log-maxage": ["30"]}
    assert settings["kube-controller"] == {}
    assert settings["kubelet"] == {"max-pods": ["150"]}


def test_unknown_service_and_wrong_types(load):
    document, _unused = load("rke1-cluster.yml")
    with pytest.raises(FileEditError, match="unknown RKE1 service 'kube-controller-manager'"):
        rke1.render(document, {"kube-controller-manager": {"a": "b"}}, "cluster.yml")
    with pytest.raises(FileEditError, match="must be a string, number, boolean or null"):
        rke1.render(document, {"kube-api": {"a": {"b": "c"}}}, "cluster.yml")
    with pytest.raises(FileEditError, match=r"services\.kubeproxy must be a mapping"):
        rke1.render(yamldoc.load("services:\n  kubeproxy: []\n", "x"), {"kubeproxy": {"a": "b"}}, "cluster.yml")
