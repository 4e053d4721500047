# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""After a rollback: are the restored components healthy again, and how long was node-failure detection down?

(module component_health_info, check=restored on the node and check=detection on the controller)

A rollback never fails for a component that stays unhealthy: the run fails anyway, and its message must say
what happened. So restored() waits for each component in turn (for at most the timeout each, on the node's
monotonic clock, health.wait_until_ok) and returns one line for the message. detection() words what the
controller saw: whether the controller-manager's leader lease was renewed after the restore, and how long
node-failure detection was down, from the first change until then.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.components import health

# The words the failure message uses; the lab tests grep them (tests/integration/lab/test_control_plane_*.py).
HEALTHY = "healthy again"
NOT_HEALTHY = "NOT healthy"
NOTHING = "nothing to wait for"


def restored(components: list, ask_with, timeout: float, interval: float, clock: health.Clock | None = None) -> dict:
    """Wait for each restored component, in the order given, until its health endpoint answers ok.

    components: dicts with name, health_url, ca_path ("" verifies no certificate) and path (the file restored
    for it, only returned). ask_with(ca_path) gives the function that asks an endpoint once.
    Returns {"components": [{name, path, healthy, answer}], "summary": "kube-apiserver healthy again, ..."}."""
    results = []
    for component in components:
        name, url = component["name"], component["health_url"].strip()
        try:
            answer = health.wait_until_ok(name, url, ask_with(component["ca_path"] or None), timeout, interval, clock)
            healthy, said = True, answer.body.strip()
        except health.ComponentHealthError as e:
            healthy, said = False, str(e)
        results.append({"name": name, "path": component["path"], "healthy": healthy, "answer": said})
    summary = ", ".join(f"{r['name']} {HEALTHY if r['healthy'] else NOT_HEALTHY}" for r in results)
    return {"components": results, "summary": summary or NOTHING}


def detection(started: float, now: float, lease: dict, timeout: float) -> dict:
    """What the controller saw after the restore, in words, and how long node-failure detection was down.

    lease is the registered result of failover_lease_renewal_info on kube-system/kube-controller-manager (a failed
    reading counts as not renewed). started and now are seconds of the same clock, the controller's: started is
    when the play made its first change, so the down time ends when the lease was renewed (the module ran just
    before this) or, without a renewal, now."""
    renewed = bool(lease.get("renewed"))
    down_seconds = round(now - started)
    if renewed:
        renew_time = (lease.get("lease") or {}).get("renew_time") or ""
        said, until = f"the controller-manager leader lease was renewed at {renew_time}", "until the lease was renewed"
    else:
        said = (
            f"the controller-manager leader lease was NOT renewed within {timeout} s: node-failure detection may still be down, check kube-controller-manager"
        )
        until = "until now"
    summary = f"{said}. Node-failure detection was down for about {down_seconds} s (from the first change {until})"
    return {"renewed": renewed, "down_seconds": down_seconds, "summary": summary}
