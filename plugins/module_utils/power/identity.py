# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Identity before trust: a power reading counts only for the node its device is shown to belong to.

- Redfish: the ComputerSystem ``UUID``; IPMI: the system GUID (``Get System GUID``); a command hook: the
  ``system_uuid`` it returns. Each is compared with the Node's ``status.nodeInfo.systemUUID`` (the SMBIOS
  product UUID the kubelet reports). Firmware disagrees on the byte order of the first three fields
  (SMBIOS 2.6+ stores them little-endian, many tools print them as stored), so a UUID also matches when
  those three fields are byte-swapped: that tolerance is the only one.
- fence agents: the UUID their ``list`` action reports on this node's plug line (fence_agent.py). A plug,
  port or ``system_id`` is an address, not an identity: without a reported UUID the agent shows nothing.
- manual attestation: the attestation names this node (and the incident, when one is open).

A system UUID is an identity only when it names one machine: it is not a known placeholder of unset
firmware (PLACEHOLDER_UUIDS) and exactly one Node of the cluster reports it (``ClusterUniqueIdentity``).
Cloned VMs and boards that ship the placeholder report one UUID for several machines; a device showing
such a UUID could be any of them, so it proves nothing for this node ("identity unverified").

Where the device cannot show an identity, the node's power mapping may say so with
``identity_unverifiable_reason``; the reason is then recorded with the proof. A device that shows
ANOTHER identity is refused whatever that option says.

Off is proven by ``confirm_off``: two readings ``off_confirm_seconds`` apart, both Off, identity shown both
times, so the short Off of a host that is rebooting is not taken for a dead host. A manual attestation is
read once: it is what an operator wrote, not a measurement of the machine, so a second look some seconds
later shows the same words and proves nothing more (its scope and expiry keep it safe, manual.py).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import OFF, Identity, PowerError

DEFAULT_OFF_CONFIRM_SECONDS = 5
_HEX32 = re.compile(r"^[0-9a-f]{32}$")

# UUIDs that firmware reports when nobody set one: the same on every machine of a model, so never an identity.
PLACEHOLDER_UUIDS = {
    "00000000-0000-0000-0000-000000000000": "all zero (SMBIOS: not present)",
    "ffffffff-ffff-ffff-ffff-ffffffffffff": "all F (SMBIOS: present but not set)",
    # A firmware default that many boards ship unchanged ("To Be Filled By O.E.M."): a whole product line reports it.
    "03000200-0400-0500-0006-000700080009": "the common BIOS placeholder UUID",
}


class IdentityVerdict(NamedTuple):
    verified: bool  # the device showed this node's identity
    detail: str  # what was compared, or what is missing
    opted_out: bool = False  # not shown, but the node's mapping says why (identity_unverifiable_reason)

    @property
    def ok(self) -> bool:
        return self.verified or self.opted_out

    def as_dict(self) -> dict:
        return {"verified": self.verified, "opted_out": self.opted_out, "detail": self.detail}


def _hex(value: str) -> str:
    text = re.sub(r"[\s{}-]", "", str(value or "")).lower()
    return text if _HEX32.match(text) else ""


def _smbios_swapped(hex32: str) -> str:
    """The same UUID with its first three fields (4, 2, 2 bytes) in the other byte order."""
    first, second, third = hex32[0:8], hex32[8:12], hex32[12:16]

    def swap(field):
        return "".join(reversed([field[i : i + 2] for i in range(0, len(field), 2)]))

    return swap(first) + swap(second) + swap(third) + hex32[16:]


def placeholder(value: str) -> str:
    """Why ``value`` is a known placeholder UUID (PLACEHOLDER_UUIDS, in either byte order), "" when it is not one."""
    text = _hex(value)
    for known, why in PLACEHOLDER_UUIDS.items():
        if text and text in (_hex(known), _smbios_swapped(_hex(known))):
            return why
    return ""


def same_system_uuid(reported: str, expected: str) -> str:
    """"exact" or "smbios-byte-order" when the two UUIDs name the same machine, "" otherwise (also for
    anything that is not a UUID, and for the placeholder UUIDs of unset firmware, PLACEHOLDER_UUIDS)."""
    a, b = _hex(reported), _hex(expected)
    if not a or not b or placeholder(a) or placeholder(b):
        return ""
    if a == b:
        return "exact"
    if _smbios_swapped(a) == b:
        return "smbios-byte-order"
    return ""


def is_uuid(value: str) -> bool:
    return bool(_hex(value))


def node_system_uuid(node: dict) -> str:
    return ((node.get("status") or {}).get("nodeInfo") or {}).get("systemUUID") or ""


def nodes_reporting(value: str, nodes: list) -> list:
    """Names of the Nodes whose systemUUID is ``value`` (either byte order)."""
    return sorted(n["metadata"]["name"] for n in nodes if same_system_uuid(value, node_system_uuid(n)))


class ClusterUniqueIdentity:
    """A reader whose system UUID counts only when exactly one Node of the cluster reports it.

    Wraps any reader (every other attribute is the reader's own). ``list_nodes`` returns the cluster's Node
    list; it is called at every identify(). node-outage and node-recover pass the list their run read last for a
    decision (incident/node_list.py), so a Node that joins with the same UUID is seen from the run's next decision on.
    A UUID shared by several Nodes comes back as an Identity of kind "shared-uuid", which verifies nothing.
    """

    def __init__(self, reader, list_nodes):
        self.reader = reader
        self.list_nodes = list_nodes

    def __getattr__(self, name):
        return getattr(self.reader, name)

    def identify(self) -> Identity:
        identity = self.reader.identify()
        if identity.kind != "system-uuid":
            return identity
        holders = nodes_reporting(identity.value, self.list_nodes())
        if len(holders) > 1:
            return Identity(
                "shared-uuid",
                identity.value,
                f"{identity.detail}, but Nodes {', '.join(holders)} all report that systemUUID (cloned machines?): "
                "a UUID shared by several machines names none of them",
            )
        return identity


