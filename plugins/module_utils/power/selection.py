# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which power source speaks for a node: its own mapping, or a shared default only where that is safe.

A Redfish or IPMI BMC, or a fence agent without a per-node plug, answers for one machine. A shared
default of such a type would make every node without a mapping of its own (a typo, a node added
later) read and power off the same machine: a spare that reads Off would "prove" any node dead.
So a shared default is only used for power types that are told which node they act on
(``command``: the hook receives the node name and resolves the machine itself).

For the same reason two nodes' own mappings must never name one device (check_unique): the same BMC
address and system (host, port, system_id or plug), or the same system UUID (a plug or system_id that is
a UUID). One of the two is a copy-paste mistake, and through it one node's reading would prove the other dead.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.backends import ADDRESSED_TYPES, SHAREABLE_TYPES, listed
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import same_system_uuid

# Power types that name the node to the power source, so one shared entry can serve every node.
SHAREABLE_POWER_TYPES = SHAREABLE_TYPES


class PowerMappingError(NodeguardError):
    """A node's power source cannot be chosen safely (no mapping of its own where one is needed, or a malformed one)."""


# Default ports of the device types, so that "bmc" and "bmc:623" are one address.
_DEFAULT_PORTS = {"https": 443, "http": 80, "ipmi": 623}


def _device(mapping: dict) -> tuple:
    """(address, system) of a per-host device mapping, both normalised; ("", "") for a command hook or an attestation.

    address: "host:port" of the BMC; system: the Redfish system_id or the fence agent's plug ("" when none)."""
    kind = mapping.get("type")
    if kind not in ADDRESSED_TYPES:
        return "", ""
    address = str(mapping.get("address") or "").strip()
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        port = mapping.get("port") or parts.port
    except ValueError:
        port = None
    if not port:
        port = _DEFAULT_PORTS.get(parts.scheme or ("ipmi" if kind == "ipmi" else ""), "")
    host = (parts.hostname or "").lower()
    options = mapping.get("agent_options") or {}
    plug = (options.get("plug") or options.get("port")) if isinstance(options, dict) else ""
    system = str(plug or mapping.get("system_id") or "").strip()
    return (f"{host}:{port}" if host else ""), system


def check_unique(node: str, own: dict, others: dict | None) -> None:
    """Refuse when ``own`` (node's mapping) names the same device as the mapping of another node in ``others``
    (node name -> its own mapping): same BMC address and system, or the same system UUID as plug or system_id.
    The refusal names the other node, never a value of either mapping."""
    address, system = _device(own)
    for other, mapping in sorted((others or {}).items()):
        if other == node or not isinstance(mapping, dict):
            continue
        other_address, other_system = _device(mapping)
        if address and (address, system) == (other_address, other_system):
            what = "the same BMC address and system"
        elif system and other_system and same_system_uuid(system, other_system):
            what = "the same system UUID"
        else:
            continue
        raise PowerMappingError(
            f"the power mappings of {node} and {other} name {what}: one of them is a mistake, and through it one node's "
            f"power reading would prove the other dead (or fencing would power off the wrong machine). Give each node "
            "the BMC of its own machine. Nothing was changed."
        )


def select_power(node: str, by_node: dict | None, host_value: object, default: dict | None, others: dict | None = None) -> dict:
    """The ``power`` option for ``node``; ``{}`` when nothing at all is configured (the module refuses that).

    First match wins: ``by_node[node]``, then ``host_value`` (the inventory host variable of the host named
    like the node), then ``default``, and the default only when its type is in SHAREABLE_POWER_TYPES.
    ``others`` (node name -> that node's own mapping, see own_mappings) are checked for a second entry naming
    the same device (check_unique).
    Messages name the node and the power types, never a value of the mapping (it holds credentials).
    """
    own = (by_node or {}).get(node) or host_value or None
    if own is not None:
        if not isinstance(own, dict) or not own.get("type"):
            raise PowerMappingError(f"the power mapping of {node} must be a dict with a 'type' ({listed()})")
        check_unique(node, own, others)
        return own
    if not default:
        return {}
    if not isinstance(default, dict):
        raise PowerMappingError("the shared default power mapping must be a dict with a 'type'")
    kind = default.get("type")
    if kind not in SHAREABLE_POWER_TYPES:
        raise PowerMappingError(
            f"no power mapping of its own for {node}; a shared default is only allowed for power types that name the node, "
            f"({listed(SHAREABLE_POWER_TYPES)}), and the default's type is {kind!r}. Map {node} to its own BMC (power_by_node or the inventory "
            "host variable). Nothing was changed."
        )
    if default.get("identity_unverifiable_reason"):
        raise PowerMappingError(
            f"no power mapping of its own for {node}; the shared default sets identity_unverifiable_reason, which would "
            "waive the identity proof for every node without a mapping of its own. Give the opt-out per node, in "
            f"{node}'s own mapping. Nothing was changed."
        )
    return default


def own_mappings(by_node: dict | None, inventory: dict | None, hostvar: str) -> dict:
    """Every node's own mapping, as select_power chooses it: ``by_node[name]``, else the host variable
    ``hostvar`` of the inventory host ``name`` (``inventory``: host name -> its variables, e.g. hostvars)."""
    mappings = {}
    for name in inventory or {}:
        value = (inventory[name] or {}).get(hostvar)
        if value:
            mappings[name] = value
    mappings.update({name: value for name, value in (by_node or {}).items() if value})
    return mappings
