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
      - B(Identity before trust.) A reading counts as proof only when the device is shown to control this node's
        machine. V(redfish) compares the ComputerSystem C(UUID), V(ipmi) the system GUID (C(Get System GUID)),
        V(command) the C(system_uuid) the hook returns, each with the Node's C(status.nodeInfo.systemUUID). A UUID
        also matches with its first three fields byte-swapped (SMBIOS 2.6+ stores them little-endian and firmware
        disagrees on how to print them); nothing else is tolerated. V(fence_agent) shows identity only when its
        C(list) action reports a UUID on the line of the node's plug (C(agent_options.plug)), as fence_vmware_soap
        and fence_xenapi do. A plug, port or O(power.system_id) (C(System.Embedded.1), C(1), C(Self), the same on
        every BMC of a vendor) is an address, not an identity. V(manual) must name the node. A device that reports
        another machine is always refused. Where identity cannot be shown, see O(power.identity_unverifiable_reason).
      - B(Redfish client.) The collection speaks Redfish itself (three resources, the Systems collection, one
        ComputerSystem, its Reset action) instead of using OpenStack's C(sushy). sushy would be a dependency of
        every controller and execution environment, it cannot be imported by module_utils without it, and the
        rules below (credentials only to the configured origin, no redirects) would still have to wrap it.
        The lab's BMC is sushy-tools, so the client is exercised against the emulator sushy is tested with.
    type: dict
    required: true
    suboptions:
      type:
        description:
          - V(redfish) reads C(PowerState) and C(UUID) of a Redfish ComputerSystem over HTTPS (basic auth, TLS verified).
            Credentials go only to the origin (scheme, host, port) of O(power.address); a link from the BMC to
            any other origin is refused, and redirects are not followed.
          - V(ipmi) runs C(ipmitool chassis power status) and C(ipmitool mc guid) over IPMI v2.0 (C(lanplus));
            the password goes through E(IPMI_PASSWORD), not argv.
          - V(fence_agent) runs a ClusterLabs fence agent (O(power.agent)) with its options, the password among them,
            on stdin (never in argv). No option value may contain whitespace or a shell metacharacter (the password
            excepted), because agents such as fence_ipmilan paste values into a command line. fence_ipmilan (and its aliases
            fence_ipmilanplus, fence_idrac, fence_ilo3, fence_ilo4, fence_ilo5, fence_imm) always gets C(lanplus=1)
            and only the cipher suites V(ipmi) accepts; its own defaults are IPMI v1.5 and any cipher. It still hands
            the password to ipmitool with C(-P), so V(ipmi) is preferred.
          - V(command) runs a hook program for clouds and custom sources; the contract is in
            C(docs/runbooks/node-outage.md).
          - V(manual) is an operator's attestation; it needs O(allow_manual_attestation) and O(power.attestation).
          - Helper programs (ipmitool, fence agents, hooks) run with a scrubbed environment, only E(PATH), E(LANG),
            E(LC_ALL), E(LC_CTYPE), E(TZ), E(TMPDIR), plus E(IPMI_PASSWORD) for ipmitool and E(REQUESTS_CA_BUNDLE)
            (from O(power.ca_cert)) for fence agents. Never E(K8S_AUTH_*) or proxy settings.
        type: str
        required: true
        choices: [redfish, ipmi, fence_agent, command, manual]
      address:
        description:
          - BMC address. A URL (C(https://bmc:443)) for V(redfish) and V(fence_agent) with fence_redfish;
            a host name or IP for V(ipmi) and fence_ipmilan.
          - Must not contain user information (C(user:password@)); it is shown in the record and in Events.
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
      allow_insecure_http:
        description:
          - Allow a plain C(http://) O(power.address) for V(redfish). The BMC password then crosses the network
            readable by anyone on the path. For labs without TLS only.
        type: bool
        default: false
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
          - ipmitool interface. Only V(lanplus) (IPMI v2.0); IPMI v1.5 (C(lan)) sessions can be forged and read.
        type: str
        default: lanplus
        choices: [lanplus]
      cipher:
        description:
          - ipmitool cipher suite id (C(-C)), for V(ipmi) and fence_ipmilan. Only suites with authentication, integrity
            and AES encryption are accepted (V(3), V(8), V(12), V(17)), also as C(agent_options.cipher); cipher suite 0
            needs no password at all. Unset, ipmitool chooses.
        type: int
      agent:
        description:
          - Fence agent program for V(fence_agent), for example C(fence_redfish) or C(fence_ipmilan).
        type: str
        default: fence_redfish
      agent_options:
        description:
          - Extra C(key=value) options for the fence agent (its stdin names), or the C(options) object passed to a V(command) hook.
          - Set C(plug) here for fence agents that control several machines (PDUs, hypervisors). The plug is an address;
            identity comes only from a UUID the agent's C(list) action reports for it.
          - Cannot set C(action) (or its old name C(option)), C(cipher=0) or C(lanplus=0); keys and values must be single lines,
            values without whitespace or shell metacharacters (except C(password) and C(passwd)). Not logged.
          - The values of secret-like keys (containing C(pass), C(pwd), C(token), C(key), C(secret), C(credential),
            C(community), or C(kg) as a word) are masked like the password in everything an agent or hook says,
            before it becomes a detail or message (record, Events, history). Switch values (C(0), C(1), C(true), ...) are not masked.
        type: dict
        default: {}
      command:
        description:
          - Argv of the V(command) hook (no shell).
        type: list
        elements: str
      off_reset_type:
        description:
          - Redfish C(ResetType) used to power off. Never a reboot (no C(PowerCycle), C(ForceRestart), ...).
        type: str
        default: ForceOff
        choices: [ForceOff, "Off"]
      off_confirm_seconds:
        description:
          - Off is proven by two readings this many seconds apart, both Off, with identity shown both times, so the
            short Off of a host that is rebooting does not count. At least 1.
          - A manual attestation (O(power.type=manual)) is read once, with no wait; it is what an operator wrote,
            not a measurement of the machine, so a second look shows the same words.
        type: int
        default: 5
      identity_unverifiable_reason:
        description:
          - The per-node opt-out of the identity check, for a device that cannot show which machine it controls
            (a fence agent that reports no UUID, such as fence_ipmilan or fence_redfish, a BMC without UUID, a hook without
            C(system_uuid)).
          - Say why, for example V(fence_ipmilan on a BMC dedicated to this host, cabling checked 2026-11-01).
            The reading is then accepted without identity and the reason is recorded with the proof.
          - It costs the protection against a wrong mapping; set it only in that node's own mapping, never in a shared default.
          - It never overrides a device that reports another machine.
        type: str
      attestation:
        description:
          - For V(manual) only. One operator's statement about one node, for one incident or time window; recorded on the node.
          - Required are C(node), C(state), C(operator), C(reason), C(expires), and C(incident) or C(not_before).
            It is refused when it names another node, another incident or another state than the step needs
            (V(off) for node_outage, V(on) for node_recover), when it has expired, when it is not valid yet, or
            when it expires more than 24 hours ahead.
        type: dict
        suboptions:
          node:
            description: The node this attestation is about.
            type: str
          state:
            description: The attested power state.
            type: str
            choices: ["off", "on"]
          operator:
            description: Person or team making the attestation.
            type: str
          reason:
            description: Why the node is known to be in the attested state (for example C(rack PDU switched off, ticket 4711)).
            type: str
          expires:
            description: RFC 3339 time with zone (C(2026-11-23T09:00:00Z)) after which it is refused; at most 24 hours ahead.
            type: str
          not_before:
            description: RFC 3339 time with zone from which it is valid (the start of its window).
            type: str
          incident:
            description: The incident id it is about (C(record.id) of node_outage); it must be the node's open incident.
            type: str
  allow_manual_attestation:
    description:
      - Allow O(power.type=manual). Off by default so an automated trigger cannot skip the out-of-band proof.
    type: bool
    default: false
"""
