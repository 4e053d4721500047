# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node-outage's power steps, shared by both trigger paths and resume: fence, read power again right before a
destructive write, keep the power-off proof fresh, and hold a manual attestation to its window and its incident.

Each check reads the power with identity shown (power/identity.py). On, with identity shown, stops the run
(after the taint: recorded as interrupted, OutageRun.interrupt); anything else but Off is a missing proof.
"""

from __future__ import annotations

import time

from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import MissingProofError, NodeReturnedError, RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import prove_power_off
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import parse_time
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError, fence_off
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import confirm_off, read_with_identity


def attestation_deadline(power, clock):
    """Monotonic time at which a manual attestation expires (None for any other power source). Its expiry is
    an absolute time an operator wrote, checked against this controller's wall clock when it was read
    (power/manual.py, time.time()); it is turned into time left once, here, against the same clock, and
    counted down on the monotonic clock from then on."""
    attestation = getattr(power, "attestation", None)
    expires = parse_time(attestation.get("expires")) if isinstance(attestation, dict) and attestation.get("expires") else None
    if expires is None:
        return None
    return clock.monotonic() + (expires - time.time())


class RenewingClock:
    """A clock that keeps the lock alive while fencing sleeps between tries and re-reads."""

    def __init__(self, clock, lock):
        self.clock = clock
        self.lock = lock

    def now(self) -> float:
        return self.clock.now()

    def monotonic(self) -> float:
        return self.clock.monotonic()

    def sleep(self, seconds: float) -> None:
        self.lock.renew()
        self.clock.sleep(seconds)


class PowerChecks:
    """The power steps of one OutageRun (``run``: its power source, lock, clock, options, record and facts)."""

    def __init__(self, run, power, clock):
        self.run = run
        self.proven_at = None  # monotonic time of the last power-off proof
        self.attestation_expires_at = attestation_deadline(power, clock)  # monotonic; None: not an attestation

    def read_confirmed(self, node: dict, incident: str | None = None) -> tuple:
        """(PowerReading, PowerError, IdentityVerdict): one reading, confirmed by a second one some seconds later
        when it reads Off (confirm_off). The waits renew the lock. ``incident``: the open incident id (after the
        taint), which a manual attestation naming an incident must match."""
        run = self.run
        try:
            reading, identity = read_with_identity(run.power, node, incident)
            reading, identity = confirm_off(run.power, node, RenewingClock(run.clock, run.lock), (reading, identity), incident=incident)
        except PowerError as e:
            return None, e, None
        return reading, None, identity

    def read_once(self, node: dict) -> tuple:
        """(PowerReading, PowerError, IdentityVerdict): one reading with identity, no confirming second one."""
        run = self.run
        try:
            incident = run.record.get("id") if run.recorder else None  # the open incident, once this run has one
            reading, identity = read_with_identity(run.power, node, incident)
        except PowerError as e:
            return None, e, None
        return reading, None, identity

    def fence(self, node: dict) -> tuple:
        run = self.run
        started = run.clock.now()
        clock = RenewingClock(run.clock, run.lock)
        run.lock.confirm()  # power a machine off only while this run provably holds the node's lock
        try:
            _reading, attempts = fence_off(run.power, run.o.fence_retries, run.o.fence_backoff_seconds, run.o.fence_confirm_timeout, clock)
            reading, identity = confirm_off(run.power, node, clock)
        except PowerError as e:
            run.facts["fence"] = f"failed: {e}"
            return None, e, None
        run.facts["fence"] = f"powered off via {run.power.method}: {'; '.join(attempts)}"
        run.facts["fence_times"] = (started, run.clock.now())
        return reading, None, identity

    def at_point_of_action(self, step: str, action: str, node: dict | None = None) -> None:
        """Right before a destructive write (the taint, a batch of force-deletes, of VolumeAttachment deletes):
        power read once more, identity shown. On stops before the write (after the taint: recorded as
        interrupted); anything but Off with identity is a missing proof."""
        run = self.run
        reading, error, identity = self.read_once(node or run.get_node())
        proof = prove_power_off(reading, error, identity)
        run.facts.setdefault("power_rechecks", []).append(dict(proof.as_dict(), when=f"right before {action}"))
        if proof.ok:
            return
        before_taint = step == "taint"
        if reading is not None and reading.state == "on" and identity is not None and identity.ok:
            reason = f"power reads ON right before {action} ({proof.detail}): the machine runs again"
            if before_taint:
                raise NodeReturnedError(f"{run.o.node}: {reason}; the run stopped before the taint, nothing was changed")
            run.interrupt(step, reason)
        if before_taint:
            raise MissingProofError(["power-off"], [f"power-off right before the taint: {proof.detail}"])
        raise MissingProofError(
            ["power-off"],
            [
                f"power-off right before {action}: {proof.detail}",
                f"the taint stays and incident {run.record['id']} continues at {step} once power reads Off again; rerun",
            ],
            unchanged=False,
        )

    def require_fresh(self, step: str, action: str) -> None:
        """Before a destructive action: an attestation still valid, and the power-off proof at most
        proof_max_age_seconds old (both on the monotonic clock), or read again."""
        self.require_attestation_valid(f"before {action}", step)
        if self.proven_at is not None and self.run.clock.monotonic() - self.proven_at <= self.run.o.proof_max_age_seconds:
            return
        self.require_off(step, f"before {action}")

    def require_attestation_valid(self, when: str, step: str | None = None) -> None:
        """A manual attestation proves Off only until it expires, counted on the monotonic clock from when this
        run read it; checked again before every destructive step."""
        run = self.run
        if self.attestation_expires_at is None or run.clock.monotonic() < self.attestation_expires_at:
            return
        expires = run.power.attestation.get("expires")
        if step is None:
            raise MissingProofError(["power-off"], [f"power-off {when}: the manual attestation expired ({expires})"])
        details = [
            f"power-off {when}: the manual attestation expired ({expires})",
            f"the taint stays and incident {run.record['id']} continues at {step} with a new attestation naming it; rerun",
        ]
        raise MissingProofError(["power-off"], details, unchanged=False)

    def require_attestation_unused(self) -> None:
        """One attestation proves one incident: an attestation that proved an earlier incident of this node
        (in its history or on the Node) is refused, even within its window."""
        run = self.run
        attestation = getattr(run.power, "attestation", None)
        if not isinstance(attestation, dict):
            return
        earlier = list(history.read(run.cluster, run.o.history_namespace, run.o.node))
        if run.record is not None:
            earlier.append(run.record)
        for old in earlier:
            if ((old.get("power") or {}).get("attestation")) == attestation:
                raise RefusedError(
                    "attestation-reused",
                    f"this manual attestation (by {attestation.get('operator')}, expires {attestation.get('expires')}) already "
                    f"proved incident {old.get('id')} of {run.o.node}; one attestation proves one incident. Write a new one. "
                    "Nothing was changed",
                )

    def require_off(self, step: str, when: str) -> None:
        """Power Off again (the same identity-checked, confirmed reading the proofs use), else stop: On is recorded
        as interrupted, anything else is a missing proof. After the taint only."""
        run = self.run
        reading, error, identity = self.read_confirmed(run.get_node(), run.record.get("id"))
        proof = prove_power_off(reading, error, identity)
        run.facts.setdefault("power_rechecks", []).append(dict(proof.as_dict(), when=when))
        if proof.ok:
            self.proven_at = run.clock.monotonic()
            return
        if reading is not None and reading.state == "on":
            run.interrupt(step, f"power reads ON {when} ({proof.detail}): the node may run")
        raise MissingProofError(
            ["power-off"],
            [
                f"power-off {when}: {proof.detail}",
                f"the taint stays and incident {run.record['id']} continues at {step} once power reads Off again; rerun",
            ],
            unchanged=False,
        )
