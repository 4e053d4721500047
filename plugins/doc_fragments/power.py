# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The out-of-band power option shared by node_power, node_outage and node_recover.

The matching argument spec is POWER_ARGUMENT_SPEC in plugins/module_utils/power/args.py.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  power:
    description:
      - How to read (and, where allowed, set) the node's power out of band.
      - The keys match the lab inventory's C(bmc) host variable, so V({{ hostvars[node].bmc }}) can be passed as is.
    type: dict
    required: true
    suboptions:
      type:
        description:
          - V(redfish) reads C(PowerState) of a Redfish ComputerSystem over HTTPS (basic auth, TLS verified).
          - V(ipmi) runs C(ipmitool chassis power status); the password goes through E(IPMI_PASSWORD), not argv.
          - V(fence_agent) runs a ClusterLabs fence agent (O(power.agent)) with its options on stdin.
          - V(command) runs a hook program for clouds and custom sources; the contract is in
            C(docs/runbooks/node-outage.md).
          - V(manual) is an operator's attestation; it needs O(allow_manual_attestation) and O(power.attestation).
        type: str
        required: true
        choices: [redfish, ipmi, fence_agent, command, manual]
      address:
        description:
          - BMC address. A URL (C(https://bmc:443)) for V(redfish) and V(fence_agent) with fence_redfish;
            a host name or IP for V(ipmi) and fence_ipmilan.
        type: str
      port:
        description:
          - Port for V(ipmi) and V(fence_agent), when not in O(power.address).
        type: int
      system_id:
        description:
          - Redfish system id (the last part of C(/redfish/v1/Systems/<id>)). Needed when the BMC has several systems.
        type: str
      username:
        description:
          - BMC user name.
        type: str
      password:
        description:
          - BMC password. Never logged, never on a command line.
        type: str
      validate_certs:
        description:
          - Verify the BMC's TLS certificate (V(redfish), fence_redfish).
        type: bool
        default: true
      ca_cert:
        description:
          - CA bundle for the BMC's certificate.
        type: path
      timeout:
        description:
          - Seconds per request or per program run (one try). Defaults to 10 for V(redfish) and V(ipmi), 60 otherwise.
        type: int
      interface:
        description:
          - ipmitool interface (V(lanplus) or V(lan)).
        type: str
        default: lanplus
      cipher:
        description:
          - ipmitool cipher suite id (C(-C)) for V(lanplus).
        type: int
      agent:
        description:
          - Fence agent program for V(fence_agent), for example C(fence_redfish) or C(fence_ipmilan).
        type: str
        default: fence_redfish
      agent_options:
        description:
          - Extra C(key=value) options for the fence agent (its stdin names), or the C(options) object passed to a V(command) hook.
        type: dict
        default: {}
      command:
        description:
          - Argv of the V(command) hook (no shell).
        type: list
        elements: str
      off_reset_type:
        description:
          - Redfish C(ResetType) used to power off. Never a reboot.
        type: str
        default: ForceOff
      attestation:
        description:
          - For V(manual) only. Who attests and why; both are recorded on the node.
        type: dict
        suboptions:
          operator:
            description: Person or team making the attestation.
            type: str
          reason:
            description: Why the node is known to be in the attested state (for example C(rack PDU switched off, ticket 4711)).
            type: str
  allow_manual_attestation:
    description:
      - Allow O(power.type=manual). Off by default so an automated trigger cannot skip the out-of-band proof.
    type: bool
    default: false
"""
