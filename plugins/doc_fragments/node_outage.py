# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of node_outage, except the cluster connection and the power option (their own fragments).

The matching argument spec is OUTAGE_ARGUMENT_SPEC in plugins/module_utils/incident/args.py, the one declaration of these
options; the node_outage role's options are rendered from the two (scripts/render-role-options.py).
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  node:
    description: Name of the Node object.
    type: str
    required: true
  job_id:
    description:
      - A label for this run (an AWX job, an alert), recorded in the incident record, its Events and the lock Lease.
        Defaults to C(user@host) of the controller.
      - It is not the lock's identity. Every run holds the node's lock Lease under an identity of its own (this label,
        the host, the process id and a random token), so a rerun never takes over a live lock because it carries
        the same O(job_id). After C(kill -9) of ansible-playbook the module may still run (ansible-core detaches it);
        a rerun meets its lock and waits or is refused, naming that run. See docs/runbooks/node-outage.md.
    type: str
  not_ready_seconds:
    description:
      - How long the node must have been NotReady or Unknown.
      - Unset, it is the C(remediation.not_ready_seconds) of the profile tune-failover last applied (ConfigMap
        C(nodeguard-system/nodeguard-applied-profile)), or 60 on a cluster never tuned. RV(timing) says which.
    type: int
  lease_margin_seconds:
    description:
      - Seconds beyond the Lease's own duration before it counts as stale.
      - Unset, it comes from the applied profile like O(not_ready_seconds), else 10.
      - On the power-event path it is the margin beyond one renew interval instead, and unset it is 3 (it covers one
        renewal's API latency and the clock difference between kubelet and controller).
    type: int
  power_event_time:
    description:
      - The time of the power event that started this run, RFC 3339 with a zone, like V(2026-11-23T08:00:00Z). It selects
        the power-event path, see the description. Unset, the heartbeat path (NotReady and a stale Lease).
      - The event only starts the run; nothing in it is proof. Refused when malformed, more than 30 s ahead of its
        arrival (O(power_event_received)), or older than O(power_event_max_age_seconds) when it arrived. The record,
        history and Events say C(trigger) C(power-event) with this time.
    type: str
  power_event_received:
    description:
      - When the rulebook received the power event, RFC 3339 with a zone, on the rulebook's own clock (the rulebooks
        pass ansible-rulebook's C(meta.received_at)). Used only with O(power_event_time).
      - The event's age is measured at this arrival, so a run that waited in the rulebook's queue behind other
        nodes' runs is not refused as stale, and the run never compares the BMC's time with its own clock.
      - Unset (a run started by hand), the run's own start is the arrival.
    type: str
  power_event_max_age_seconds:
    description: Oldest power event (by O(power_event_time), when it arrived) that may start the power-event path.
    type: int
    default: 300
  proof_timeout:
    description:
      - Seconds to keep re-checking the proofs, every O(poll_interval), while one does not hold yet
        (NotReady for too short a time, Lease not stale yet, power not Off yet), holding the node's lock.
        For automation started at the first NotReady. V(0) refuses at once.
      - On the power-event path the run always watches the Lease for one renew interval plus the margin, whatever
        this value (and so does check mode); this value adds time for the other proofs.
      - A node that is Ready in the API is refused at once, without waiting (on the power-event path, a node that turns
        Ready again or renews its Lease). Otherwise check mode never waits.
    type: int
    default: 0
  max_unhealthy:
    description:
      - Storm protection. Refuse when more nodes are NotReady than this count (V(2)) or share (V(40%), rounded down)
        of all nodes, the target included.
    type: str
    default: "40%"
  allow_control_plane:
    description: Allow a control-plane node. Even then, refused when the other control-plane nodes lack etcd quorum.
    type: bool
    default: false
  out_of_service_gate_enabled:
    description:
      - Confirm that kube-controller-manager runs with the C(NodeOutOfServiceVolumeDetach) feature gate.
        Needed on Kubernetes 1.24 and 1.25 only.
    type: bool
    default: false
  fence:
    description:
      - Power the node off out of band before the power proof (action off only, never reboot).
      - Not used on the power-event path (the event says Off; a reading of On refuses).
    type: bool
    default: false
  fence_retries:
    description: Tries to send power off.
    type: int
    default: 5
  fence_backoff_seconds:
    description: Wait after the first failed try; doubles after each.
    type: int
    default: 5
  fence_confirm_timeout:
    description: Seconds to re-read the power state until it reads Off after power off was accepted.
    type: int
    default: 120
  lock_namespace:
    description: Namespace of the lock Leases (C(deploy/rbac/) creates C(nodeguard-system)).
    type: str
    default: nodeguard-system
  history_namespace:
    description:
      - Namespace of the durable incident history, the ConfigMaps C(nodeguard-history-<node>) (C(deploy/rbac/) creates
        C(nodeguard-history)). Only the history lives there, so the remediator's right to update ConfigMaps covers
        nothing else (not the applied profile its proofs read).
    type: str
    default: nodeguard-history
  lock_ttl_seconds:
    description:
      - Lease duration of the node's lock. The run renews it at least every third of this while it waits, and with a
        conditional write right before the taint, each force-delete step, each VolumeAttachment deletion and each
        record write, so a run that lost its lock stops before it acts.
      - Must exceed the longest single call that cannot renew (a fence agent or BMC request, 60 s at most by default).
    type: int
    default: 120
  lock_wait_seconds:
    description:
      - When another run holds the node's lock, watch it for up to this many seconds. A holder that keeps renewing keeps
        the node. The lock is taken over only once its Lease has not changed for its own duration as measured by this
        controller's clock (never by comparing timestamps with another clock).
      - V(0) refuses at once, naming the holder (job, host, pid, run, last renewal). To take over the lock of a run that
        crashed, rerun with at least the holder's O(lock_ttl_seconds) plus a few seconds.
    type: int
    default: 0
  event_namespace:
    description: Namespace for Events about the Node (Node events live in V(default)).
    type: str
    default: default
  pod_delete_timeout:
    description: Seconds to wait for force-deleted pods to disappear.
    type: int
    default: 60
  detach_timeout:
    description: Seconds to wait until no VolumeAttachment names the node.
    type: int
    default: 360
  delete_volume_attachments:
    description:
      - After O(detach_timeout), delete the VolumeAttachments that remain. Only safe when the node is certainly off.
    type: bool
    default: false
  verify_replacements:
    description: Wait for Ready replacements of StatefulSet and Deployment pods.
    type: bool
    default: true
  replacement_timeout:
    description: Seconds to wait for the replacements.
    type: int
    default: 600
  poll_interval:
    description: Seconds between polls while waiting.
    type: int
    default: 2
  proof_max_age_seconds:
    description:
      - Oldest power-off proof a destructive step (force-deleting pods, deleting VolumeAttachments) may act on.
        An older one is read again first; power no longer Off stops the run. A resumed run always reads it again.
    type: int
    default: 60
"""
