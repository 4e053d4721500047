"""Which power source speaks for a node (plugins/module_utils/power/selection.py, filter node_power_source):
its own mapping, never a shared default of a per-host device."""

import os

import pytest
from ansible.errors import AnsibleError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.selection import PowerMappingError, select_power

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OWN = {"type": "redfish", "address": "https://bmc-w1.example", "username": "u", "password": "s3cret-pw"}
HOST = {"type": "ipmi", "address": "10.0.0.2", "username": "u", "password": "s3cret-pw"}
HOOK = {"type": "command", "command": ["/usr/local/bin/cloud-power"]}
SHARED_BMC = {"type": "redfish", "address": "https://spare.example", "username": "u", "password": "s3cret-pw"}


def test_own_mapping_first_then_inventory():
    assert select_power("w1", {"w1": OWN}, HOST, SHARED_BMC) is OWN
    assert select_power("w1", {"w2": OWN}, HOST, SHARED_BMC) is HOST
    assert select_power("w1", {}, HOST, None) is HOST


def test_a_command_hook_may_be_shared():
    assert select_power("w1", {"w2": OWN}, None, HOOK) is HOOK


@pytest.mark.parametrize("kind", ["redfish", "ipmi", "fence_agent", "manual"])
def test_a_shared_default_of_a_per_host_device_is_refused(kind):
    default = dict(SHARED_BMC, type=kind)
    with pytest.raises(PowerMappingError) as error:
        select_power("ng-w9", {"ng-w1": OWN}, None, default)
    message = str(error.value)
    assert message.startswith("no power mapping of its own for ng-w9; a shared default is only allowed for power types that name the node")
    assert kind in message
    assert "s3cret-pw" not in message and "spare.example" not in message


def test_a_shared_default_never_waives_identity_for_every_node():
    """The identity opt-out is per node: in a shared hook it would cover every node without a mapping."""
    with pytest.raises(PowerMappingError) as error:
        select_power("ng-w9", {}, None, dict(HOOK, identity_unverifiable_reason="hook cannot tell"))
    assert "identity_unverifiable_reason" in str(error.value)
    own = dict(HOOK, identity_unverifiable_reason="hook cannot tell")
    assert select_power("ng-w9", {"ng-w9": own}, None, None) is own


def test_nothing_configured_is_left_to_the_module():
    assert select_power("w1", {}, None, {}) == {}
    assert select_power("w1", None, None, None) == {}


@pytest.mark.parametrize("bad", ["redfish", ["x"], {"address": "https://bmc"}])
def test_a_malformed_own_mapping_is_refused(bad):
    with pytest.raises(PowerMappingError, match="power mapping of w1 must be a dict with a 'type'"):
        select_power("w1", {"w1": bad}, None, None)


def test_filter_as_the_roles_use_it(render):
    expression = "node | nodeguard.failover.node_power_source(by_node, (hostvars[node] | default({})).bmc | default(none), default)"
    hostvars = {"w2": {"bmc": HOST}}
    assert render(expression, node="w1", by_node={"w1": OWN}, hostvars=hostvars, default={}) == OWN
    assert render(expression, node="w2", by_node={}, hostvars=hostvars, default=SHARED_BMC) == HOST
    with pytest.raises(AnsibleError, match="refused: no power mapping of its own for w3"):
        render(expression, node="w3", by_node={}, hostvars=hostvars, default=SHARED_BMC)
