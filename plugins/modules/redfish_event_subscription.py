# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module redfish_event_subscription: one EventService subscription of a BMC (logic in module_utils/power/redfish_events.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: redfish_event_subscription
short_description: Create or delete a BMC's Redfish EventService subscription, idempotently
version_added: 0.1.0
description:
  - Makes a Redfish service (a BMC) hold exactly one event subscription (EventDestination) to O(destination)
    with O(context), or none.
  - Used to send power events to the rulebook C(nodeguard.failover.power-events) (see C(docs/power-events.md));
    the playbook C(nodeguard.failover.power_event_subscriptions) subscribes every BMC of an inventory.
  - B(Identity.) A subscription with the same O(destination) and O(context) is the same subscription. When its
    other settings (O(registry_prefixes), O(origin_resources), protocol C(Redfish), format C(Event)) differ it is
    re-created, since services do not let them change in place. Other subscriptions of the service are never touched.
  - B(Headers cannot be read back.) Redfish services return C(HttpHeaders) empty, so O(http_headers) is sent when
    the subscription is created and never compared. To rotate the token, set O(force=true) once.
  - B(Re-creating) creates the new subscription first and deletes the old one after, so events are never lost
    (one may arrive twice in between; the rulebook deduplicates). When the service refuses the new one,
    nothing is changed. A service that refuses a second subscription to the same destination needs
    O(state=absent) first.
  - To list a service's subscriptions, use M(nodeguard.failover.redfish_event_subscription_info).
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.redfish_service
attributes:
  check_mode:
    support: full
    description: Reads the subscriptions and reports what would be created and deleted; sends no change.
  diff_mode:
    support: full
    description: Before is every subscription with the same destination and context, after is what will be there.
      Header values are never shown.
