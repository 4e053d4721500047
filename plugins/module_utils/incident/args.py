# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of node_outage and node_recover: the one place they are declared (issue 24, item 1).

Documented by the doc fragments nodeguard.failover.node_outage and nodeguard.failover.node_recover
(tests/unit/modules/test_incident_option_specs.py keeps each in step with its spec). The Options classes
(incident/outage.py, incident/recover.py) take their defaults from here, and the roles' argument_specs and
defaults are rendered from here by scripts/render-role-options.py (scripts/render-docs.sh runs it).
The cluster connection (k8s/args.py) and the power option (power/args.py) have specs of their own.
"""

from __future__ import annotations

OUTAGE_ARGUMENT_SPEC = {
    "node": {"type": "str", "required": True},
    "job_id": {"type": "str"},
    "not_ready_seconds": {"type": "int"},
    "lease_margin_seconds": {"type": "int"},
    "proof_timeout": {"type": "int", "default": 0},
    "max_unhealthy": {"type": "str", "default": "40%"},
    "allow_control_plane": {"type": "bool", "default": False},
    "out_of_service_gate_enabled": {"type": "bool", "default": False},
    "fence": {"type": "bool", "default": False},
    "fence_retries": {"type": "int", "default": 5},
    "fence_backoff_seconds": {"type": "int", "default": 5},
    "fence_confirm_timeout": {"type": "int", "default": 120},
    "lock_namespace": {"type": "str", "default": "nodeguard-system"},
    "history_namespace": {"type": "str", "default": "nodeguard-history"},
    "lock_ttl_seconds": {"type": "int", "default": 120},
    "lock_wait_seconds": {"type": "int", "default": 0},
    "event_namespace": {"type": "str", "default": "default"},
    "pod_delete_timeout": {"type": "int", "default": 60},
    "detach_timeout": {"type": "int", "default": 360},
    "delete_volume_attachments": {"type": "bool", "default": False},
    "verify_replacements": {"type": "bool", "default": True},
    "replacement_timeout": {"type": "int", "default": 600},
    "poll_interval": {"type": "int", "default": 2},
    "proof_max_age_seconds": {"type": "int", "default": 60},
    "power_event_time": {"type": "str"},
    "power_event_received": {"type": "str"},
    "power_event_max_age_seconds": {"type": "int", "default": 300},
}

RECOVER_ARGUMENT_SPEC = {
    "node": {"type": "str", "required": True},
    "job_id": {"type": "str"},
    "healthy_seconds": {"type": "int", "default": 60},
    "lock_namespace": {"type": "str", "default": "nodeguard-system"},
    "history_namespace": {"type": "str", "default": "nodeguard-history"},
    "lock_ttl_seconds": {"type": "int", "default": 120},
    "lock_wait_seconds": {"type": "int", "default": 0},
    "event_namespace": {"type": "str", "default": "default"},
}


def outage_default(name: str):
    """The default of node_outage's option `name`, for OutageOptions."""
    return OUTAGE_ARGUMENT_SPEC[name]["default"]


def recover_default(name: str):
    """The default of node_recover's option `name`, for RecoverOptions."""
    return RECOVER_ARGUMENT_SPEC[name]["default"]
