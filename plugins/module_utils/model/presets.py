# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The named presets. Why each value was chosen is in docs/settings.md ("Presets")."""

from __future__ import annotations

from dataclasses import replace

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import Timings, kubernetes_defaults
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import Version

# STOCK is Kubernetes as shipped: applying it resets a tuned cluster (flags removed, gates back to stock).
STOCK = "kubernetes-default"
# What you get when you name neither a preset nor targets; never STOCK, so that calling the
# failover_profile role or filter with its defaults cannot reset a tuned cluster by accident.
DEFAULT_PRESET = "balanced"

# Only the values a preset changes; everything else keeps the version's default.
# Heartbeats travel on the Lease (one small write every 0.25 x nodeLeaseDurationSeconds);
# the full Node status is written only every nodeStatusReportFrequency (5m), set explicitly
# because an explicit nodeStatusUpdateFrequency would otherwise drag the report frequency with it.
_PRESET_CHANGES = {
    STOCK: {},
    "balanced": {
        "node_status_update_frequency": 10.0,
        "node_status_report_frequency": 300.0,
        "node_lease_duration_seconds": 12,  # renew every 3s
        "node_monitor_period": 2.0,
        "node_monitor_grace_period": 20.0,  # > 5 renewals (15s)
        "not_ready_toleration_seconds": 60,
        "unreachable_toleration_seconds": 60,
        "tcp_retries2": 8,  # 102.2s, still within RFC 1122's >= 100s
        "tcp_keepalive_time": 60,
        "tcp_keepalive_intvl": 10,
        "tcp_keepalive_probes": 6,
    },
    "fast": {
        "node_status_update_frequency": 10.0,
        "node_status_report_frequency": 300.0,
        "node_lease_duration_seconds": 3,  # renew every 0.75s
        "node_monitor_period": 1.0,
        "node_monitor_grace_period": 4.0,  # > 5 renewals (3.75s)
        "not_ready_toleration_seconds": 20,
        "unreachable_toleration_seconds": 20,
        "tcp_retries2": 7,  # 51.0s
        "tcp_keepalive_time": 30,
        "tcp_keepalive_intvl": 10,
        "tcp_keepalive_probes": 3,
    },
    "aggressive": {
        "node_status_update_frequency": 10.0,
        "node_status_report_frequency": 300.0,
        "node_lease_duration_seconds": 2,  # renew every 0.5s
        "node_monitor_period": 0.5,
        "node_monitor_grace_period": 3.0,  # > 5 renewals (2.5s)
        "not_ready_toleration_seconds": 10,
        "unreachable_toleration_seconds": 10,
        "tcp_retries2": 6,  # 25.4s
        "tcp_keepalive_time": 15,
        "tcp_keepalive_intvl": 5,
        "tcp_keepalive_probes": 3,
    },
}

PRESET_NAMES = tuple(_PRESET_CHANGES)


def preset_timings(name, version: Version) -> Timings:
    """The Timings of a named preset for this version."""
    if not isinstance(name, str) or name not in _PRESET_CHANGES:
        raise ProfileError("unknown-preset", f"unknown preset {name!r}; choose one of: {', '.join(PRESET_NAMES)}")
    return replace(kubernetes_defaults(version), **_PRESET_CHANGES[name])
