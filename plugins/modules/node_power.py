# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module node_power: read or set a node's power out of band (logic in module_utils/power/)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: node_power
short_description: Read or set a node's power through Redfish, IPMI, a fence agent or a command hook
version_added: 0.1.0
description:
  - Reads the power state of one machine out of band, or powers it off or on and re-reads until the state
    matches, with retries and exponential backoff.
  - There is no reboot action on purpose. Before the out-of-service taint a reboot could bring the node
    back with its volumes still attached elsewhere.
  - Also returns which machine the device says it controls (RV(identity)), to compare with the Node's
    C(status.nodeInfo.systemUUID) when writing a power mapping. This module has no cluster access, so it does
    not check that identity itself; node_outage and node_recover do.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.power
attributes:
  check_mode:
    support: full
    description: Reads the state and reports whether it would change; sends no power action.
  diff_mode:
    support: none
    description: The result reports the record and plan instead of a diff.
options:
  node:
    description: Node name, for messages and for the V(command) hook.
    type: str
    required: true
  state:
    description:
      - V(status) only reads. V(off) and V(on) act when the state differs, then re-read until it matches.
    type: str
    choices: [status, "off", "on"]
    default: status
  retries:
    description: Tries to send the action.
    type: int
    default: 5
  backoff_seconds:
    description: Wait after the first failed try; doubles after each.
    type: int
    default: 5
  confirm_timeout:
    description: Seconds to re-read the state until it matches after the action was accepted.
    type: int
    default: 120
seealso:
  - module: nodeguard.failover.node_outage
"""

EXAMPLES = r"""
- name: Read worker3's power state from its BMC
  nodeguard.failover.node_power:
    node: worker3
    power: "{{ hostvars['worker3'].bmc }}"
  register: worker3_power

- name: Power worker3 on again after repair
  nodeguard.failover.node_power:
    node: worker3
    state: "on"
    power: "{{ hostvars['worker3'].bmc }}"
"""

RETURN = r"""
power:
  description: The power state read last.
  returned: always
  type: str
  sample: "off"
detail:
  description: What the source said.
  returned: always
  type: str
identity:
  description:
    - What the device reports about the machine it controls (Redfish C(UUID), IPMI system GUID, the UUID a fence
      agent's C(list) reports for the plug, hook C(system_uuid)), or why it reports nothing.
  returned: always
  type: dict
  contains:
    kind:
      description: V(system-uuid), or V(none) when the device showed no identity.
      type: str
    value:
      description: The UUID; empty for V(none).
      type: str
    detail:
      description: What was read, or the error.
      type: str
attempts:
  description: One line per try of the action.
  returned: when an action was sent
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.waiters import Clock
from ansible_collections.nodeguard.failover.plugins.module_utils.power.args import POWER_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.power.backends import BY_NAME, POLLABLE_TYPES, listed
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError, fence_off, set_power
from ansible_collections.nodeguard.failover.plugins.module_utils.power.readers import reader_for

OPTIONS = {
    "node": {"type": "str", "required": True},
    "state": {"type": "str", "choices": ["status", "off", "on"], "default": "status"},
    "retries": {"type": "int", "default": 5},
    "backoff_seconds": {"type": "int", "default": 5},
    "confirm_timeout": {"type": "int", "default": 120},
}


def main():
    module = AnsibleModule(argument_spec=dict(POWER_ARGUMENT_SPEC, **OPTIONS), supports_check_mode=True)
    p = module.params
    try:
        if not BY_NAME[p["power"]["type"]].pollable:
            raise PowerError(f"node_power reads real power sources only ({listed(POLLABLE_TYPES)}); manual attestation belongs to node_outage")
        reader = reader_for(p["power"], p["node"])
        reading = reader.status()
        try:
            shown = reader.identify()
            identity = {"kind": shown.kind, "value": shown.value, "detail": shown.detail}
        except PowerError as e:
            identity = {"kind": "none", "value": "", "detail": str(e)}
        attempts = []
        changed = p["state"] != "status" and reading.state != p["state"]
        if changed and not module.check_mode:
            if p["state"] == "off":
                reading, attempts = fence_off(reader, p["retries"], p["backoff_seconds"], p["confirm_timeout"], Clock())
            else:
                reading, attempts = set_power(reader, "on", p["retries"], p["backoff_seconds"], p["confirm_timeout"], Clock())
    except NodeguardError as e:
        module.fail_json(msg=str(e), node=p["node"])
    module.exit_json(changed=changed, power=reading.state, detail=reading.detail, identity=identity, attempts=attempts)


if __name__ == "__main__":
    main()
