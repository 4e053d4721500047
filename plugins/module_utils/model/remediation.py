# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long node_outage.yml should see a node NotReady before it acts, for one profile.

The recommendation is the profile's unreachable toleration: by then Kubernetes itself has evicted
the node's pods, and the run only finishes what the eviction cannot (pods with RWO volumes stay
Terminating). It is never shorter than two grace periods, so a node that flaps back within one
more grace period is not failed over. tune-failover stores it with the applied profile
(model/applied.py) and node-outage takes it from there; a cluster never tuned gets STOCK_REMEDIATION, and so
do Kubernetes' own defaults wherever they are predicted (the same settings mean the same wait).
"""

from __future__ import annotations

import math

from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import Timings, kubernetes_defaults
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import Version

LEASE_MARGIN_SECONDS = 10
# What node-outage waits on a cluster nobody tuned (no applied profile): the one home of these numbers.
STOCK_REMEDIATION = {"not_ready_seconds": 60, "lease_margin_seconds": LEASE_MARGIN_SECONDS}
# The power-event path (a BMC said Off) holds the Lease against one renew interval, not its duration, so its
# margin only covers one renewal's API latency and the difference between the kubelet's clock (it writes
# renewTime) and the controller's. With NTP both are well under a second. The BMC's two Off readings with
# identity stay required; an explicit lease_margin_seconds still wins.
POWER_EVENT_LEASE_MARGIN_SECONDS = 3


def remediation_settings(timings: Timings, version: Version | None = None) -> dict:
    """node_outage_* values that match these timings. Kubernetes' own defaults of ``version`` get STOCK_REMEDIATION,
    what node-outage waits on a cluster never tuned: an untuned cluster and one tuned to its stock values wait alike."""
    if version is not None and timings == kubernetes_defaults(version):
        return dict(STOCK_REMEDIATION)
    two_graces = math.ceil(2 * timings.node_monitor_grace_period)
    return {
        "not_ready_seconds": int(max(timings.unreachable_toleration_seconds, two_graces)),
        "lease_margin_seconds": LEASE_MARGIN_SECONDS,
    }
