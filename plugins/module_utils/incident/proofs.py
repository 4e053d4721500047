# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The power-off proofs. All must hold before the first destructive step.

1. not-ready:   the API has seen the node NotReady/Unknown for at least ``min_seconds``.
2. lease-stale: the node's Lease was not renewed for longer than its duration plus a margin.
3. power-off:   an out-of-band source (BMC, fence agent, cloud hook, or a recorded attestation) reads Off
                twice some seconds apart, AND that source is shown to be this node's (power/identity.py).
On the power-event path (power_event.py) 1 and 2 are replaced by lease-silent: the Lease not renewed since
the event and older than one renew interval plus a margin, so a live kubelet would have renewed it since.
Each alone can lie: a partition looks like 1 and 2; a BMC mapped to the wrong machine reads that machine's
Off. The identity check closes the second case only as far as the device can show identity: a Redfish UUID
or IPMI GUID compared with the Node's systemUUID is evidence; a fence agent plug, an attestation, or a
mapping with identity_unverifiable_reason is the operator's word, recorded with the proof. Together the
proofs still trust the apiserver's view of the node, the BMC's honesty about its own UUID and power state,
and the kubelet's systemUUID; they do not make a wrong answer from those impossible.
"""

from __future__ import annotations

from typing import NamedTuple

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import MissingProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import (
    lease_age,
    lease_renew_time,
    ready_since,
    ready_status,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time


class Proof(NamedTuple):
    name: str
    ok: bool
    detail: str

    def as_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def prove_not_ready(node: dict, now: float, min_seconds: float) -> Proof:
    status = ready_status(node)
    since = ready_since(node)
    if status == "True":
        return Proof("not-ready", False, "node is Ready in the API")
    if since is None:
        return Proof("not-ready", False, f"node is {status} but the Ready condition has no transition time")
    age = now - since
    if age < min_seconds:
        return Proof("not-ready", False, f"node is {status} for {age:.0f}s only, need {min_seconds:.0f}s")
    return Proof("not-ready", True, f"node is {status} for {age:.0f}s (need {min_seconds:.0f}s)")


def prove_lease_stale(lease, now: float, margin_seconds: float) -> Proof:
    if lease is None:
        return Proof("lease-stale", False, "node has no Lease in kube-node-lease, staleness cannot be shown")
    age, duration = lease_age(lease, now)
    if age is None:
        return Proof("lease-stale", False, "node Lease has no renewTime")
    limit = duration + margin_seconds
    if age <= limit:
        return Proof("lease-stale", False, f"Lease renewed {age:.0f}s ago, not older than {duration}s + {margin_seconds:.0f}s")
    return Proof("lease-stale", True, f"Lease renewed {age:.0f}s ago (> {duration}s + {margin_seconds:.0f}s)")


def prove_lease_silent(lease, now: float, renew_interval: float, margin_seconds: float) -> Proof:
    """The power-event path's Lease proof: last renewed longer ago than one renew interval plus the margin,
    so a live kubelet would have renewed it since. (Renewed after the event: power_event refuses first.)"""
    renewed = lease_renew_time(lease)
    if lease is None:
        return Proof("lease-silent", False, "node has no Lease in kube-node-lease, its silence cannot be shown")
    if renewed is None:
        return Proof("lease-silent", False, "node Lease has no renewTime")
    age, limit = now - renewed, renew_interval + margin_seconds
    need = f"renew interval {renew_interval:g}s + margin {margin_seconds:g}s"
    if age <= limit:
        return Proof("lease-silent", False, f"Lease last renewed {format_time(renewed)}, {age:.0f}s ago, not older than {need}")
    return Proof("lease-silent", True, f"Lease last renewed {format_time(renewed)}, {age:.0f}s ago (> {need}): the kubelet missed its renewal")


def prove_power_off(reading=None, error=None, identity=None) -> Proof:
    """From a PowerReading (or the PowerError that reading it raised) and the IdentityVerdict of its device
    (power/identity.py). Holds only when the reading is Off and the device is shown to be this node's, or
    the node's mapping opted out of identity with a reason (recorded in the detail)."""
    if error is not None:
        return Proof("power-off", False, f"out-of-band power state unreadable: {error}")
    problems = []
    if identity is None:
        problems.append("the power device was not shown to belong to this node (no identity check)")
    elif not identity.ok:
        problems.append(f"the power device is not shown to belong to this node: {identity.detail}")
    if reading.state != "off":
        problems.append(f"{reading.method} reads power {reading.state.upper()} ({reading.detail})")
    elif problems:
        problems.append(f"{reading.method} reads power OFF, which proves nothing about this node")
    if problems:
        return Proof("power-off", False, "; ".join(problems))
    return Proof("power-off", True, f"{reading.method} reads power OFF ({reading.detail}); identity: {identity.detail}")


def require_all(proofs: list) -> None:
    """Raise MissingProofError naming every proof that does not hold."""
    missing = [p for p in proofs if not p.ok]
    if missing:
        raise MissingProofError([p.name for p in missing], [f"{p.name}: {p.detail}" for p in missing])
