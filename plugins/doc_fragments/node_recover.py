# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of node_recover, except the cluster connection and the power option (their own fragments).

The matching argument spec is RECOVER_ARGUMENT_SPEC in plugins/module_utils/incident/args.py, the one declaration of these
options; the node_recover role's options are rendered from the two (scripts/render-role-options.py).
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
      - A label for this run, recorded in the incident record and the lock Lease. Defaults to C(user@host) of the controller.
      - Not the lock's identity. Every run holds the node's lock under an identity of its own (label, host, process id,
        random token), so no run takes over a live lock because it has the same O(job_id).
    type: str
  healthy_seconds:
    description:
      - How long this run must see the node Ready, with its Lease renewing, before the taint goes. Measured on the
        controller's own monotonic clock from its own reads, never from the kubelet's timestamps, so each run waits
        at least this long for a node that is Ready (at most this plus one Lease renew interval).
    type: int
    default: 60
  lock_namespace:
    description: Namespace of the lock Leases.
    type: str
    default: nodeguard-system
  history_namespace:
    description:
      - Namespace of the durable incident history, the ConfigMaps C(nodeguard-history-<node>) (C(deploy/rbac/) creates
        C(nodeguard-history)). Only the history lives there, so the remediator's right to update ConfigMaps covers
        nothing else.
    type: str
    default: nodeguard-history
  lock_ttl_seconds:
    description: Lease duration of the lock; the taint removal first confirms the lock with a conditional renew.
    type: int
    default: 120
  lock_wait_seconds:
    description:
      - When another run (a node-outage still under way, perhaps orphaned by a killed ansible-playbook) holds the node's lock,
        watch it for up to this many seconds. A holder that keeps renewing keeps the node; the lock is taken over only once
        its Lease has not changed for its own duration as measured by this controller's clock.
      - V(0) refuses at once, naming the holder.
    type: int
    default: 0
  event_namespace:
    description: Namespace for Events about the Node.
    type: str
    default: default
"""
