# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which power source speaks for a node: its own mapping, or a shared default only where that is safe.

A Redfish or IPMI BMC, or a fence agent without a per-node plug, answers for one machine. A shared
default of such a type would make every node without a mapping of its own (a typo, a node added
later) read and power off the same machine: a spare that reads Off would "prove" any node dead.
So a shared default is only used for power types that are told which node they act on
(``command``: the hook receives the node name and resolves the machine itself).
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.backends import SHAREABLE_TYPES, listed

# Power types that name the node to the power source, so one shared entry can serve every node.
SHAREABLE_POWER_TYPES = SHAREABLE_TYPES


class PowerMappingError(NodeguardError):
    """A node's power source cannot be chosen safely (no mapping of its own where one is needed, or a malformed one)."""


def select_power(node: str, by_node: dict | None, host_value: object, default: dict | None) -> dict:
    """The ``power`` option for ``node``; ``{}`` when nothing at all is configured (the module refuses that).

    First match wins: ``by_node[node]``, then ``host_value`` (the inventory host variable of the host named
    like the node), then ``default``, and the default only when its type is in SHAREABLE_POWER_TYPES.
    Messages name the node and the power types, never a value of the mapping (it holds credentials).
    """
    own = (by_node or {}).get(node) or host_value or None
    if own is not None:
        if not isinstance(own, dict) or not own.get("type"):
            raise PowerMappingError(f"the power mapping of {node} must be a dict with a 'type' ({listed()})")
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
