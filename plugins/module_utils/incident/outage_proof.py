# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node-outage's proof phase, shared by both trigger paths: watch while waiting.

Each check reads the Node, its Lease (the watch, proofs.LeaseWatch) and its power (the Off pair) on one
monotonic schedule, so the proofs run in parallel with the waits. What a check proves depends on the trigger
(outage_triggers.py: the heartbeat path or the power-event path). Every reading goes on the incident's
timeline (``readings``); nothing is written to the cluster here.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import MissingProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import is_ready
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage_power import RenewingClock
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage_triggers import trigger_of
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import LeaseWatch, Proof
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import is_statement, off_confirm_seconds, read_once, read_with_identity

# Proof-phase readings kept on the incident record (a Node annotation): a long wait keeps its first and last ones.
MAX_READINGS_KEPT = 60


class ProofWatch:
    """The proof phase of one OutageRun (``run``: its cluster, power, options, clock, lock and facts)."""

    def __init__(self, run):
        self.run = run
        self.lease_watch = LeaseWatch(run.clock, run.o.lease_margin_seconds)  # the Lease's silence, watched here (both paths)
        self.first_off_at = None  # monotonic time of the first Off reading (identity shown) of the pair, both paths
        self.lease_silent_at = None  # monotonic time at which the Lease's silence can be proven (None: unknown or never)
        self.not_ready_at = None  # heartbeat path: monotonic time at which NotReady will have lasted not_ready_seconds
        self.checked_at = None  # monotonic time at which the last check began
        self.watch_pending = False  # the last proof attempt missed only what waiting for the Lease watch gives
        self.readings = []  # what the proof phase read, and when: the incident timeline's proof rows (note)
        self.noted = set()  # the once-only readings already noted (the Lease watch's end, NotReady long enough)
        self.seen_down = False  # a check of this run saw the node NotReady: only then is a Ready node "back"

    def prove_in_time(self, node: dict) -> dict:
        """Watch while waiting: prove, re-checking for up to proof_timeout seconds while a proof is only not *yet* true
        (an alert fired at the first NotReady). Each check reads the Node (NotReady), its Lease (the watch) and its
        power (the Off pair, off_pair_reading) on one monotonic schedule (_until_next_check), so the proofs run in
        parallel with the waits. A node that is Ready again is refused at once. When only the Lease
        watch is missing, the run waits for it even past proof_timeout (at most one renew interval plus the margin,
        LONGEST_LEASE_WATCH_SECONDS at most): silence is watched, it cannot be read off a timestamp. On the heartbeat
        path the watch runs during the NotReady wait, so it costs nothing when the run starts at NotReady."""
        run = self.run
        started = run.clock.monotonic()
        deadline = started + (0 if run.check_mode else run.o.proof_timeout)
        waiting = RenewingClock(run.clock, run.lock)
        while True:
            try:
                self.checked_at = run.clock.monotonic()
                self.seen_down = self.seen_down or not is_ready(node)
                self.check(node)
                return node
            except MissingProofError as error:
                back = run.back(node, run.cluster.get_node_lease(run.o.node))
                if back:
                    error.lead(self._up(back))
                    raise
                left = deadline - run.clock.monotonic()
                if left <= 0 and not self.watch_pending:
                    if run.o.proof_timeout > 0:
                        error.add_detail(f"re-checked for {run.clock.monotonic() - started:.0f}s (proof_timeout {run.o.proof_timeout}s)")
                    raise
                waiting.sleep(self._until_next_check() if left <= 0 else min(self._until_next_check(), left))
            node = run.get_node()

    def _up(self, back: str) -> str:
        """Why the run does not wait, said first: a node this run never saw NotReady did not come back, it is up."""
        if back == "became Ready" and not self.seen_down:
            return f"{self.run.o.node} is Ready (this run never saw it NotReady): not waiting for it to go down"
        return f"{self.run.o.node} {back}; not waiting for it to go down again"

    def check(self, node: dict) -> list:
        """Evaluate all the proofs once, as this run's trigger defines them (outage_triggers.py). Raises MissingProofError."""
        return trigger_of(self.run).prove(self, node)

    def _until_next_check(self) -> float:
        """The poll interval, or less when a missing proof is known to hold sooner: the Lease watch ends, and NotReady
        has lasted not_ready_seconds, at times known in advance; every second counts there. A moment that passed while
        the last check ran (after it began) was not seen by it: the next check is at once."""
        now = self.run.clock.monotonic()
        moments = [at for at in (self.lease_silent_at, self.not_ready_at) if at is not None]
        if any(self.checked_at is not None and self.checked_at < at <= now for at in moments):
            return 0
        due = [at - now + 0.1 for at in moments if at > now]
        return min([self.run.o.poll_interval, *due])

    def watch_can_complete(self, lease_proof: Proof) -> bool:
        """True when the Lease proof failed only for want of watching time: no change seen, a watch this run can wait for."""
        return not lease_proof.ok and self.lease_silent_at is not None

    def off_pair_reading(self, node: dict, others_hold: bool) -> tuple:
        """(PowerReading, PowerError, IdentityVerdict) of the power reading taken at this check of the wait (both
        paths): the two Off readings overlap the wait for the other proofs (NotReady, the Lease watch) instead of
        following it. The first Off reading (identity shown) is remembered; once the other proofs hold, a reading
        at least off_confirm_seconds after it confirms Off, and it is the one taken now, so the last reading is
        fresh (the run sleeps only for what is left of that interval). A reading that is not Off with identity
        shown starts the pair again. A manual attestation is read once."""
        run = self.run
        waiting = RenewingClock(run.clock, run.lock)
        try:
            while True:
                reading, identity = read_with_identity(run.power, node)
                self._note_power_reading(reading, identity)
                if reading.state != "off" or not identity.ok:
                    if self.first_off_at is not None and identity.ok:
                        apart = run.clock.monotonic() - self.first_off_at
                        reading = reading._replace(detail=f"read OFF, then {reading.state.upper()} {apart:.0f}s later (rebooting?): {reading.detail}")
                    self.first_off_at = None
                    return reading, None, identity
                if self.first_off_at is None:
                    self.first_off_at = run.clock.monotonic()
                apart = run.clock.monotonic() - self.first_off_at
                if is_statement(run.power):
                    return read_once(reading), None, identity
                if not others_hold:
                    return reading._replace(detail=f"OFF for {apart:.0f}s so far (confirmed once the other proofs hold): {reading.detail}"), None, identity
                if apart >= off_confirm_seconds(run.power):
                    return reading._replace(detail=f"OFF in two readings {apart:.0f}s apart: {reading.detail}"), None, identity
                waiting.sleep(off_confirm_seconds(run.power) - apart)
        except PowerError as e:
            self.first_off_at = None
            self.note("power", f"unreadable: {e}")
            return None, e, None

    def report(self, proofs: list, reading, error, identity) -> None:
        """The proofs and the power reading of this check, as the module returns them (facts)."""
        facts = self.run.facts
        facts["proofs"] = [p.as_dict() for p in proofs]
        facts["power"] = reading.as_dict() if reading is not None else {"state": "unreadable", "detail": str(error)}
        if identity is not None:
            facts["power"]["identity"] = identity.as_dict()

    def _note_power_reading(self, reading, identity) -> None:
        shown = "identity shown" if identity.ok else "identity NOT shown"
        self.note("power", f"{reading.state.upper()} ({reading.method}, {shown})")

    def note_held(self, proofs: list) -> None:
        """On the timeline: the moment each of these proofs first held (NotReady long enough, the Lease silent)."""
        for proof in proofs:
            if proof.ok and proof.name not in self.noted:
                self.noted.add(proof.name)
                self.note(proof.name, f"holds: {proof.detail}")

    def note(self, what: str, result: str) -> None:
        """One reading of the proof phase, on the incident's timeline (timeline.py): what was read, when (wall clock,
        for the record only) and what it showed. A long wait keeps its first and its last readings."""
        self.readings.append({"time": format_micro_time(self.run.clock.now()), "reading": what, "result": result})
        if len(self.readings) > MAX_READINGS_KEPT:  # drop the oldest power reading past the first few
            dropped = next((i for i, r in enumerate(self.readings) if i >= MAX_READINGS_KEPT // 4 and r["reading"] == "power"), None)
            if dropped is not None:
                del self.readings[dropped]
