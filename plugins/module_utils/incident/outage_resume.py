# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node-outage's resume: a rerun continues the incident on the Node at the step that did not end.

It judges "back" by the incident's own trigger and Lease token (from the record, not this run's options), and
acts on proofs of its own before any step: the same Node object (UID), not back, power still Off.
"""

from __future__ import annotations

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
