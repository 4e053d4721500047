# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Predicted seconds from a node's power-off to its StatefulSet pod Ready elsewhere, per trigger of node-outage.

Three triggers start node-outage (docs/settings.md, "Remediated timelines"):

* ``node-watch``: a watch on Nodes starts the run at NotReady.
* ``alert``: the shipped Prometheus alert (``for: 60s``) reaches the rulebook through Alertmanager.
* ``power-event``: the BMC's power event starts the run at once; there is no NotReady wait.

Once started, node-outage proves on one schedule (OVERLAPPED, the default): its first check starts a watch on
the node's Lease (on the run's own monotonic clock), and takes the first BMC Off reading. The watch holds after
the Lease's renew interval (a quarter of its leaseDurationSeconds) plus lease_margin_seconds (3 s on the
power-event path); on the heartbeat paths NotReady must also have lasted not_ready_seconds, a wait the watch
overlaps. The second Off reading is taken once those hold, at least off_confirm_seconds after the first. So the
taint follows max(NotReady wait end, watch end, first reading + off_confirm_seconds), never their sum; a run
started late (the alert) still watches the Lease for its whole time from its own start.

IN_ORDER is the code of commit 75c96f0, which measured the benchmark page's rows; it is kept only so the page
can set those rows against a prediction of the code that ran them. There the Off pair followed the other proofs
on the heartbeat paths (5 s after the NotReady wait), and the Lease proofs read the kubelet's renewTime (the
power-event path's held a renew interval + margin after the last renewal, before the run's start).

