# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node-outage's taint: the out-of-service taint and the incident record in one conditional write.

The write is decided on one fresh read taken under the cluster lock (lock.ClusterLock, held until the taint is
written, so no other run decides the cluster-wide rules meanwhile): the Node list it re-checks storm, quorum
and control-plane status on, the target's resourceVersion (conditional write), its UID and Lease (not renewed
since the run began). Power is read once more right before it (outage_power.py). A record already on the Node is
replaced, never copied into the history (see _link_previous). A refusal leaves the cluster as it was.

The API may take the write and its answer be lost (a timeout, a dropped connection: no HTTP status). The Node is then
read back (services.patch_node_confirmed): with the taint and this run's record on it, the write counts as done and
the run goes on from it (history copy, Events, the steps after the taint); changed without it, the write was not
taken and is decided again; unchanged or unreadable, the run stops and says the taint may be there.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import NodeReturnedError, RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint, taints_with_out_of_service
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import (
    ConflictError,
    RunDeadlineError,
    WriteUnknownError,
    patch_node_confirmed,
)


class TaintWrite:
    """The taint write of one OutageRun (``run``: its cluster, options, clock, locks, power checks and facts)."""

    def __init__(self, run):
        self.run = run

    def write(self, rec: dict, adopt: bool, proven_uid=None) -> dict:
        """Taint and record in one write, conditional on the fresh read (_fresh_read) it was decided on. The cluster
        lock is held from that read to the write: no other run decides the cluster-wide rules meanwhile."""
        run = self.run
        run.cluster_lock.acquire()
        try:
            return self._write_decided(rec, adopt, proven_uid)
        finally:
            run.cluster_lock.release()
            if run.cluster_lock.release_note:
                run.facts["cluster_lock_note"] = run.cluster_lock.release_note

    def _write_decided(self, rec: dict, adopt: bool, proven_uid=None) -> dict:
        run = self.run
        for _attempt in range(3):
            node = self._fresh_read(proven_uid)
            self._link_previous(node, rec)
            records.set_identity(rec, node)
            rec["lease_renew_time"] = run.facts.get("lease_renew_time")
            now = run.clock.now()
            records.start_step(rec, "taint", now)
            records.end_step(rec, "taint", now, "adopted" if adopt else "tainted")
            rec["phase"] = "taint"
            patch = records.annotations_patch(rec)
            patch["metadata"]["resourceVersion"] = node["metadata"]["resourceVersion"]
            patch["spec"] = {"taints": taints_with_out_of_service(node)}
            run.power_checks.require_attestation_valid("before the taint")
            run.power_checks.at_point_of_action("taint", "the taint", node)
            run.lock.confirm()  # the taint only while this run provably holds the node's lock
            run.cluster_lock.confirm()  # and the cluster lock its decision was made under
            try:
                return patch_node_confirmed(run.cluster, run.o.node, patch, lambda n: self._landed(n, rec))
            except ConflictError:
                continue  # the node changed (status update?): re-read and re-check everything
            except WriteUnknownError as e:  # no answer, and the Node read back does not tell
                raise ClusterError(
                    f"{e}. The taint of incident {rec['id']} on {run.o.node} may or may not be there: rerun node-outage, "
                    "it continues from that incident's record if the taint was taken, and decides afresh if it was not"
                ) from e
            except RunDeadlineError:
                raise  # not sent: not the API refusing the taint
            except ClusterError as e:  # e.g. the admission policy (deploy/admission/) denied the taint: its message
                raise RefusedError("taint-refused", self._refused(e)) from e
        raise RefusedError("busy-node", f"{run.o.node} kept changing while tainting; nothing was changed, retry")

    @staticmethod
    def _landed(node: dict, rec: dict) -> bool:
        """The write of ``rec`` is on ``node``: the out-of-service taint and this incident's record."""
        return has_out_of_service_taint(node) and (records.read(node) or {}).get("id") == rec["id"]

    def _fresh_read(self, proven_uid) -> dict:
        """One Node list, re-checked right before the taint: the target from it is what the taint is written against."""
        run = self.run
        nodes = run.node_list.read()  # the power reading at the taint checks identity against this list too
        node = next((n for n in nodes if n["metadata"]["name"] == run.o.node), None)
        if node is None:
            raise RefusedError("unknown-node", f"node {run.o.node} was deleted before the taint; nothing was changed")
        if proven_uid and node["metadata"].get("uid") != proven_uid:
            raise RefusedError("node-replaced", f"node {run.o.node} was re-created (new UID) after the proofs; nothing was changed")
        lease = run.cluster.get_node_lease(run.o.node)
        back = run.back(node, lease)
        if back:
            raise NodeReturnedError(f"{run.o.node} {back} before the taint; nothing was changed")
        run.check_safety(node, nodes)
        run.facts["lease_renew_time"] = ((lease or {}).get("spec") or {}).get("renewTime")
        return node

    def _link_previous(self, node: dict, rec: dict) -> None:
        """The new record names the incident whose record it replaces on the Node (recovered, interrupted, or its
        taint removed by hand) when the history holds that incident: the remediator copied it there as it wrote it.
        The Node's record itself is never copied into the history: the node's own kubelet, or anyone who may patch
        nodes, can plant one there, and node-recover believes a record only as the history has it."""
        previous = records.read(node)
        if previous is None or previous["id"] == rec["id"]:
            return
        if history.holds(self.run.cluster, self.run.o.history_namespace, self.run.o.node, previous["id"]):
            rec["previous"] = previous["id"]

    def _refused(self, error) -> str:
        text = f"the API did not take the taint and its record (one write): {error}"
        if self.run.event_time is not None:
            text += (
                ". On the power-event path the node may still be Ready: the admission policy nodeguard-out-of-service-taint "
                "allows that only with powerEventPath true (docs/runbooks/node-outage.md)"
            )
        return text
