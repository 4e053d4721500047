# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module failover_history_info: read a node's durable incident history (logic in module_utils/incident/history.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: failover_history_info
short_description: Read the durable incident history of a node
version_added: 0.1.0
description:
  - Returns the incident records that M(nodeguard.failover.node_outage) and M(nodeguard.failover.node_recover) kept
    for a node, oldest first, with the timeline of each.
  - The history is the ConfigMap C(nodeguard-history-<node>) in O(namespace). It holds the last 20 incidents of the
    node, each as its full record (steps with start and end, proofs, power reading, pods, replacements, identity).
    It survives the expiry of Events (one hour) and reruns; a new incident never overwrites an earlier one,
    also not an C(interrupted) one.
  - Read-only.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.k8s_auth
attributes:
  check_mode:
    support: full
    description: The module never changes anything.
  diff_mode:
    support: none
    description: Nothing to diff.
options:
  node:
    description: Name of the Node whose history to read. It need not exist any more.
    type: str
    required: true
  namespace:
    description: Namespace of the history ConfigMaps, the O(nodeguard.failover.node_outage#module:history_namespace) of the runs.
    type: str
    default: nodeguard-history
  last:
    description: Return only the newest this many incidents. V(0) returns all that are kept.
    type: int
    default: 0
seealso:
  - module: nodeguard.failover.node_outage
  - module: nodeguard.failover.node_recover
"""

EXAMPLES = r"""
- name: What happened to worker3?
  nodeguard.failover.failover_history_info:
    node: worker3
    last: 3
  register: worker3_history

- name: Show each incident's timeline
  ansible.builtin.debug:
    msg: "{{ item.timeline_table }}"
  loop: "{{ worker3_history.incidents }}"
  loop_control:
    label: "{{ item.record.id }}"
"""

RETURN = r"""
config_map:
  description: The ConfigMap read, as C(namespace/name).
  returned: always
  type: str
  sample: nodeguard-system/nodeguard-history-worker3
incidents:
  description:
    - The incidents, oldest first. Each has C(record) (the incident record), C(phase), C(timeline) (milestones with
      time and seconds since the node was first NotReady) and C(timeline_table) (the same as text).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history, timeline
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.args import K8S_AUTH_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.connect import cluster_for

OPTIONS = {
    "node": {"type": "str", "required": True},
    "namespace": {"type": "str", "default": "nodeguard-history"},
    "last": {"type": "int", "default": 0},
}


def incidents(records: list, last: int) -> list:
    chosen = records[-last:] if last > 0 else records
    result = []
    for record in chosen:
        rows = timeline.rows(record)
        result.append({"record": record, "phase": record.get("phase"), "timeline": rows, "timeline_table": timeline.table(rows) if rows else ""})
    return result


def main():
    module = AnsibleModule(argument_spec=dict(K8S_AUTH_ARGUMENT_SPEC, **OPTIONS), supports_check_mode=True)
    p = module.params
    if p["last"] < 0:
        module.fail_json(msg=f"last must be 0 (all) or a positive count, got {p['last']}")
    name = history.config_map_name(p["node"])
    try:
        records = history.read(cluster_for(module), p["namespace"], p["node"])
    except NodeguardError as e:
        module.fail_json(msg=str(e), config_map=f"{p['namespace']}/{name}", incidents=[])
    module.exit_json(changed=False, config_map=f"{p['namespace']}/{name}", incidents=incidents(records, p["last"]))


if __name__ == "__main__":
    main()
