# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter node_power_source: the power option of one node (rules in plugins/module_utils/power/selection.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.selection import PowerMappingError, own_mappings, select_power


def node_power_source(node, by_node=None, host_value=None, default=None, inventory=None, hostvar="bmc"):
    try:
        return select_power(node, by_node, host_value, default, own_mappings(by_node, inventory, hostvar))
    except PowerMappingError as error:
        raise AnsibleFilterError(f"refused: {error}") from None


class FilterModule:
    def filters(self):
        return {"node_power_source": node_power_source}
