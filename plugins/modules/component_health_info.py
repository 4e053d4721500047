# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module component_health_info: is a restarted component a stable process that answers ok? (logic in module_utils/components/health.py)"""

from __future__ import annotations

DOCUMENTATION = r"""
module: component_health_info
short_description: Check on the node that a restarted component is a stable process that answers ok
version_added: 0.1.0
description:
  - Runs on the node, right after a component (the kubelet, RKE2, k3s) was restarted by its systemd unit O(unit).
  - Reads the unit with C(systemctl show) (C(ActiveState), C(MainPID), C(NRestarts)), waits O(stable_seconds) and
    reads it again. A component that refuses its configuration exits at once and systemd starts it again and again, so a
    different C(MainPID), a grown C(NRestarts) or an inactive unit fails the check (C(... is not a stable process)).
  - Then asks O(health_url) until it answers HTTP 200 with the body C(ok), for at most O(timeout) seconds, and checks
    that the unit still runs the same process.
  - With O(pid) it only checks that the unit still runs that process, for a last check after the controller saw the
    node's Lease renewed and the node Ready.
  - Durations are measured on the node's monotonic clock. What the API server sees (a renewed Lease, a Ready node)
    is checked from the controller with M(nodeguard.failover.failover_lease_renewal_info) and
    M(kubernetes.core.k8s_info).
  - Read-only. It fails once, with what it saw.
author:
  - nodeguard maintainers (@nodeguard)
attributes:
  check_mode:
    support: full
    description: The module never changes anything; it checks in check mode too.
  diff_mode:
    support: none
    description: Nothing to diff.
options:
  name:
    description: The component's name in messages, for example V(kubelet).
    type: str
    required: true
  unit:
    description: The systemd unit that runs the component, for example V(kubelet), V(rke2-server) or V(k3s-agent).
    type: str
    required: true
  health_url:
    description:
      - The component's health endpoint, for example V(http://127.0.0.1:10248/healthz) for the kubelet.
      - Empty means the component serves none; then only the process is checked.
    type: str
    default: ""
  ca_path:
    description: CA bundle to verify an C(https) O(health_url) with. Without it the system's CAs are used.
    type: path
  stable_seconds:
    description: Seconds the same process must keep running after the restart.
    type: int
    default: 10
  timeout:
    description: Seconds to wait for an C(ok) from O(health_url).
    type: int
    default: 180
  pid:
    description:
      - The C(MainPID) an earlier call returned (RV(process.main_pid)). When given, the module only checks that the
        unit is active and still runs that process.
    type: int
seealso:
  - module: nodeguard.failover.failover_lease_renewal_info
"""

EXAMPLES = r"""
- name: Check that the restarted kubelet is a stable process that answers ok
  nodeguard.failover.component_health_info:
    name: kubelet
    unit: kubelet
    health_url: http://127.0.0.1:10248/healthz
    stable_seconds: 10
    timeout: 180
  register: kubelet_health

- name: Check at the end that it is still the same kubelet
  nodeguard.failover.component_health_info:
    name: kubelet
    unit: kubelet
    pid: "{{ kubelet_health.process.main_pid }}"
"""

RETURN = r"""
process:
  description: The unit at the last reading.
  returned: success
  type: dict
  sample: {"active_state": "active", "sub_state": "running", "main_pid": 4242, "restarts": 0}
  contains:
    active_state:
      description: systemd's C(ActiveState).
      type: str
      returned: success
    sub_state:
      description: systemd's C(SubState).
      type: str
      returned: success
    main_pid:
      description: systemd's C(MainPID); V(0) without a process.
      type: int
      returned: success
    restarts:
      description: systemd's C(NRestarts), how often systemd restarted the unit on its own.
      type: int
      returned: success
answer:
  description: The body the health endpoint answered; empty when it was not asked.
  returned: success
  type: str
  sample: ok
"""

from http.client import HTTPException

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.urls import open_url
from ansible_collections.nodeguard.failover.plugins.module_utils.components import health
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError

OPTIONS = {
    "name": {"type": "str", "required": True},
    "unit": {"type": "str", "required": True},
    "health_url": {"type": "str", "default": ""},
    "ca_path": {"type": "path"},
    "stable_seconds": {"type": "int", "default": 10},
    "timeout": {"type": "int", "default": 180},
    "pid": {"type": "int"},
}


def unit_reader(module: AnsibleModule, unit: str):
    """A function that reads the unit with systemctl show."""
    systemctl = module.get_bin_path("systemctl", required=True)

    def read() -> health.ProcessState:
        argv = [systemctl, "show", "-p", "ActiveState", "-p", "SubState", "-p", "MainPID", "-p", "NRestarts", "--", unit]
        rc, out, err = module.run_command(argv)
        if rc != 0:
            raise health.ComponentHealthError(f"systemctl show {unit} failed: {err.strip() or out.strip()}")
        return health.ProcessState.parse(out)

    return read


def endpoint_asker(ca_path: str | None):
    """A function that asks a health endpoint once (5 s per request)."""

    def ask(url: str) -> health.Answer:
        try:
            response = open_url(url, timeout=5, ca_path=ca_path, follow_redirects="none")
            return health.Answer(response.getcode(), response.read().decode("utf-8", "replace"))
        except HTTPError as e:
            # An error status (the kubelet answers 500 with the failed checks): its body is the component's words.
            return health.Answer(e.code, e.read().decode("utf-8", "replace"))
        except (OSError, HTTPException) as e:
            # A refused connection, a timeout, a TLS failure or a broken answer: all are "not ok" answers.
            return health.Answer(0, error=f"{type(e).__name__}: {e}")

    return ask


def run(params: dict, read_process, ask) -> dict:
    """The module's work without AnsibleModule; raises NodeguardError."""
    if params["stable_seconds"] < 0 or params["timeout"] < 0:
        raise health.ComponentHealthError(f"stable_seconds and timeout must be 0 or more, got {params['stable_seconds']} and {params['timeout']}")
    if params["pid"] is not None:
        return health.check_still(params["unit"], read_process, params["pid"], "at the last check")
    return health.check(params["name"], params["unit"], read_process, params["stable_seconds"], params["health_url"], ask, params["timeout"])


def main():
    module = AnsibleModule(argument_spec=OPTIONS, supports_check_mode=True)
    p = module.params
    try:
        result = run(p, unit_reader(module, p["unit"]), endpoint_asker(p["ca_path"]))
    except NodeguardError as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
