"""Coexistence (issue 20, item 9): node-outage refuses a node another remediator owns, and names it.

medik8s objects are shaped as the medik8s operators serve them (Node Healthcheck Operator v0.x
remediation.medik8s.io/v1alpha1 NodeHealthCheck with spec.selector; Fence Agents Remediation and Self Node
Remediation v1alpha1 CRs named after the node; the common Lease "node-<name>" in medik8s-leases). On 08a3975
node-outage fenced and tainted such a node anyway, and adopted an out-of-service taint it had not written.
"""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import OUT_OF_SERVICE_TAINT, has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.safety import selects
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time
from incident_fakes import T0
from incident_scenario import options, setup


def nhc(name, selector):
    return {
        "apiVersion": "remediation.medik8s.io/v1alpha1",
        "kind": "NodeHealthCheck",
        "metadata": {"name": name},
        "spec": {
            "selector": selector,
            "minHealthy": "51%",
            "remediationTemplate": {
                "apiVersion": "self-node-remediation.medik8s.io/v1alpha1",
                "kind": "SelfNodeRemediationTemplate",
                "namespace": "openshift-workload-availability",
                "name": "self-node-remediation-automatic-strategy-template",
            },
            "unhealthyConditions": [{"type": "Ready", "status": "False", "duration": "300s"}],
        },
    }


def remediation(kind, name, namespace="openshift-workload-availability"):
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace, "ownerReferences": [{"kind": "NodeHealthCheck", "name": "nhc-workers"}]}}


WORKERS = {"matchExpressions": [{"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"}]}


def assert_refused(cluster, clock, power, match, **overrides):
    before = cluster.snapshot()
    with pytest.raises(RefusedError, match=match):
        OutageRun(cluster, power, options(**overrides), clock).run()
    assert cluster.snapshot() == before  # no taint, no record, no lock left, no Event
    assert power.actions == []  # nothing fenced


def test_a_node_health_check_that_selects_the_node_refuses_and_is_named():
    cluster, clock, power = setup("on")
    cluster.medik8s["nodehealthchecks"] = [nhc("nhc-workers", WORKERS)]
    assert_refused(cluster, clock, power, r"\[other-remediator\].*medik8s NodeHealthCheck nhc-workers selects it", fence=True)


def test_a_node_health_check_for_other_nodes_does_not_refuse():
    cluster, clock, power = setup()
    cluster.medik8s["nodehealthchecks"] = [nhc("nhc-cp", {"matchLabels": {"node-role.kubernetes.io/control-plane": ""}})]
    assert OutageRun(cluster, power, options(), clock).run()["changed"]


def test_the_medik8s_lease_of_the_node_refuses():
    cluster, clock, power = setup()
    cluster.leases[("medik8s-leases", "node-w3")] = {
        "metadata": {"name": "node-w3", "namespace": "medik8s-leases", "resourceVersion": "3"},
        "spec": {"holderIdentity": "NodeHealthCheck", "leaseDurationSeconds": 3600, "renewTime": format_micro_time(T0 - 30)},
    }
    assert_refused(cluster, clock, power, r"Lease medik8s-leases/node-w3 is held by NodeHealthCheck")


@pytest.mark.parametrize(("plural", "kind"), [("fenceagentsremediations", "FenceAgentsRemediation"), ("selfnoderemediations", "SelfNodeRemediation")])
def test_a_medik8s_remediation_of_the_node_refuses(plural, kind):
    cluster, clock, power = setup()
    cluster.medik8s[plural] = [remediation(kind, "w1"), remediation(kind, "w3")]
    assert_refused(cluster, clock, power, rf"medik8s {kind} openshift-workload-availability/w3 remediates it")


def test_a_remediation_naming_the_node_by_annotation_refuses():
    cluster, clock, power = setup()
    machine_based = remediation("SelfNodeRemediation", "worker-machine-7f2c")
    machine_based["metadata"]["annotations"] = {"remediation.medik8s.io/node-name": "w3"}
    cluster.medik8s["selfnoderemediations"] = [machine_based]
    assert_refused(cluster, clock, power, r"SelfNodeRemediation openshift-workload-availability/worker-machine-7f2c")


def test_an_out_of_service_taint_nodeguard_did_not_write_refuses():
    cluster, clock, power = setup()
    cluster.nodes["w3"]["spec"]["taints"] = [dict(OUT_OF_SERVICE_TAINT)]  # another tool's, no nodeguard record
    assert_refused(cluster, clock, power, r"an out-of-service taint that nodeguard did not write")


def test_installed_medik8s_without_objects_for_the_node_does_not_refuse():
    cluster, clock, power = setup()
    cluster.medik8s = {"nodehealthchecks": [], "fenceagentsremediations": [], "selfnoderemediations": []}
    OutageRun(cluster, power, options(), clock).run()
    assert has_out_of_service_taint(cluster.nodes["w3"])


def test_an_unreadable_medik8s_api_refuses_as_unknown():
    cluster, clock, power = setup()
    cluster.fail_on["list_medik8s"] = ClusterError("list nodehealthchecks.remediation.medik8s.io: API answered 403 Forbidden")
    assert_refused(cluster, clock, power, r"cannot tell whether another remediator \(medik8s\) owns w3: .*403")


def test_check_mode_names_it_too():
    cluster, clock, power = setup()
    cluster.medik8s["nodehealthchecks"] = [nhc("nhc-all", {})]
    before = cluster.snapshot()
    with pytest.raises(RefusedError, match="nhc-all"):
        OutageRun(cluster, power, options(), clock, check_mode=True).run()
    assert cluster.snapshot() == before


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        ({}, {}, True),
        ({"matchLabels": {"role": "worker"}}, {"role": "worker", "zone": "a"}, True),
        ({"matchLabels": {"role": "worker"}}, {"role": "infra"}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}, {"zone": "b"}, True),
        ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, {}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, {"zone": "a"}, False),
        ({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, {"x": ""}, True),
        ({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, {"x": ""}, False),
    ],
)
def test_label_selectors_as_kubernetes_reads_them(selector, labels, selected):
    assert selects(selector, labels) is selected
