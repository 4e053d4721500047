"""Storm protection, control-plane and etcd quorum rules, version support."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.safety import (
    allowed_unhealthy,
    check_control_plane,
    check_storm,
    check_version,
    out_of_service_supported,
)
from incident_fakes import node

CP = {"node-role.kubernetes.io/control-plane": ""}


@pytest.mark.parametrize(("limit", "total", "allowed"), [("2", 10, 2), (3, 10, 3), ("40%", 4, 1), ("40%", 10, 4), ("0", 5, 0), ("50%", 3, 1)])
def test_allowed_unhealthy(limit, total, allowed):
    assert allowed_unhealthy(limit, total) == allowed


@pytest.mark.parametrize("limit", ["many", "-1", "120%", ""])
def test_bad_limit_is_refused(limit):
    with pytest.raises(RefusedError, match="bad-input"):
        allowed_unhealthy(limit, 4)


def test_one_dead_node_of_four_is_no_storm():
    check_storm([node("a"), node("b"), node("c"), node("d", ready="Unknown")], "40%")


def test_two_dead_nodes_of_four_is_a_storm():
    nodes = [node("a"), node("b"), node("c", ready="Unknown"), node("d", ready="False")]
    with pytest.raises(RefusedError) as caught:
        check_storm(nodes, "40%")
    assert caught.value.rule == "storm"
    assert "c, d" in str(caught.value)


def test_control_plane_refused_unless_allowed():
    target = node("cp1", ready="Unknown", labels=CP)
    with pytest.raises(RefusedError) as caught:
        check_control_plane(target, [target, node("w1")], allow_control_plane=False)
    assert caught.value.rule == "control-plane"


def test_worker_is_not_a_control_plane_question():
    check_control_plane(node("w1", ready="Unknown"), [node("w1", ready="Unknown")], allow_control_plane=False)


def test_control_plane_allowed_when_others_keep_quorum():
    target = node("cp1", ready="Unknown", labels=CP)
    check_control_plane(target, [target, node("cp2", labels=CP), node("cp3", labels=CP)], allow_control_plane=True)


def test_control_plane_never_when_quorum_is_gone():
    target = node("cp1", ready="Unknown", labels=CP)
    nodes = [target, node("cp2", labels=CP), node("cp3", ready="Unknown", labels=CP)]
    with pytest.raises(RefusedError) as caught:
        check_control_plane(target, nodes, allow_control_plane=True)
    assert caught.value.rule == "etcd-quorum"


def test_single_control_plane_can_never_be_remediated():
    target = node("cp1", ready="Unknown", labels=CP)
    with pytest.raises(RefusedError, match="etcd-quorum"):
        check_control_plane(target, [target], allow_control_plane=True)


def test_one_control_plane_at_a_time():
    target = node("cp1", ready="Unknown", labels=CP)
    tainted = node("cp2", labels=CP, taints=[{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}])
    nodes = [target, tainted, node("cp3", labels=CP), node("cp4", labels=CP), node("cp5", labels=CP)]
    with pytest.raises(RefusedError, match="one at a time"):
        check_control_plane(target, nodes, allow_control_plane=True)


@pytest.mark.parametrize(
    ("version", "support"),
    [("v1.35.4", "yes"), ("v1.26.0", "yes"), ("v1.25.9", "needs-gate"), ("v1.24.1", "needs-gate"), ("v1.23.5", "no"), ("v1.40.0", "yes")],
)
def test_out_of_service_support(version, support):
    assert out_of_service_supported(version) == support


def test_gate_versions_need_confirmation():
    with pytest.raises(RefusedError, match="NodeOutOfServiceVolumeDetach"):
        check_version("v1.25.3", gate_enabled=False)
    check_version("v1.25.3", gate_enabled=True)


def test_old_versions_are_refused():
    with pytest.raises(RefusedError, match="does not support"):
        check_version("v1.23.0", gate_enabled=True)
