# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The power-off proofs. All must hold before the first destructive step.

1. not-ready:   the API has seen the node NotReady/Unknown for at least ``min_seconds``.
2. lease-stale: the node's Lease not changed while this controller watched it, on its own monotonic clock, for
                one renew interval (a quarter of the Lease's leaseDurationSeconds) plus a margin, so a live
                kubelet would have renewed it meanwhile (LeaseWatch). The watch starts at the run's first read
                and runs during the NotReady wait. The renewTime is the kubelet's clock: shown, never compared.
3. power-off:   an out-of-band source (BMC, fence agent, cloud hook, or a recorded attestation) reads Off
                twice some seconds apart, AND that source is shown to be this node's (power/identity.py).
On the power-event path (power_event.py) 1 is not required and 2 is called lease-silent (the same LeaseWatch).
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
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import ready_since, ready_status

# The longest Lease watch a run waits for (renew interval plus margin). A Lease that asks for more (a very long
# leaseDurationSeconds) cannot have its silence shown in one run: refused with a message saying so.
LONGEST_LEASE_WATCH_SECONDS = 120


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


def lease_token(lease) -> str:
    """What a Lease looks like, as an opaque token: its resourceVersion and renewTime, never read as a time."""
    spec = (lease or {}).get("spec") or {}
    return f"{((lease or {}).get('metadata') or {}).get('resourceVersion')}/{spec.get('renewTime')}"


def lease_duration(lease):
    """The Lease's own leaseDurationSeconds, or None when it does not say."""
    duration = ((lease or {}).get("spec") or {}).get("leaseDurationSeconds")
    if not isinstance(duration, (int, float)) or isinstance(duration, bool) or duration <= 0:
        return None
    return duration


def lease_renew_interval(lease):
    """How often the Lease's holder renews it: a quarter of its own leaseDurationSeconds (the kubelet's rule),
    or None when the Lease does not say."""
    duration = lease_duration(lease)
    return None if duration is None else duration / 4.0


class LeaseWatch:
    """A node Lease watched on this controller's monotonic clock: the liveness proof of both paths
    (``lease-stale`` on the heartbeat path, ``lease-silent`` on the power-event path).

    The first read starts the watch. Any later read that shows another token (resourceVersion, renewTime)
    means its kubelet renewed it: it lives. Silence is proven once the token has not changed for the
    Lease's own renew interval plus ``margin_seconds`` of local monotonic time. The renewTime is the
    kubelet's clock and is only shown, never compared with ours: a kubelet whose clock lags still changes
    its Lease every renew interval, and that change is what is watched.

    node-recover proves the opposite with the same reads (renewal_proof): the Lease changed recently, as seen
    from here."""

    def __init__(self, clock, margin_seconds: float):
        self.clock = clock
        self.margin = margin_seconds
        self.first = None  # (token, renewTime text, monotonic time of the first read)
        self.changed_to = None  # renewTime text of the first change seen, once one is
        self.last = None  # (token, monotonic time) of the latest read
        self.renewed_after = None  # monotonic time of the read before the latest change seen: the change came after it

    def observe(self, lease) -> None:
        if lease is None:
            return
        token = lease_token(lease)
        renewed = (lease.get("spec") or {}).get("renewTime")
        now = self.clock.monotonic()
        if self.first is None:
            self.first = (token, renewed, now)
        elif token != self.first[0] and self.changed_to is None:
            self.changed_to = renewed or "(none)"
        if self.last is not None and token != self.last[0]:
            self.renewed_after = self.last[1]
        self.last = (token, now)

    def needed(self, lease):
        """Seconds the Lease must stay unchanged, or None when the Lease does not give its duration."""
        interval = lease_renew_interval(lease)
        return None if interval is None else interval + self.margin

    def silent_at(self, lease):
        """Monotonic time at which silence will be proven, if the Lease stays as it is; None when it never can be
        in this run (no Lease, no duration, a change already seen, or a watch longer than LONGEST_LEASE_WATCH_SECONDS)."""
        needed = self.needed(lease)
        if self.first is None or needed is None or self.changed_to is not None or needed > LONGEST_LEASE_WATCH_SECONDS:
            return None
        return self.first[2] + needed

    def pending(self, lease) -> bool:
        """True while silence is not proven yet but will be, by waiting alone, at silent_at."""
        at = self.silent_at(lease)
        return at is not None and self.clock.monotonic() < at

    def proof(self, lease, name: str = "lease-silent") -> Proof:
        self.observe(lease)
        if lease is None:
            return Proof(name, False, "node has no Lease in kube-node-lease, its silence cannot be shown")
        interval = lease_renew_interval(lease)
        if interval is None:
            return Proof(name, False, "node Lease has no leaseDurationSeconds: its renew interval is unknown")
        if self.changed_to is not None:
            return Proof(name, False, f"Lease renewed while watched (renewTime {self.first[1]} -> {self.changed_to}): its kubelet lives")
        need = f"renew interval {interval:g}s (leaseDurationSeconds/4) + margin {self.margin:g}s"
        if self.needed(lease) > LONGEST_LEASE_WATCH_SECONDS:
            return Proof(
                name,
                False,
                f"the Lease's silence cannot be watched in one run: {need} is longer than {LONGEST_LEASE_WATCH_SECONDS}s "
                "(lower the kubelet's nodeLeaseDurationSeconds)",
            )
        watched = self.clock.monotonic() - self.first[2]
        if watched < self.needed(lease):
            return Proof(name, False, f"Lease unchanged for {watched:.1f}s as watched from here, not yet {need}")
        return Proof(
            name,
            True,
            f"Lease unchanged for {watched:.1f}s as watched from here (>= {need}; renewTime {self.first[1]} by the kubelet's clock, "
            "not compared): the kubelet missed its renewal",
        )

    def renewal_proof(self, lease, name: str = "heartbeat") -> Proof:
        """Holds once a change of the Lease was seen, and the read before it (the change came after that read) is at
        most the Lease's own leaseDurationSeconds ago on the monotonic clock: its kubelet renews it now."""
        self.observe(lease)
        if lease is None:
            return Proof(name, False, "node has no Lease in kube-node-lease")
        duration = lease_duration(lease)
        if duration is None:
            return Proof(name, False, "node Lease has no leaseDurationSeconds: how fresh a renewal must be is unknown")
        now = self.clock.monotonic()
        if self.renewed_after is None:
            return Proof(name, False, f"Lease not renewed in {now - self.first[2]:.1f}s as watched from here (its kubelet renews every {duration / 4:g}s)")
        age = now - self.renewed_after
        renewed = (lease.get("spec") or {}).get("renewTime")
        return Proof(
            name,
            age <= duration,
            f"Lease renewed at most {age:.1f}s ago as watched from here (limit leaseDurationSeconds {duration:g}s; renewTime {renewed} "
            "by the kubelet's clock, not compared)",
        )


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
