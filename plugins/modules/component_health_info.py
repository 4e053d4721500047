# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module component_health_info: is a restarted component a stable process that answers ok? (logic in module_utils/components/health.py)"""

from __future__ import annotations

DOCUMENTATION = r"""
module: component_health_info
short_description: Check on the node that a restarted component is a stable process that answers ok
version_added: 0.1.0
description:
  - Runs on the node, right after a component was restarted, and checks that it came back as a stable process that
    answers C(ok) on its health endpoint. What it checks depends on O(check).
  - "V(restart), for a component run by the systemd unit O(unit) (the kubelet, RKE2, k3s): reads the unit with
    C(systemctl show) (C(ActiveState), C(MainPID), C(NRestarts)), waits O(stable_seconds) and reads it again. A
    component that refuses its configuration exits at once and systemd starts it again and again, so a different
    C(MainPID), a grown C(NRestarts) or an inactive unit fails the check (C(<unit> is not a stable process)). Then
    asks O(health_url) until it answers HTTP 200 with the body C(ok), for at most O(timeout) seconds, and checks
    that the unit still runs the same process."
  - "V(answers), for a static pod or a process inside RKE2: asks O(health_url) until it answers C(ok), then, when
    O(flags) is given, waits until a process whose command line carries those flags runs (read with
    C(pgrep -a -f <name>): an old process can still answer while the kubelet has not yet picked up a new manifest),
    both for at most O(timeout) seconds. Returns that process's PID."
  - "V(still): waits O(stable_seconds), then checks that process O(pid) still runs (the unit's C(MainPID) with
    O(unit), else a C(pgrep -a -f <name>) line) and that O(health_url) still answers C(ok). The controller can
    wait for something in between, for example the controller-manager's leader lease after V(answers)."
  - "V(restored), after a rollback: asks the health endpoint of each of O(components), in the order given, until it
    answers C(ok), for at most O(timeout) seconds each. It never fails for a component that stays unhealthy (the run
    fails anyway and must say what happened): it returns each one's result and a line for the message,
    RV(summary), for example C(kube-apiserver healthy again, kube-controller-manager NOT healthy)."
  - "V(detection), on the controller (C(delegate_to: localhost)) after V(restored) and
    M(nodeguard.failover.failover_lease_renewal_info) on the controller-manager's leader lease: says in
    RV(summary) whether that lease was renewed (O(lease)) and how long node-failure detection was down, from
    O(started) until the lease was renewed or, without a renewal, until now. O(started) is a time of the
    controller's own wall clock, so this check must run on the controller too: it is never compared with a
    node's clock."
  - Durations are measured on the node's monotonic clock, except the detection down time of V(detection) (see
    there). What the API server sees (a renewed Lease, a Ready node) is checked from the controller with M(nodeguard.failover.failover_lease_renewal_info) and
    M(kubernetes.core.k8s_info).
  - Read-only. It fails once, with what it saw; command lines are never quoted (they can carry secrets).
author:
  - nodeguard maintainers (@nodeguard)
attributes:
  check_mode:
    support: full
    description: The module never changes anything; it checks in check mode too.
  diff_mode:
    support: none
    description: Nothing to diff.
extends_documentation_fragment:
  - nodeguard.failover.component_health
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
    check: still
    name: kubelet
    unit: kubelet
    pid: "{{ kubelet_health.process.main_pid }}"
    stable_seconds: 0

- name: Wait until the controller-manager with the new flags answers
  nodeguard.failover.component_health_info:
    check: answers
    name: kube-controller-manager
    flags:
      node-monitor-grace-period: 20s
    health_url: https://127.0.0.1:10257/healthz
  register: kcm

- name: Check that it is still the same process 10 s later
  nodeguard.failover.component_health_info:
    check: still
    name: kube-controller-manager
    pid: "{{ kcm.process.main_pid }}"
    health_url: https://127.0.0.1:10257/healthz
    stable_seconds: 10

- name: After a rollback, wait for the restored components
  nodeguard.failover.component_health_info:
    check: restored
    components:
      - name: kube-apiserver
        health_url: https://127.0.0.1:6443/readyz
        ca_path: /etc/kubernetes/pki/ca.crt
      - name: kube-controller-manager
        health_url: https://127.0.0.1:10257/healthz
    timeout: 300
  register: restored

- name: Wait until the controller-manager holds its leader lease again
  nodeguard.failover.failover_lease_renewal_info:
    namespace: kube-system
    name: kube-controller-manager
    timeout: 300
  delegate_to: localhost
  register: leader
  failed_when: false

- name: Say how long node-failure detection was down (on the controller, whose clock took started)
  nodeguard.failover.component_health_info:
    check: detection
    started: "{{ started }}"
    lease: "{{ leader }}"
    timeout: 300
  delegate_to: localhost
  register: detection

- name: Stop the run
  ansible.builtin.fail:
    msg: "Rolled back. After the restore: {{ restored.summary }}; {{ detection.summary }}."
"""

