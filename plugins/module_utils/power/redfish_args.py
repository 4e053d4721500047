# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The connection options of modules that talk to one Redfish service (not to a node's power).

Documented by the doc fragment nodeguard.failover.redfish_service; keep the two in step.
The names are the ones of the ``power`` option (and of the inventory's ``bmc`` host variable), so a
playbook wires ``address: "{{ bmc.address }}"`` and so on; ``base_uri`` and ``ca_path`` are aliases.
"""

from __future__ import annotations

REDFISH_SERVICE_ARGUMENT_SPEC = {
    "address": {"type": "str", "required": True, "aliases": ["base_uri"]},
    "username": {"type": "str"},
    "password": {"type": "str", "no_log": True},
    "validate_certs": {"type": "bool", "default": True},
    "ca_cert": {"type": "path", "aliases": ["ca_path"]},
    "allow_insecure_http": {"type": "bool", "default": False},
    "timeout": {"type": "int", "default": 10},
}
