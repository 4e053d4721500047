# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What node-outage proves, per trigger, at one check of the proof watch (outage_proof.py).

- The heartbeat path (an alert or the node watch saw NotReady): NotReady for not_ready_seconds, the Lease silent
  as watched from here (lease-stale), power Off twice with identity; fences first when asked and allowed.
- The power-event path (``power_event_time`` set: a BMC said the node powered off): the Lease silent as watched
  from here and not renewed after the event, power Off twice with identity. Never fences; a Lease that changes
  while watched, or a BMC reading On, refuses. The node may still be Ready in the API (power_event.py).
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident import pods as podrules
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import power_event
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import is_ready, ready_since
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import Proof, prove_not_ready, prove_power_off, require_all
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_time


class HeartbeatTrigger:
    """NotReady long enough + the Lease silent + power Off. Fences when asked, once the API shows the node dead."""

    @staticmethod
    def prove(watch, node: dict) -> list:
        """Power counts only from a device shown to be this node's (power/identity.py), and Off only when it
        holds in two readings some seconds apart. A device not shown to be this node's is never fenced."""
        run = watch.run
        lease = run.cluster.get_node_lease(run.o.node)
        since = None if is_ready(node) else ready_since(node)
        watch.not_ready_at = None if since is None else run.clock.monotonic() + since + run.o.not_ready_seconds - run.clock.now()
        proofs = [
            prove_not_ready(node, run.clock.now(), run.o.not_ready_seconds),
            # Silence watched on our monotonic clock from this run's first read (the NotReady wait overlaps it).
            watch.lease_watch.proof(lease, name="lease-stale"),
        ]
        watch.lease_silent_at = watch.lease_watch.silent_at(lease)
        watch.note_held(proofs)
        api_proven = all(p.ok for p in proofs)
        # Power is read on every check of the wait, so the Off pair is complete when the other proofs hold.
        reading, error, identity = watch.off_pair_reading(node, others_hold=api_proven)
        # Only the watch is missing (NotReady long enough, power not against it): the run waits for it, whatever proof_timeout.
        power_may_hold = identity is not None and identity.ok and (reading.state == "off" or run.o.fence)
        watch.watch_pending = proofs[0].ok and power_may_hold and watch.watch_can_complete(proofs[1])
        if run.o.fence and api_proven and reading is not None and reading.state != "off" and identity.ok:
            if run.check_mode:
                run.facts["fence"] = f"power off via {run.power.method} (reads {reading.state.upper()} now), re-read until Off"
                proofs.append(Proof("power-off", True, f"would be established by fencing ({reading.detail}); identity: {identity.detail}"))
            else:
                reading, error, identity = run.power_checks.fence(node)
                proofs.append(prove_power_off(reading, error, identity))
        elif run.o.fence and reading is not None and identity is not None and not identity.ok:
            run.facts["fence"] = "not attempted: the power device is not shown to be this node's"
            proofs.append(prove_power_off(reading, error, identity))
        elif run.o.fence and not api_proven:
            run.facts["fence"] = "not attempted: the API does not show the node dead yet"
            proofs.append(prove_power_off(reading, error, identity))
        else:
            if run.o.fence:
                run.facts["fence"] = "not needed: power already reads OFF" if reading is not None else "not attempted: power unreadable"
            proofs.append(prove_power_off(reading, error, identity))
        watch.report(proofs, reading, error, identity)
        run.facts["pods"] = podrules.classify(run.cluster.list_pods_on_node(run.o.node))
        require_all(proofs)
        return proofs


class PowerEventTrigger:
    """The Lease silent (and not renewed after the event) + power Off. Never fences: the event says Off, a reading
    of On contradicts it and refuses, as does a Lease that changes while watched."""

    @staticmethod
    def prove(watch, node: dict) -> list:
        run = watch.run
        lease = run.cluster.get_node_lease(run.o.node)
        power_event.check_lease_not_renewed_since(lease, run.event_time, run.o.node)
        proofs = [watch.lease_watch.proof(lease)]
        if watch.lease_watch.changed_to is not None:
            raise RefusedError(
                "lease-renewed",
                f"the Lease of {run.o.node} changed while this run watched it ({proofs[0].detail}), although a power event "
                f"said Off at {format_time(run.event_time)}: its kubelet lives (its clock is not trusted either way); nothing was changed",
            )
        watch.lease_silent_at = watch.lease_watch.silent_at(lease)
        watch.watch_pending = watch.watch_can_complete(proofs[0])
        watch.note_held(proofs)
        reading, error, identity = watch.off_pair_reading(node, others_hold=proofs[0].ok)
        proofs.append(prove_power_off(reading, error, identity))
        watch.report(proofs, reading, error, identity)
        if reading is not None and reading.state == "on" and identity is not None and identity.ok:
            raise RefusedError(
                "power-on",
                f"{reading.method} of {run.o.node} reads power ON now ({reading.detail}), although a power event said Off at "
                f"{format_time(run.event_time)}: the node may run; nothing was changed",
            )
        if run.o.fence:
            run.facts["fence"] = "not used on the power-event path: the event says Off, the proof reads it"
        run.facts["pods"] = podrules.classify(run.cluster.list_pods_on_node(run.o.node))
        require_all(proofs)
        return proofs


def trigger_of(run):
    """The trigger this run proves for: a power event when it has an event time, else the heartbeat."""
    return PowerEventTrigger if run.event_time is not None else HeartbeatTrigger
