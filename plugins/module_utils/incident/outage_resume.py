# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node-outage's resume: a rerun continues the incident on the Node at the step that did not end.

It judges "back" by the incident's own trigger and Lease token (from the record, not this run's options), and
acts on proofs of its own before any step: the same Node object (UID), not back, power still Off. It continues only
from a record that agrees with its history copy: every record it saves is copied into the history, and a Node
annotation rewritten by the node's kubelet or a node patcher must never get there (history.compare).
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident import history
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError


class Resume:
    """Resuming one OutageRun (``run``: its record, recorder, facts and power checks)."""

    def __init__(self, run):
        self.run = run

    def restore_trigger(self) -> None:
        """The incident's own trigger decides how "back" is judged, not the option of this run."""
        run = self.run
        run.lease_baseline = run.record.get("lease_renew_time")
        run.event_time, run.ready_baseline = records.power_event_of(run.record)

    def start(self, node: dict, step: str) -> None:
        """Prove again before continuing at ``step``; the steps themselves are the same as a fresh run's."""
        run = self.run
        self._require_history_copy()
        run.recorder = run.new_recorder(node)
        run.facts["resumed_from"] = step
        recorded_uid = run.record.get("node_uid")
        if recorded_uid and node["metadata"].get("uid") != recorded_uid:
            raise RefusedError(
                "node-replaced",
                f"node {run.o.node} has UID {node['metadata'].get('uid')}, incident {run.record['id']} was about UID "
                f"{recorded_uid}: the Node object was re-created, the record does not apply to it. Nothing was changed",
            )
        run.ensure_still_down(step)
        run.power_checks.require_off(step, "on resume")

    def _require_history_copy(self) -> None:
        """Refuses unless the Node's record agrees with its copy in the history (history.compare)."""
        run = self.run
        rec = run.record
        copy, differs = history.compare(rec, history.read(run.cluster, run.o.history_namespace, run.o.node))
        if copy is not None and not differs:
            return
        where = f"ConfigMap {run.o.history_namespace}/{history.config_map_name(run.o.node)}"
        why = f"has no copy in its history ({where})" if copy is None else f"differs from its history copy ({where}) in {', '.join(differs)}"
        raise RefusedError(
            "record-untrusted",
            f"the record of incident {rec['id']} on node {run.o.node} {why}, which only the remediator writes: the Node annotation "
            "can be rewritten by the node's kubelet or anyone who may patch nodes, and a rerun would copy it into the history. "
            "Not resumed; the taint stays and nothing was changed. Compare the two (nodeguard.failover.failover_history_info) "
            "before acting (docs/runbooks/node-outage.md#durable-history)",
        )