RETURN = r"""
process:
  description: The process at the last reading; empty when no process was looked for.
  returned: success
  type: dict
  sample: {"active_state": "active", "sub_state": "running", "main_pid": 4242, "restarts": 0}
  contains:
    main_pid:
      description: The process's PID (with O(unit) systemd's C(MainPID); V(0) without a process).
      type: int
      returned: when a process was looked for
    argv:
      description: With O(check=answers) and O(flags), the process's command line, as words.
      type: list
      elements: str
      returned: with O(check=answers) and O(flags)
    active_state:
      description: systemd's C(ActiveState).
      type: str
      returned: with O(unit)
    sub_state:
      description: systemd's C(SubState).
      type: str
      returned: with O(unit)
    restarts:
      description: systemd's C(NRestarts), how often systemd restarted the unit on its own.
      type: int
      returned: with O(unit)
answer:
  description: The body the health endpoint answered; empty when it was not asked.
  returned: with O(check=restart), O(check=answers) and O(check=still)
  type: str
  sample: ok
components:
  description: With O(check=restored), each component's result, in the order waited for.
  returned: with O(check=restored)
  type: list
  elements: dict
  sample: [{"name": "kube-controller-manager", "path": "/etc/kubernetes/manifests/kube-controller-manager.yaml", "healthy": true, "answer": "ok"}]
  contains:
    name:
      description: The component's name.
      type: str
      returned: always
    path:
      description: The file that was restored for it (O(components[].path)).
      type: str
      returned: always
    healthy:
      description: Whether it answered C(ok) within O(timeout).
      type: bool
      returned: always
    answer:
      description: Its C(ok), or why it is not healthy (its last answer).
      type: str
      returned: always
summary:
  description:
    - With O(check=restored), one line for a message, for example C(kube-apiserver healthy again, kube-controller-manager NOT
      healthy), or C(nothing to wait for) without components.
    - With O(check=detection), the lease and the down time in words.
  returned: with O(check=restored) and O(check=detection)
  type: str
  sample: >-
    the controller-manager leader lease was renewed at 2026-11-26T09:12:31.402117Z. Node-failure detection was down for about
    41 s (from the first change until the lease was renewed)
renewed:
  description: With O(check=detection), whether the leader lease was renewed (O(lease)).
  returned: with O(check=detection)
  type: bool
down_seconds:
  description:
    - With O(check=detection), seconds from O(started) until now, on the controller's clock, rounded.
  returned: with O(check=detection)
  type: int
  sample: 41
"""

import time
from http.client import HTTPException

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.urls import open_url
from ansible_collections.nodeguard.failover.plugins.module_utils.components import health, restored
from ansible_collections.nodeguard.failover.plugins.module_utils.components.args import COMPONENT_HEALTH_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError

OPTIONS = COMPONENT_HEALTH_ARGUMENT_SPEC


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


def process_lines_reader(module: AnsibleModule, name: str):
    """A function that returns the `pgrep -a -f <name>` lines (PID, then the command line); none is no line."""

    def read() -> list:
        pgrep = module.get_bin_path("pgrep", required=True)
        rc, out, err = module.run_command([pgrep, "-a", "-f", "--", name])
        if rc not in (0, 1):  # 1: no process matched
            raise health.ComponentHealthError(f"pgrep -f {name} failed: {err.strip()}")
        return out.splitlines()

    return read


def endpoint_asker(ca_path: str | None):
    """A function that asks a health endpoint once (5 s per request); the certificate is verified when ca_path is given."""

    def ask(url: str) -> health.Answer:
        try:
            response = open_url(url, timeout=5, ca_path=ca_path, validate_certs=ca_path is not None, follow_redirects="none")
            return health.Answer(response.getcode(), response.read().decode("utf-8", "replace"))
        except HTTPError as e:
            # An error status (the kubelet answers 500 with the failed checks): its body is the component's words.
            return health.Answer(e.code, e.read().decode("utf-8", "replace"))
        except (OSError, HTTPException) as e:
            # A refused connection, a timeout, a TLS failure or a broken answer: all are "not ok" answers.
            return health.Answer(0, error=f"{type(e).__name__}: {e}")

    return ask


def run(params: dict, read_unit, read_lines, ask, ask_with=endpoint_asker, wall_clock=time.time) -> dict:
    """The module's work without AnsibleModule; raises NodeguardError.

    ask_with(ca_path) gives an asker for one of several components (check=restored); wall_clock is the clock
    `started` was taken with (check=detection runs on the controller, like the play's now())."""
    p = params
    if p["stable_seconds"] < 0 or p["timeout"] < 0 or p["interval"] < 1:
        raise health.ComponentHealthError(
            f"stable_seconds and timeout must be 0 or more and interval 1 or more, got {p['stable_seconds']}, {p['timeout']} and {p['interval']}"
        )
    if p["check"] == "restored":
        return restored.restored(p["components"], ask_with, p["timeout"], p["interval"])
    if p["check"] == "detection":
        if p["started"] is None or p["lease"] is None:
            raise health.ComponentHealthError("check=detection needs started and the lease reading")
        return restored.detection(p["started"], wall_clock(), p["lease"], p["timeout"])
    if not p["name"]:
        raise health.ComponentHealthError(f"check={p['check']} needs the name of the component")
    if p["check"] == "restart":
        if not p["unit"]:
            raise health.ComponentHealthError("check=restart needs the unit that runs the component")
        return health.check(p["name"], p["unit"], read_unit, p["stable_seconds"], p["health_url"], ask, p["timeout"])
    if p["check"] == "answers":
        read = read_lines if p["flags"] is not None else None
        return health.answers(p["name"], p["health_url"], ask, read, p["flags"], p["timeout"], p["interval"])
    if p["unit"]:
        if p["pid"] is None:
            raise health.ComponentHealthError("check=still with a unit needs the pid an earlier check returned")
        health.Clock().sleep(p["stable_seconds"])
        return health.check_still(p["unit"], read_unit, p["pid"], "at the last check")
    return health.still(p["name"], p["pid"], read_lines, p["health_url"], ask, p["stable_seconds"], p["after"])


def main():
    module = AnsibleModule(argument_spec=OPTIONS, supports_check_mode=True)
    p = module.params
    try:
        read_unit = unit_reader(module, p["unit"]) if p["unit"] else None
        result = run(p, read_unit, process_lines_reader(module, p["name"] or ""), endpoint_asker(p["ca_path"]))
    except NodeguardError as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
