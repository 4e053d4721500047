# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``power`` option shared by every module that reads or sets node power.

Documented by the doc fragment nodeguard.failover.power; keep the two in step.
The keys match the lab inventory's ``bmc`` host variable, so ``power: "{{ hostvars[node].bmc }}"`` works.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.power.backends import POWER_TYPES

POWER_SUBOPTIONS = {
    "type": {"type": "str", "required": True, "choices": list(POWER_TYPES)},
    "address": {"type": "str"},
    "port": {"type": "int"},
    "system_id": {"type": "str"},
    "username": {"type": "str"},
    "password": {"type": "str", "no_log": True},
    "validate_certs": {"type": "bool", "default": True},
    "allow_insecure_http": {"type": "bool", "default": False},
    "ca_cert": {"type": "path"},
    "timeout": {"type": "int"},
    "interface": {"type": "str", "default": "lanplus", "choices": ["lanplus"]},
    "cipher": {"type": "int"},
    "agent": {"type": "str", "default": "fence_redfish"},
    "agent_options": {"type": "dict", "default": {}, "no_log": True},
    "command": {"type": "list", "elements": "str"},
    "off_reset_type": {"type": "str", "default": "ForceOff", "choices": ["ForceOff", "Off"]},
    "off_confirm_seconds": {"type": "int", "default": 5},
    "identity_unverifiable_reason": {"type": "str"},
    "attestation": {
        "type": "dict",
        "options": {
            "node": {"type": "str"},
            "state": {"type": "str", "choices": ["off", "on"]},
            "operator": {"type": "str"},
            "reason": {"type": "str"},
            "expires": {"type": "str"},
            "not_before": {"type": "str"},
            "incident": {"type": "str"},
        },
    },
}

POWER_ARGUMENT_SPEC = {
    "power": {"type": "dict", "required": True, "options": POWER_SUBOPTIONS},
    "allow_manual_attestation": {"type": "bool", "default": False},
}