Every window is {min, expected, max} like model/timeline.py's. The constants below that are not Kubernetes
or collection settings are modelled from the lab benchmark (docs/benchmarks/README.md, ``make bench`` of
commit 75c96f0, raw/timelines-*.json), each with its source: they are this lab's numbers, not a law.
"""

from __future__ import annotations

import math

from ansible_collections.nodeguard.failover.plugins.module_utils.model.detection import not_ready_window
from ansible_collections.nodeguard.failover.plugins.module_utils.model.heartbeat import lease_renew_interval
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediation import (
    POWER_EVENT_LEASE_MARGIN_SECONDS,
    STOCK_REMEDIATION,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import Timings

TRIGGERS = ("node-watch", "alert", "power-event")
OVERLAPPED = "overlapped"  # node-outage's proofs since 2e4d84b and 421be88
IN_ORDER = "in-order"  # node-outage's proofs at 75c96f0, which measured the benchmark page's rows
PROOF_ORDERS = (OVERLAPPED, IN_ORDER)
# Moments a benchmark run measures that remediated_timeline(observed=...) can take instead of its own windows.
OBSERVABLE = ("not_ready", "first_check")

# Collection settings (the defaults users get; tests/unit/model/test_model_remediated.py checks each against its home).
OFF_CONFIRM_SECONDS = 5.0  # power/identity.py DEFAULT_OFF_CONFIRM_SECONDS: two Off readings this far apart
POLL_SECONDS = 2.0  # roles/node_outage node_outage_poll_interval: node-outage re-checks its proofs this often
# incident/outage_proof.py ProofWatch._until_next_check: the check after a proof's known moment (NotReady long
# enough, the Lease watch over) comes this long after it, not at the next poll; at once when it passed during a check.
RECHECK_AFTER_DUE_SECONDS = 0.1
ALERT_FOR_SECONDS = 60.0  # extensions/prometheus/nodeguard-alerts.yml, NodeguardNodeDown `for: 60s`
# Alert path, the monitoring stack's settings (parameters of alert_timings; these are the defaults assumed):
SCRAPE_INTERVAL_SECONDS = 30.0  # kube-state-metrics scraped every 30 s (a common setting; Prometheus' own default is 1m)
EVALUATION_INTERVAL_SECONDS = 30.0  # rule evaluation every 30 s (same)
GROUP_WAIT_SECONDS = 30.0  # Alertmanager route group_wait of docs/eda.md

# Kubernetes-side: lastTransitionTime has whole seconds, so node-outage reads a NotReady age up to 1 s too long
# and its NotReady wait ends on average half a second early.
TRANSITION_TIME_ROUNDING = (0.0, 0.5, 1.0)

# Modelled from the lab (make bench 75c96f0; min, expected, max in seconds).
# A watch sees a Node change: the benchmark's own watch started node-outage 0.04 s after NotReady.
WATCH_LATENCY = (0.0, 0.04, 0.1)
# BMC power event to the rulebook: 0.1-0.58 s, median 0.2 s (raw/timelines-ngbpower.json, event_received).
EVENT_DELIVERY = (0.1, 0.2, 0.6)
# The rulebook matches the event and starts node-outage (its log line): 0.6-2.4 s after the event, median 1.1 s.
RULEBOOK_START = (0.6, 1.1, 2.4)
# ansible-playbook, the role and the module up to the first proof check (the incident record's `prove` step):
# 2.3-5.3 s after the run's start, median 3.2 s (the step's start has whole seconds, so +-0.5 s).
PLAYBOOK_TO_FIRST_CHECK = (2.3, 3.2, 5.3)
# From the check at which the last proof holds to the out-of-service taint (the reading's request, the lock,
# the incident record, the taint patch): 0.3-0.9 s, median 0.7 s on the power-event runs.
PROOF_TO_TAINT = (0.3, 0.7, 0.9)
# Taint to the StatefulSet's pod Ready on another worker (force-delete, detach, attach, start): 1.5-3.8 s over
# the remediated runs (medians 1.8 s power-event, 2.0 s fast, 2.5 s kubernetes-default). The lab's replacement
# runs on stand-in workers with an instant attacher: a real CSI driver's attach and mount add to it.
TAINT_TO_STATEFULSET_READY = (1.5, 2.0, 3.8)


def _add(*windows) -> tuple:
    return tuple(round(sum(w[i] for w in windows), 2) for i in range(3))


def _uniform_max(low: float, high: float, floor: float) -> tuple:
    """(min, expected, max) of max(U, floor) for U uniform on [low, high]."""
    if high <= floor:
        return (floor, floor, floor)
    if low >= floor:
        return (low, (low + high) / 2, high)
    below = (floor - low) / (high - low)
    expected = below * floor + (high * high - floor * floor) / (2 * (high - low))
    return (floor, expected, high)


def _later(*windows) -> tuple:
    """The latest of these windows, expected as the latest of their expectations (used where all are narrow)."""
    return tuple(max(w[i] for w in windows) for i in range(3))


def _as_window(window: tuple) -> dict:
    return {"min": round(window[0], 2), "expected": round(window[1], 2), "max": round(window[2], 2)}


def _poll_wait(poll_seconds: float) -> tuple:
    """How long after a proof becomes true the next check sees it: uniform over one poll interval."""
    return (0.0, poll_seconds / 2, poll_seconds)


def _alert_fires(not_ready: tuple, scrape: float, evaluation: float, hold: float) -> tuple:
    """NotReady to the alert firing: kube-state-metrics sees the condition (a watch), the next scrape stores it,
    the next evaluation makes the alert pending, and it fires at the first evaluation `for` later."""
    periods = math.ceil(hold / evaluation - 1e-9) * evaluation
    return _add(not_ready, WATCH_LATENCY, (0.0, scrape / 2, scrape), (0.0, evaluation / 2, evaluation), (periods, periods, periods))


def remediated_timeline(
    timings: Timings,
    trigger: str = "node-watch",
    remediation: dict | None = None,
    proof_order: str = OVERLAPPED,
    off_confirm_seconds: float = OFF_CONFIRM_SECONDS,
    poll_seconds: float = POLL_SECONDS,
    scrape_interval: float = SCRAPE_INTERVAL_SECONDS,
    evaluation_interval: float = EVALUATION_INTERVAL_SECONDS,
    group_wait: float = GROUP_WAIT_SECONDS,
    observed: dict | None = None,
) -> dict:
    """Power-off to the StatefulSet's pod Ready elsewhere, phase by phase, when ``trigger`` starts node-outage.

    ``remediation`` is node-outage's timing (not_ready_seconds, lease_margin_seconds); None is a cluster never
    tuned: STOCK_REMEDIATION (60 s), which node-outage uses without an applied profile. Pass the profile's
    ``remediation`` (model/remediation.py) for a cluster tuned with it. The power-event path always uses
    POWER_EVENT_LEASE_MARGIN_SECONDS, as node-outage does when no margin is given explicitly.
    ``proof_order``: OVERLAPPED (node-outage today) or IN_ORDER (commit 75c96f0, which measured the page's rows).
    ``observed``: moments measured in one run, seconds after power-off (OBSERVABLE: ``not_ready``, ``first_check``);
    each replaces its modelled window, so the rest is predicted from them. The start-up constants are a quiet
    machine's; on a busy one the benchmark sets each run against the model from its own NotReady and first check.

    Returns {trigger, proof_order, not_ready_seconds, phases: [{name, at}], binds, statefulset_replaced}: ``at``
    is the window of each phase's moment after power-off, ``binds`` the proof or wait the taint followed.
    """
    if trigger not in TRIGGERS:
        raise ValueError(f"unknown trigger {trigger!r}; choose one of: {', '.join(TRIGGERS)}")
    if proof_order not in PROOF_ORDERS:
        raise ValueError(f"unknown proof_order {proof_order!r}; choose one of: {', '.join(PROOF_ORDERS)}")
    remediation = remediation or STOCK_REMEDIATION
    wait = float(remediation["not_ready_seconds"])
    observed = _observed(observed)
    phases = []
    if trigger == "power-event":
        started = _power_event_start(phases)
        first = observed.get("first_check", _add(started, PLAYBOOK_TO_FIRST_CHECK))
        if proof_order == IN_ORDER:
            taint, binds = _power_event_in_order(timings, first, off_confirm_seconds, phases)
        else:
            taint, binds = _proofs_overlapped(timings, first, None, POWER_EVENT_LEASE_MARGIN_SECONDS, off_confirm_seconds, phases)
    else:
        not_ready, started = _heartbeat_start(timings, trigger, (scrape_interval, evaluation_interval, group_wait), phases, observed)
        first = observed.get("first_check", _add(started, PLAYBOOK_TO_FIRST_CHECK))
        wait_over = _add(not_ready, (wait, wait, wait), tuple(-r for r in TRANSITION_TIME_ROUNDING[::-1]))
        if proof_order == IN_ORDER:
            taint, binds = _heartbeat_in_order(first, wait_over, off_confirm_seconds, poll_seconds, phases)
        else:
            margin = float(remediation["lease_margin_seconds"])
            taint, binds = _proofs_overlapped(timings, first, wait_over, margin, off_confirm_seconds, phases)
    ready = _add(taint, TAINT_TO_STATEFULSET_READY)
    phases += [("out_of_service_taint", taint), ("statefulset_replaced", ready)]
    return {
        "trigger": trigger,
        "proof_order": proof_order,
        "not_ready_seconds": None if trigger == "power-event" else int(wait),
        "phases": [{"name": name, "at": _as_window(at)} for name, at in phases],
        "binds": binds,
        "statefulset_replaced": _as_window(ready),
    }


def _observed(observed: dict | None) -> dict:
    """{moment: (s, s, s)}: each measured moment as a window of no width."""
    unknown = sorted(set(observed or {}) - set(OBSERVABLE))
    if unknown:
        raise ValueError(f"cannot observe {', '.join(unknown)}; choose from: {', '.join(OBSERVABLE)}")
    return {name: (float(at),) * 3 for name, at in (observed or {}).items()}


def _heartbeat_start(timings, trigger, alerting, phases, observed) -> tuple:
    """node-watch and alert: (NotReady, node-outage's start), both after power-off."""
    window = not_ready_window(timings)
    not_ready = observed.get("not_ready", (window["min"], window["expected"], window["max"]))
    phases.append(("not_ready", not_ready))
    if trigger == "alert":
        fired = _alert_fires(not_ready, *alerting[:2], ALERT_FOR_SECONDS)
        phases.append(("alert_firing", fired))
        noticed = _add(fired, (alerting[2],) * 3, EVENT_DELIVERY)
        phases.append(("rulebook_notified", noticed))
    else:
        noticed = _add(not_ready, WATCH_LATENCY)
        phases.append(("watch_sees_not_ready", noticed))
    started = _add(noticed, RULEBOOK_START)
    phases.append(("node_outage_started", started))
    return not_ready, started


def _power_event_start(phases) -> tuple:
    """The BMC's power event reaches the rulebook, which starts node-outage."""
    started = _add(EVENT_DELIVERY, RULEBOOK_START)
    phases += [("event_in_rulebook", EVENT_DELIVERY), ("node_outage_started", started)]
    return started


def _proofs_overlapped(timings, first, wait_over, margin, confirm, phases) -> tuple:
    """node-outage today, both paths: the run's first check reads the Lease (its watch starts), the power (the
    first Off reading) and, on the heartbeat path, the Node. The watch holds after the renew interval + margin
    from then, NotReady once it has lasted not_ready_seconds; the run re-checks RECHECK_AFTER_DUE_SECONDS after
    the later of the two. The Off pair holds at the first reading + off_confirm_seconds, its second reading taken
    once the others hold. The taint follows the latest of the three (``wait_over`` None: no NotReady wait)."""
    watch_over = _add(first, (lease_renew_interval(timings) + margin,) * 3)
    confirmed = _add(first, (confirm,) * 3)
    phases += [("first_check", first), ("lease_watch_over", watch_over)]
    ends = {"the Lease watch": watch_over}
    if wait_over is not None:
        phases.append(("not_ready_wait_over", wait_over))
        ends["the NotReady wait"] = wait_over
    phases.append(("off_confirmed", confirmed))
    binds = max(ends, key=lambda name: ends[name][1])
    others_hold = _add(_later(*ends.values()), (RECHECK_AFTER_DUE_SECONDS,) * 3)
    if confirmed[1] > others_hold[1]:
        binds = "the Off confirmation"
    return _add(_later(others_hold, confirmed), PROOF_TO_TAINT), binds


def _heartbeat_in_order(first, wait_over, confirm, poll, phases) -> tuple:
    """Commit 75c96f0: the run polls until NotReady has lasted not_ready_seconds (the Lease proof, its renewTime
    older than its duration + margin, held long before on every preset), then reads the BMC: Off, and Off again
    off_confirm_seconds later."""
    phases += [("first_check", first), ("not_ready_wait_over", wait_over)]
    seen = _add(_later(wait_over, first), _poll_wait(poll))
    phases.append(("proofs_checked", seen))
    binds = "the run's start (after the NotReady wait was over)" if first[1] > wait_over[1] else "the NotReady wait"
    return _add(seen, (confirm,) * 3, PROOF_TO_TAINT), f"{binds}, then the Off confirmation"


def _power_event_in_order(timings, first, confirm, phases) -> tuple:
    """Commit 75c96f0: the Lease proof held once its renewTime was older than the renew interval + margin (the last
    renewal came 0..renew seconds before the power-off, uniform); the Off pair started at the first proof check.
    The run re-checked at the Lease's moment (0.1 s after it); the taint followed the later of the two."""
    confirmed = _add(first, (confirm,) * 3)
    phases += [("first_check", first), ("off_confirmed", confirmed)]
    renew = lease_renew_interval(timings)
    hold = renew + POWER_EVENT_LEASE_MARGIN_SECONDS + RECHECK_AFTER_DUE_SECONDS
    lease = (hold - renew, hold - renew / 2, hold)
    phases.append(("lease_silent", lease))
    _low, expected, _high = _uniform_max(lease[0], lease[2], confirmed[1])
    later = (max(lease[0], confirmed[0]), expected, max(lease[2], confirmed[2]))
    share = (confirmed[1] - lease[0]) / (lease[2] - lease[0])
    binds = f"lease silence in {max(0.0, min(1.0, 1 - share)) * 100:.0f} % of runs, the Off confirmation in the others"
    return _add(later, PROOF_TO_TAINT), binds
