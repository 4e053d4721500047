"""One model: the same settings mean the same NotReady wait in the demo, the audit and the bench (issue 37 item 7).

node-outage on a cluster never tuned waits STOCK_REMEDIATION's 60 s; Kubernetes' own defaults, predicted as a
profile (make demo's "before", the audit of an untuned cluster, tune-failover with kubernetes-default), must wait
the same, not the 300 s toleration a tuned profile's rule would give."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import STOCK, preset_timings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import audit_timeline, build_profile
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediated import remediated_timeline
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediation import STOCK_REMEDIATION, remediation_settings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import kubernetes_defaults
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import parse_version

VERSIONS = ("1.31.0", "1.35.4", "1.37.2")


@pytest.mark.parametrize("text", VERSIONS)
def test_kubernetes_defaults_get_the_wait_node_outage_uses_on_a_cluster_never_tuned(text):
    assert remediation_settings(kubernetes_defaults(parse_version(text)), parse_version(text)) == STOCK_REMEDIATION


@pytest.mark.parametrize("text", VERSIONS)
def test_the_stock_profile_predicts_node_outage_with_the_stock_wait(text):
    version = parse_version(text)
    profile = build_profile({"kubernetes_version": text, "node_count": 4, "distribution": "kubeadm"}, preset=STOCK)
    assert profile["remediation"] == STOCK_REMEDIATION
    stock_run = remediated_timeline(kubernetes_defaults(version), "node-watch")["statefulset_replaced"]
    assert profile["timeline"]["statefulset_replaced"]["expected"] == stock_run["expected"]
    assert "acting after 60s NotReady" in profile["timeline"]["statefulset_replaced"]["note"]


def test_the_audit_of_an_untuned_cluster_predicts_the_stock_wait():
    profile = audit_timeline({}, {"kubernetes_version": "1.35.4", "node_count": 4, "distribution": "kubeadm"})
    assert profile["remediation"] == STOCK_REMEDIATION


def test_a_tuned_preset_keeps_its_own_rule():
    version = parse_version("1.35.4")
    timings = preset_timings("fast", version)
    assert remediation_settings(timings, version) == remediation_settings(timings)
    assert remediation_settings(timings, version) != STOCK_REMEDIATION