options:
  state:
    description:
      - V(present) leaves exactly one up-to-date subscription with O(destination) and O(context) (deleting duplicates);
        V(absent) deletes every one.
    type: str
    choices: [present, absent]
    default: present
  destination:
    description:
      - Where the BMC posts its events, an C(https) URL (the rulebook's webhook, for example
        C(https://eda.example:5443/endpoint)). Plain http is refused (the headers would cross the network readable).
      - Put credentials in O(http_headers), never in the URL (it is shown in results).
    type: str
    required: true
  context:
    description:
      - The subscription's C(Context), at most 256 characters; the BMC copies it into events. With O(destination) it
        names the subscription (C(nodeguard:<node name>) by convention). The power-event rulebook does not use it to
        identify the BMC (the path and the token do, see O(token_key)).
    type: str
    required: true
  registry_prefixes:
    description:
      - Message registries whose events are sent. An empty list means every registry.
      - Unset, the registries of O(vendor) (C(ResourceEvent) when O(vendor) is unset too). Not together with O(vendor).
    type: list
    elements: str
  vendor:
    description:
      - The BMC's kind, for the registries its power messages come from (see C(docs/power-events.md)).
        V(dmtf) C(ResourceEvent), V(openbmc) C(OpenBMC), V(hpe) C(iLOResourceEvents) (iLO 6 and 7),
        V(dell) C(IDRAC) (iDRAC9).
    type: str
    choices: [dmtf, openbmc, hpe, dell]
  token_key:
    description:
      - The power-event rulebook's key (its C(NODEGUARD_BMC_TOKEN_KEY)). With O(token_node), the BMC gets the header
        C(X-Nodeguard-Token) with its own token, HMAC-SHA256 of the node name under this key, which the rulebook checks.
        The key itself is never sent. Like O(http_headers), sent only when the subscription is created.
    type: str
  token_node:
    description:
      - The Kubernetes node this BMC belongs to, for O(token_key).
    type: str
  origin_resources:
    description:
      - System paths (C(/redfish/v1/Systems/<id>)) whose events are sent. Unset or empty means every resource of the
        service.
    type: list
    elements: str
    default: []
  http_headers:
    description:
      - Headers the BMC sends with each event, for example the header C(Authorization) with value C(Bearer <token>) for the
        rulebook's webhook.
      - Write-only on every Redfish service. Sent only when the subscription is created; see O(force). Never logged,
        never in a result, diff or message.
    type: dict
    default: {}
  force:
    description:
      - Re-create the subscription even when it is up to date, to set new O(http_headers) (token rotation).
        Always reports a change.
    type: bool
    default: false
seealso:
  - module: nodeguard.failover.redfish_event_subscription_info
"""

EXAMPLES = r"""
- name: Send worker3's power events to the rulebook
  nodeguard.failover.redfish_event_subscription:
    address: "{{ hostvars['worker3'].bmc.address }}"
    username: "{{ hostvars['worker3'].bmc.username }}"
    password: "{{ hostvars['worker3'].bmc.password }}"
    ca_cert: /etc/nodeguard/bmc-ca.crt
    destination: https://eda.example:5443/endpoint
    context: nodeguard:worker3
    origin_resources:
      - /redfish/v1/Systems/1
    http_headers:
      Authorization: "Bearer {{ lookup('ansible.builtin.env', 'NODEGUARD_POWER_EVENT_TOKEN') }}"

- name: Rotate the token (re-creates the subscription)
  nodeguard.failover.redfish_event_subscription:
    address: https://bmc-worker3.example
    username: admin
    password: "{{ bmc_password }}"
    destination: https://eda.example:5443/endpoint
    context: nodeguard:worker3
    origin_resources: [/redfish/v1/Systems/1]
    http_headers:
      Authorization: "Bearer {{ new_token }}"
    force: true

- name: Send an iDRAC9's power events to the power-event rulebook, with its own token
  nodeguard.failover.redfish_event_subscription:
    address: https://idrac-worker4.example
    username: root
    password: "{{ bmc_password }}"
    destination: https://eda.example:5001/redfish-events/worker4
    context: nodeguard:worker4
    origin_resources: [/redfish/v1/Systems/System.Embedded.1]
    vendor: dell
    token_key: "{{ lookup('ansible.builtin.env', 'NODEGUARD_BMC_TOKEN_KEY') }}"
    token_node: worker4

- name: Stop sending worker3's events
  nodeguard.failover.redfish_event_subscription:
    address: https://bmc-worker3.example
    username: admin
    password: "{{ bmc_password }}"
    destination: https://eda.example:5443/endpoint
    context: nodeguard:worker3
    state: absent
"""

RETURN = r"""
subscription:
  description: The subscription after the run (predicted in check mode); null for O(state=absent). Never its headers.
  returned: always
  type: dict
  contains:
    path:
      description: Its resource path; empty in check mode when it is still to be created.
      type: str
    id:
      description: Its C(Id); empty in check mode when it is still to be created.
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
created:
  description: Whether a subscription was (or in check mode would be) created.
  returned: always
  type: bool
deleted:
  description: Paths of the subscriptions deleted (or that would be).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish_args import REDFISH_SERVICE_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish_events import (
    TOKEN_HEADER,
    EventSubscriptions,
    bmc_token,
    check_desired,
    desired_summary,
    header_secrets,
    plan,
    registries_for,
)

OPTIONS = {
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "destination": {"type": "str", "required": True},
    "context": {"type": "str", "required": True},
    "registry_prefixes": {"type": "list", "elements": "str"},
    "vendor": {"type": "str", "choices": ["dmtf", "openbmc", "hpe", "dell"]},
    "token_key": {"type": "str", "no_log": True},
    "token_node": {"type": "str", "no_log": False},  # a node name, not a secret
    "origin_resources": {"type": "list", "elements": "str", "default": []},
    "http_headers": {"type": "dict", "default": {}, "no_log": True},
    "force": {"type": "bool", "default": False},
}


UNREADABLE = "(write-only, not readable)"


def _headers_note(desired) -> str:
    """What the diff says about the headers to be set: their names, never their values."""
    if not desired.http_headers:
        return "none"
    return f"set: {', '.join(sorted(desired.http_headers))} (values not shown)"


def _diff(steps, desired, state: str) -> dict:
    before = [dict(s, http_headers=UNREADABLE) for s in steps.matching]
    if state == "absent":
        after = []
    elif steps.keep is not None:
        after = [dict(steps.keep, http_headers=UNREADABLE)]
    else:
        after = [dict(desired_summary(desired), http_headers=_headers_note(desired))]
    return {"before": {"subscriptions": before}, "after": {"subscriptions": after}}


def main():
    module = AnsibleModule(
        argument_spec=dict(REDFISH_SERVICE_ARGUMENT_SPEC, **OPTIONS),
        supports_check_mode=True,
        mutually_exclusive=[("registry_prefixes", "vendor")],
        required_together=[("token_key", "token_node")],
    )
    p = module.params
    try:
        headers = dict(p["http_headers"])
        if p["token_key"]:
            headers[TOKEN_HEADER] = bmc_token(p["token_key"], p["token_node"])
        registries = registries_for(p["vendor"], p["registry_prefixes"])
        desired = check_desired(p["destination"], p["context"], registries, p["origin_resources"], headers)
        service = EventSubscriptions(p, header_values=header_secrets(desired))
        if p["state"] == "present" and not service.service()["service_enabled"]:
            raise NodeguardError(f"the EventService of {service.address} is disabled (ServiceEnabled false): enable it on the BMC first")
        steps = plan(service.list(), desired, p["state"], p["force"])
        changed = steps.create or bool(steps.delete)
        result = steps.keep
        if p["state"] == "present" and steps.create:
            result = dict(desired_summary(desired), path="", id="")
        if changed and not module.check_mode:
            result = service.apply(steps, desired)
    except NodeguardError as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=changed, subscription=result, created=steps.create, deleted=steps.delete, diff=_diff(steps, desired, p["state"]))


if __name__ == "__main__":
    main()
