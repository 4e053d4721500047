# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The connection to one Redfish service, shared by redfish_event_subscription and its _info module.

The matching argument spec is REDFISH_SERVICE_ARGUMENT_SPEC in plugins/module_utils/power/redfish_args.py.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  address:
    description:
      - URL of the Redfish service (the BMC), for example C(https://bmc-worker3.example:443).
      - The same value as O(nodeguard.failover.node_power#module:power.address), so the inventory's C(bmc) host
        variable can be wired key by key.
      - Credentials go only to this origin (scheme, host, port). A link from the service to another origin is
        refused, and redirects are not followed. Must not contain user information (C(user:password@)).
    type: str
    required: true
    aliases: [base_uri]
  username:
    description:
      - BMC user name (HTTP basic authentication).
    type: str
  password:
    description:
      - BMC password. Never logged, never in a result or an error message.
    type: str
  validate_certs:
    description:
      - Verify the service's TLS certificate.
    type: bool
    default: true
  ca_cert:
    description:
      - CA bundle for the service's certificate.
    type: path
    aliases: [ca_path]
  allow_insecure_http:
    description:
      - Allow a plain C(http://) O(address). The BMC password (and the subscription's headers) then cross the
        network readable by anyone on the path. For labs without TLS only.
    type: bool
    default: false
  timeout:
    description:
      - Seconds per request.
    type: int
    default: 10
"""