def _opt_out(reader) -> str:
    return str((getattr(reader, "config", None) or {}).get("identity_unverifiable_reason") or "").strip()


def _compare(identity, node: dict) -> tuple:
    """(verified, mismatch, detail) for one Identity."""
    name = node["metadata"]["name"]
    if identity.kind == "system-uuid":
        expected = node_system_uuid(node)
        if not expected:
            return False, False, f"node {name} reports no status.nodeInfo.systemUUID, so {identity.detail} cannot be matched"
        unset = placeholder(expected) or placeholder(identity.value)
        if unset:
            return False, False, f"{identity.detail}, node {name} systemUUID {expected}: {unset} is a placeholder, not an identity"
        how = same_system_uuid(identity.value, expected)
        if how:
            order = " (SMBIOS byte order)" if how == "smbios-byte-order" else ""
            return True, False, f"{identity.detail} matches node {name} systemUUID {expected}{order}"
        return False, True, f"{identity.detail} is NOT node {name}'s systemUUID {expected}: this device controls another machine"
    if identity.kind == "shared-uuid":
        return False, False, identity.detail
    if identity.kind == "attested-node":
        if identity.value != name:
            return False, True, f"{identity.detail}, not {name}"
        return True, False, identity.detail
    return False, False, f"{identity.detail} (no identity)"


def verify_identity(reader, node: dict, incident: str | None = None) -> IdentityVerdict:
    """Is ``reader``'s device shown to be ``node``'s (a Node object)? Never raises for a missing identity.

    ``incident`` is the open incident id, if any: a manual attestation that names an incident must name it.
    """
    name = node["metadata"]["name"]
    opt_out = _opt_out(reader)
    try:
        identity = reader.identify()
    except PowerError as e:
        verified, mismatch, detail = False, False, f"{reader.method} could not report which machine it controls: {e}"
    else:
        check = getattr(reader, "check_incident", None)
        problem = check(incident) if check else ""
        if problem:
            return IdentityVerdict(False, problem)
        verified, mismatch, detail = _compare(identity, node)
    if verified:
        return IdentityVerdict(True, detail)
    if mismatch:
        return IdentityVerdict(False, detail)  # another machine: no opt-out covers that
    if opt_out:
        return IdentityVerdict(
            False,
            f"identity NOT verified ({detail}); accepted because node {name}'s power mapping sets identity_unverifiable_reason: {opt_out}",
            opted_out=True,
        )
    return IdentityVerdict(
        False,
        f"{detail}. Configure the device's identity for {name} (docs/runbooks/node-outage.md, 'Power device identity') "
        "or, if it truly cannot be shown, set identity_unverifiable_reason in this node's power mapping",
    )


def read_with_identity(reader, node: dict, incident: str | None = None) -> tuple:
    """(PowerReading, IdentityVerdict) of one reading. Raises PowerError when the power state is unreadable."""
    verdict = verify_identity(reader, node, incident)
    return reader.status(), verdict


def is_statement(reader) -> bool:
    """True for a reader that reports what someone wrote rather than measuring the machine (a manual attestation)."""
    return bool(getattr(reader, "statement", False))


def read_once(reading):
    """A statement's reading as the proof it is: one reading, said so in its detail."""
    return reading._replace(detail=f"{reading.detail} (an attestation is read once: reading it again proves nothing more)")


def off_confirm_seconds(reader) -> float:
    """The mapping's off_confirm_seconds; at least 1: two readings at the same moment prove nothing more than one."""
    value = (getattr(reader, "config", None) or {}).get("off_confirm_seconds")
    return max(1.0, float(DEFAULT_OFF_CONFIRM_SECONDS if value is None else value))


def confirm_off(reader, node: dict, clock, first: tuple | None = None, interval: float | None = None, incident: str | None = None) -> tuple:
    """Off proven by two readings ``interval`` seconds apart (default: the mapping's off_confirm_seconds),
    both Off, identity shown both times. ``first`` is a (reading, verdict) already taken; ``incident`` as
    for verify_identity.

    Returns (PowerReading, IdentityVerdict) of the last reading: Off with a detail saying it held, or the
    reading that was not Off (a host that reads Off for a moment while it reboots), or the verdict that failed.
    A statement (manual attestation) is not read a second time. Raises PowerError when a reading fails.
    """
    interval = off_confirm_seconds(reader) if interval is None else interval
    reading, verdict = first or read_with_identity(reader, node, incident)
    if reading.state != OFF or not verdict.ok:
        return reading, verdict
    if is_statement(reader):
        return read_once(reading), verdict
    clock.sleep(interval)
    second, second_verdict = read_with_identity(reader, node, incident)
    if not second_verdict.ok:
        return second, second_verdict
    if second.state != OFF:
        return second._replace(detail=f"read OFF, then {second.state.upper()} {interval:.0f}s later (rebooting?): {second.detail}"), second_verdict
    return second._replace(detail=f"OFF in two readings {interval:.0f}s apart: {second.detail}"), second_verdict
