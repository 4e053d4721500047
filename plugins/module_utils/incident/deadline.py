# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long a node-outage or node-recover run may take as a whole: its deadline (issue 38, item 5).

Every API call has timeouts of its own (k8s/services.call_timeouts). The deadline bounds the run: the sum of every
wait its options allow, plus a fixed allowance for the calls and power reads between the waits. After it, no API
call is sent but the lock's release (Cluster.set_deadline); the error names the call that was not sent, and the
cluster is left as the run's record on the Node says (a rerun continues from it). Pure: options in, seconds out.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import POLL_SECONDS

# The API calls and power readings between the waits (each bounded by its own timeout), and the proof's Lease
# watch, which may outlast proof_timeout by one renew interval of the node's Lease (outage_triggers.py).
ALLOWANCE_SECONDS = 300
# The longest single power request (a BMC or fence agent call), as the lock_ttl_seconds option documents it.
POWER_CALL_SECONDS = 60


def outage_seconds(o) -> float:
    """The deadline of a node-outage run with OutageOptions ``o``."""
    fence = 0.0
    if o.fence:
        tries = max(o.fence_retries, 1)
        fence = tries * POWER_CALL_SECONDS + o.fence_backoff_seconds * (2**tries) + o.fence_confirm_timeout
    cluster_lock = o.lock_ttl_seconds + 3 * POLL_SECONDS  # lock.ClusterLock's wait
    proof = o.not_ready_seconds + o.lease_margin_seconds + o.proof_timeout
    steps = o.pod_delete_timeout + 2 * o.detach_timeout + (o.replacement_timeout if o.verify_replacements else 0)
    return o.lock_wait_seconds + proof + fence + cluster_lock + steps + ALLOWANCE_SECONDS


def recover_seconds(o) -> float:
    """The deadline of a node-recover run with RecoverOptions ``o``: it waits only for the lock."""
    return o.lock_wait_seconds + ALLOWANCE_SECONDS
