# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module redfish_event_subscription_info: list a BMC's EventService subscriptions (logic in module_utils/power/redfish_events.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: redfish_event_subscription_info
short_description: List a BMC's Redfish EventService and its subscriptions
version_added: 0.1.0
description:
  - Reads the EventService of one Redfish service (a BMC) and every subscription (EventDestination) it holds.
  - Subscription headers (C(HttpHeaders)) are write-only in Redfish and never returned, even by a service that
    shows them.
  - Changes nothing.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.redfish_service
attributes:
  check_mode:
    support: full
    description: Only reads.
  diff_mode:
    support: none
    description: Only reads.
options:
  context:
    description:
      - Return only the subscriptions with this C(Context) (for example C(nodeguard:worker3)).
    type: str
seealso:
  - module: nodeguard.failover.redfish_event_subscription
"""

EXAMPLES = r"""
- name: List worker3's BMC subscriptions
  nodeguard.failover.redfish_event_subscription_info:
    address: "{{ hostvars['worker3'].bmc.address }}"
    username: "{{ hostvars['worker3'].bmc.username }}"
    password: "{{ hostvars['worker3'].bmc.password }}"
    ca_cert: "{{ hostvars['worker3'].bmc.ca_cert }}"
  register: worker3_subscriptions
"""

RETURN = r"""
service:
  description: The EventService.
  returned: always
  type: dict
  contains:
    service_enabled:
      description: C(ServiceEnabled) (true when the service leaves it out).
      type: bool
    event_format_types:
      description: C(EventFormatTypes).
      type: list
      elements: str
    registry_prefixes:
      description: C(RegistryPrefixes) the service can send.
      type: list
      elements: str
subscriptions:
  description: Every subscription (or those with O(context)), sorted by path. Never their headers.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: Its resource path.
      type: str
    id:
      description: Its C(Id).
      type: str
    destination:
      description: C(Destination).
      type: str
    context:
      description: C(Context).
      type: str
    protocol:
      description: C(Protocol).
      type: str
    event_format_type:
      description: C(EventFormatType).
      type: str
    registry_prefixes:
      description: C(RegistryPrefixes), sorted.
      type: list
      elements: str
    origin_resources:
      description: The paths of C(OriginResources), sorted.
      type: list
      elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish_args import REDFISH_SERVICE_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish_events import EventSubscriptions

OPTIONS = {
    "context": {"type": "str"},
}


def main():
    module = AnsibleModule(argument_spec=dict(REDFISH_SERVICE_ARGUMENT_SPEC, **OPTIONS), supports_check_mode=True)
    p = module.params
    try:
        service = EventSubscriptions(p)
        about = service.service()
        subscriptions = [s for s in service.list() if p["context"] is None or s["context"] == p["context"]]
    except NodeguardError as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=False, service=about, subscriptions=subscriptions)


if __name__ == "__main__":
    main()
