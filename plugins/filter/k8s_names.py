# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter k8s_node_names: the node names a playbook was given, checked as Kubernetes names (refuses otherwise)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.names import why_not_node_name


def k8s_node_names(value):
    """One name, a comma-separated string or a list of names -> the list of names; refuses any invalid name."""
    if value is None:
        return []
    if isinstance(value, str):
        names = [part.strip(" ") for part in value.split(",")] if value else []
    elif isinstance(value, (list, tuple)):
        names = list(value)
    else:
        raise AnsibleFilterError(f"refused: node names must be a string or a list, not {type(value).__name__}; nothing was changed")
    problems = [why for why in (why_not_node_name(name) for name in names) if why]
    if problems:
        raise AnsibleFilterError("refused: " + "; ".join(problems) + ". Nothing was changed.")
    return [str(name) for name in names]


class FilterModule:
    def filters(self):
        return {"k8s_node_names": k8s_node_names}
