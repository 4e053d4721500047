# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module failover_lease_renewal_info: wait until a Lease is renewed after a reading (logic in module_utils/k8s/leases.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: failover_lease_renewal_info
short_description: Wait until a Lease is renewed after a reading of this controller
version_added: 0.1.0
description:
  - Reads the Lease O(namespace)/O(name) until its holder writes a new C(renewTime), that is until it is renewed
    after a reading, which is the reading given in O(since_renew_time) or else this call's own first reading.
    A node's Lease renewed after its kubelet was restarted shows that the new kubelet runs and reaches the API;
    the controller-manager's leader Lease renewed shows that a controller-manager runs its controllers.
  - The C(renewTime) is written with the holder's clock (the node, another control-plane machine). It is compared
    only for equality with the earlier reading, never with this controller's time, and the wait is measured on
    this controller's monotonic clock, so a holder whose clock runs behind or ahead neither passes nor fails it.
  - With O(timeout=0) the Lease is read once, to take the reading to wait from (right after a restart, say).
  - Read-only.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.k8s_auth
attributes:
  check_mode:
    support: full
    description: The module never changes anything; it waits in check mode too.
  diff_mode:
    support: none
    description: Nothing to diff.
options:
  namespace:
    description: Namespace of the Lease, for example C(kube-node-lease) for a node's Lease.
    type: str
    required: true
  name:
    description: Name of the Lease, for example the node's name, or C(kube-controller-manager) in C(kube-system).
    type: str
    required: true
  since_renew_time:
    description:
      - The C(renewTime) of an earlier reading (RV(lease.renew_time) of an earlier call); the Lease counts as
        renewed once its C(renewTime) differs from it. An empty string means the Lease had no renewal then.
      - Without it, the reading to wait from is this call's first reading.
    type: str
  timeout:
    description:
      - Seconds to wait for the renewal. The module fails when the Lease was not renewed by then.
      - V(0) reads once and never fails for want of a renewal.
    type: int
    default: 60
  interval:
    description: Seconds between two readings.
    type: int
    default: 2
seealso:
  - module: nodeguard.failover.failover_node_info
"""

EXAMPLES = r"""
- name: Take a reading of the node's Lease right after the kubelet restarted
  nodeguard.failover.failover_lease_renewal_info:
    namespace: kube-node-lease
    name: worker3
    timeout: 0
  register: lease_after_restart
  delegate_to: localhost

- name: Wait until the new kubelet renews it
  nodeguard.failover.failover_lease_renewal_info:
    namespace: kube-node-lease
    name: worker3
    since_renew_time: "{{ lease_after_restart.lease.renew_time }}"
    timeout: 120
  delegate_to: localhost
"""

RETURN = r"""
renewed:
  description: Whether the Lease was renewed after the reading waited from.
  returned: always
  type: bool
  sample: true
lease:
  description: The last reading.
  returned: always
  type: dict
  sample: {"exists": true, "renew_time": "2026-11-26T06:40:12.004512Z", "holder": "worker3"}
  contains:
    exists:
      description: Whether the Lease exists.
      type: bool
      returned: always
    renew_time:
      description: Its C(spec.renewTime) as written by the holder, with the holder's clock; empty without one.
      type: str
      returned: always
    holder:
      description: Its C(spec.holderIdentity); empty without one.
      type: str
      returned: always
since:
  description: The reading waited from, in the shape of RV(lease).
  returned: always
  type: dict
  sample: {"exists": true, "renew_time": "2026-11-26T06:40:02.001220Z", "holder": "worker3"}
waited_seconds:
  description: Seconds waited, on this controller's monotonic clock.
  returned: always
  type: float
  sample: 7.9
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s import leases
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.args import K8S_AUTH_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.connect import cluster_for
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.names import shown, why_not_object_name

OPTIONS = {
    "namespace": {"type": "str", "required": True},
    "name": {"type": "str", "required": True},
    "since_renew_time": {"type": "str"},
    "timeout": {"type": "int", "default": 60},
    "interval": {"type": "int", "default": 2},
}


def wait(cluster, params: dict) -> dict:
    """The module's work without AnsibleModule; raises NodeguardError."""
    since = None
    if params["since_renew_time"] is not None:
        since = leases.LeaseReading(exists=bool(params["since_renew_time"]), renew_time=params["since_renew_time"])
    return leases.wait_for_renewal(lambda: cluster.get_lease(params["namespace"], params["name"]), since, params["timeout"], params["interval"])


def main():
    module = AnsibleModule(argument_spec=dict(K8S_AUTH_ARGUMENT_SPEC, **OPTIONS), supports_check_mode=True)
    p = module.params
    where = shown(f"{p['namespace']}/{p['name']}")
    empty = {"renewed": False, "lease": {}, "since": {}, "waited_seconds": 0.0}
    try:
        wrong = why_not_object_name(p["namespace"], "namespace") or why_not_object_name(p["name"], "Lease name")
        if not wrong and (p["timeout"] < 0 or p["interval"] < 1):
            wrong = f"timeout must be 0 or more and interval 1 or more, got {p['timeout']} and {p['interval']}"
        if wrong:
            raise ValueError(wrong)
        result = wait(cluster_for(module), p)
    except (NodeguardError, ValueError) as e:
        module.fail_json(msg=f"Lease {where}: {e}", **empty)
    if p["timeout"] > 0 and not result["renewed"]:
        last = result["lease"]
        seen = f"last renewTime {last['renew_time']} by {last['holder'] or 'no holder'}" if last["exists"] else "it does not exist"
        module.fail_json(msg=f"Lease {where} was not renewed within {p['timeout']} s after the reading waited from ({seen})", **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
