"""Which power source speaks for a node (plugins/module_utils/power/selection.py, filter node_power_source):
its own mapping, never a shared default of a per-host device."""

import os

import pytest
from ansible.errors import AnsibleError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.selection import PowerMappingError, own_mappings, select_power

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


# -- two entries for one device (issue 20, item 1) -------------------------------------------------

W1_REDFISH = {"type": "redfish", "address": "https://bmc.rack1.example", "system_id": "System.Embedded.1", "password": "s3cret-pw"}
W3_UUID_PLUG = {
    "type": "fence_agent",
    "agent": "fence_redfish",
    "address": "https://10.0.0.9",
    "agent_options": {"plug": "4C4C4544-0042-3510-8052-B7C04F4E3232"},
}


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        # w3's mapping copied from w1's: same host and system (port and case spelled differently)
        (dict(W1_REDFISH, address="https://BMC.rack1.example:443/"), W1_REDFISH),
        # one BMC read over Redfish by one entry and through fence_redfish's plug by another
        ({"type": "fence_agent", "address": "https://bmc.rack1.example", "agent_options": {"plug": "System.Embedded.1"}}, W1_REDFISH),
        # IPMI: the same address and port (623 is the default)
        ({"type": "ipmi", "address": "10.0.0.5"}, {"type": "ipmi", "address": "10.0.0.5", "port": 623}),
        # the same system UUID as plug, on two different addresses (SMBIOS byte order counts as the same UUID)
        (dict(W3_UUID_PLUG, address="https://10.0.0.10"), dict(W3_UUID_PLUG, agent_options={"plug": "44454c4c-4200-1035-8052-b7c04f4e3232"})),
    ],
)
def test_two_nodes_mapped_to_one_device_are_refused_naming_the_other(mine, theirs):
    with pytest.raises(PowerMappingError) as error:
        select_power("w3", {"w3": mine}, None, None, {"w1": theirs, "w3": mine})
    message = str(error.value)
    assert message.startswith("the power mappings of w3 and w1 name the same")
    assert "s3cret-pw" not in message and "rack1" not in message and "10.0.0" not in message


@pytest.mark.parametrize(
    "theirs",
    [
        dict(W1_REDFISH, system_id="System.Embedded.2"),  # another system of a multi-system BMC
        {"type": "ipmi", "address": "10.0.0.5", "port": 6231},  # another IPMI endpoint on one address (the lab's)
        HOOK,  # a command hook names the node itself
    ],
)
def test_distinct_devices_are_accepted(theirs):
    mine = {"type": "ipmi", "address": "10.0.0.5"} if theirs.get("type") == "ipmi" else W1_REDFISH
    assert select_power("w3", {"w3": mine}, None, None, {"w1": theirs}) is mine


def test_other_mappings_come_from_by_node_and_every_inventory_host():
    inventory = {"w1": {"bmc": W1_REDFISH}, "w2": {}, "w3": {"bmc": dict(W1_REDFISH)}}
    with pytest.raises(PowerMappingError, match="w3 and w1"):
        select_power("w3", {}, inventory["w3"]["bmc"], None, own_mappings({}, inventory, "bmc"))
    # by_node wins over the inventory, as for the node itself
    fixed = own_mappings({"w3": dict(W1_REDFISH, system_id="System.Embedded.3")}, inventory, "bmc")
    assert select_power("w3", fixed, None, None, fixed)["system_id"] == "System.Embedded.3"


def test_the_filter_finds_the_duplicate_through_hostvars(render):
    expression = "node | nodeguard.failover.node_power_source(by_node, hostvars[node].bmc, none, inventory=hostvars, hostvar='bmc')"
    hostvars = {"w1": {"bmc": W1_REDFISH}, "w3": {"bmc": dict(W1_REDFISH)}}
    with pytest.raises(AnsibleError, match="refused: the power mappings of w3 and w1 name the same BMC address and system"):
        render(expression, node="w3", by_node={}, hostvars=hostvars)
