# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two heartbeat paths and what they cost the apiserver and etcd.

The node lifecycle controller refreshes a node's probe time whenever it sees either a newer
Lease renewTime or a new Ready-condition heartbeat in the Node status, so the node's effective
heartbeat interval is the shorter of the two. In steady state the kubelet writes:
  * its Lease every 0.25 x nodeLeaseDurationSeconds (a small object, watched by few clients);
  * its full Node status every nodeStatusReportFrequency (at nodeStatusUpdateFrequency only when
    the status changed): a large object, sent to every client that watches Nodes.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import Timings

LEASE_RENEW_FRACTION = 0.25  # pkg/kubelet nodeLeaseRenewIntervalFraction

# Documented assumptions (docs/settings.md "Load"): bytes etcd stores and watchers receive per write.
# A Node object with 50 cached images in status.images and managedFields is typically 10-15 KB;
# a Lease with managedFields is about 0.5-0.7 KB. Replace them with your own measurements.
NODE_STATUS_WRITE_BYTES = 12000
LEASE_WRITE_BYTES = 600


def lease_renew_interval(timings: Timings) -> float:
    return timings.node_lease_duration_seconds * LEASE_RENEW_FRACTION


def status_write_interval(timings: Timings) -> float:
    """Seconds between full Node status writes when nothing changes."""
    return timings.node_status_report_frequency


def heartbeat_interval(timings: Timings) -> float:
    """The longest silence the controller sees from a healthy kubelet (the shorter of both paths)."""
    return min(lease_renew_interval(timings), status_write_interval(timings))


def heartbeat_path(timings: Timings) -> str:
    return "lease" if lease_renew_interval(timings) <= status_write_interval(timings) else "node-status"


def heartbeat_load(timings: Timings, node_count: int, node_bytes: int = NODE_STATUS_WRITE_BYTES,
                   lease_bytes: int = LEASE_WRITE_BYTES) -> dict:
    """Heartbeat writes per second and bytes per second for the whole cluster, per path and in total."""
    status_writes = node_count / status_write_interval(timings)
    lease_writes = node_count / lease_renew_interval(timings)
    status_bytes = status_writes * node_bytes
    lease_bytes_per_second = lease_writes * lease_bytes
    return {
        "node_count": node_count,
        "heartbeat_path": heartbeat_path(timings),
        "heartbeat_interval_seconds": round(heartbeat_interval(timings), 3),
        "node_status_writes_per_second": round(status_writes, 3),
        "lease_writes_per_second": round(lease_writes, 3),
        "writes_per_second": round(status_writes + lease_writes, 3),
        "node_status_bytes_per_second": round(status_bytes),
        "lease_bytes_per_second": round(lease_bytes_per_second),
        "bytes_per_second": round(status_bytes + lease_bytes_per_second),
        "assumptions": {
            "node_status_write_bytes": node_bytes,
            "lease_write_bytes": lease_bytes,
            "status_changes": "none (steady state); every status change adds one Node status write",
        },
    }
