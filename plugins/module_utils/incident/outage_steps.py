# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node-outage's steps after the taint, the same for both trigger paths and on resume:
force-delete pods -> wait for volume detach (delete VolumeAttachments only when opted in) -> verify replacements.

Each step starts only while the node is still down and its power not On (OutageRun.ensure_still_down,
PowerChecks.read_once), and its edges are recorded on the Node, so a rerun continues at the step that did not end.
A destructive write needs a fresh power-off proof and one more power reading right before it (outage_power.py).
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError, NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import attachments as vas
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import pods as podrules
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import replacements
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import MissingProofError, StepTimeoutError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import parse_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.waiters import wait_until

# The steps that may delete (pods, VolumeAttachments): the history gets the record right after each of them.
DESTRUCTIVE_STEPS = ("delete-pods", "detach-volumes")


class AfterTaintSteps:
    """The steps after the taint of one OutageRun (``run``: its cluster, options, clock, lock, record and recorder)."""

    def __init__(self, run):
        self.run = run

    def run_all(self) -> None:
        """Each step not yet ended, in order. The Node record is written at every step edge (a rerun continues from
        it); its history copy once per destructive step, after it, and once at the end (Recorder.flush_history)."""
        run = self.run
        try:
            self._run_steps()
        finally:
            run.recorder.flush_history()  # whatever stopped the run, the history ends with the last record written

    def _run_steps(self) -> None:
        run = self.run
        steps = {
            "delete-pods": self.delete_pods,
            "detach-volumes": self.detach_volumes,
            "verify-replacements": self.verify_replacements,
        }
        for step in records.OUTAGE_STEPS:
            if records.step_done(run.record, step):
                continue
            run.ensure_still_down(step)
            self.ensure_power_not_on(step)
            run.recorder.step_started(run.record, step, archive=False)
            try:
                outcome = steps[step]()
            except (StepTimeoutError, MissingProofError) as e:
                run.record["steps"][step]["error"] = str(e)
                run.recorder.save(run.record)
                run.recorder.event("FailoverStepTimedOut", f"{step}: {e}", warning=True)
                raise
            except ClusterError as e:
                self._record_api_error(step, e)
                raise
            run.recorder.step_ended(run.record, step, outcome, archive=step in DESTRUCTIVE_STEPS)
        # Never "outage complete" while the node is back: one last look (Ready, Lease, bootID, power).
        run.ensure_still_down("outage-complete")
        self.ensure_power_not_on("outage-complete")
        run.record["phase"] = records.OUTAGE_COMPLETE
        run.recorder.save(run.record)
        run.recorder.event("FailoverOutageComplete", f"incident {run.record['id']}: outage steps complete")

    def _record_api_error(self, step: str, error: ClusterError) -> None:
        """An API answer stopped the step: the record names it, so node-recover's refusal and a person reading the
        Node see the cause. Best effort, as the API may be what failed; the run's own error is raised either way."""
        run = self.run
        run.record["steps"][step]["error"] = str(error)
        try:
            run.recorder.save(run.record)
        except NodeguardError as e:
            del run.record["steps"][step]["error"]  # not on the Node: the history copy must not claim it is
            run.recorder.errors.append(f"the error of step {step} was not recorded: {e}")
            return
        run.recorder.event("FailoverStepFailed", f"{step}: {error}", warning=True)

    def ensure_power_not_on(self, step: str) -> None:
        """Stop cleanly if the power source, its identity shown, reads On: the machine runs again. At every step
        edge; an unreadable source is not a return (the destructive steps need Off anyway)."""
        run = self.run
        reading, _error, identity = run.power_checks.read_once(run.get_node())
        if reading is not None and reading.state == "on" and identity is not None and identity.ok:
            run.interrupt(step, f"{reading.method} reads power ON ({reading.detail}): the machine runs again")

    def _tick(self, step: str):
        def tick(_elapsed):
            self.run.ensure_still_down(step)

        return tick

    def delete_pods(self) -> str:
        run = self.run
        run.power_checks.require_fresh("delete-pods", "force-deleting pods")
        found = podrules.classify(run.cluster.list_pods_on_node(run.o.node))
        if found["delete"]:
            run.power_checks.at_point_of_action("delete-pods", "force-deleting pods")
        deleted = []
        for pod in found["delete"]:
            run.lock.renew()  # confirmed when the step started; keep it alive through a long list
            if run.cluster.force_delete_pod(pod["namespace"], pod["name"], pod["uid"]):
                deleted.append(f"{pod['namespace']}/{pod['name']}")
        run.record["pods"]["force_deleted"] = deleted
        run.record["pods"]["tolerating"] = found["tolerating"] or run.record["pods"].get("tolerating", [])
        uids = {p["uid"] for p in found["delete"]}

        def gone():
            return not [p for p in run.cluster.list_pods_on_node(run.o.node) if p["metadata"]["uid"] in uids]

        ok = wait_until(gone, run.o.pod_delete_timeout, run.o.poll_interval, run.clock, self._tick("delete-pods"))
        if not ok:
            raise StepTimeoutError(f"pods force-deleted but still listed after {run.o.pod_delete_timeout}s (finalizers?): {', '.join(deleted)}")
        return f"force-deleted {len(deleted)} pod(s)"

    def detach_volumes(self) -> str:
        run = self.run
        tick = self._tick("detach-volumes")
        ok = wait_until(lambda: not run.attachments(), run.o.detach_timeout, run.o.poll_interval, run.clock, tick)
        if ok:
            return "no VolumeAttachment left"
        blockers = vas.blockers(run.attachments(), run.clock.now())
        run.record["volume_blockers"] = blockers
        if not run.o.delete_volume_attachments:
            raise StepTimeoutError(
                f"VolumeAttachments still name {run.o.node} after {run.o.detach_timeout}s: {vas.describe(blockers)}. "
                "Check the CSI driver; set delete_volume_attachments=true only if the node is certainly off"
            )
        run.lock.confirm()
        run.power_checks.require_fresh("detach-volumes", "deleting VolumeAttachments")
        run.power_checks.at_point_of_action("detach-volumes", "deleting VolumeAttachments")
        for blocker in blockers:
            run.cluster.delete_volume_attachment(blocker["name"])
        ok = wait_until(lambda: not run.attachments(), run.o.detach_timeout, run.o.poll_interval, run.clock, tick)
        if not ok:
            left = vas.blockers(run.attachments(), run.clock.now())
            raise StepTimeoutError(f"VolumeAttachments deleted but still present: {vas.describe(left)}")
        return f"deleted {len(blockers)} VolumeAttachment(s) (opted in)"

    def verify_replacements(self) -> str:
        run = self.run
        if not run.o.verify_replacements:
            return "skipped"
        moved = replacements.resolve_deployments(run.cluster, run.record["pods"].get("moved", []))
        # From the first NotReady, not from the taint: the taint-based eviction may have replaced pods before it.
        tainted = parse_time(run.record["steps"]["taint"]["end"])
        since = min(parse_time(run.record.get("first_not_ready")) or tainted, tainted)
        state = {}

        def all_replaced():
            state["result"] = replacements.match(moved, replacements.gather_candidates(run.cluster, moved), run.o.node, since)
            return not state["result"]["waiting"]

        ok = wait_until(all_replaced, run.o.replacement_timeout, run.o.poll_interval, run.clock, self._tick("verify-replacements"))
        run.record["replacements"] = state["result"]
        if not ok:
            waiting = ", ".join(f"{w['pod']} ({w['owner']})" for w in state["result"]["waiting"])
            raise StepTimeoutError(f"no Ready replacement after {run.o.replacement_timeout}s for: {waiting}")
        return f"{len(state['result']['replaced'])} replacement(s) Ready"
