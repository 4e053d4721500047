# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of component_health_info.

The matching argument spec is COMPONENT_HEALTH_ARGUMENT_SPEC in plugins/module_utils/components/args.py, the one
declaration of these options (tests/unit/modules/test_component_health_info.py keeps the two in step).
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  check:
    description: What to check, see the description.
    type: str
    choices: [restart, answers, still, restored, detection]
    default: restart
  name:
    description:
      - The component's name in messages, for example V(kubelet) or V(kube-controller-manager).
      - With O(flags) or O(check=still) without O(unit), also the word C(pgrep -f) looks for and the file name of the
        component's binary in the command line.
      - Required with O(check=restart), O(check=answers) and O(check=still).
    type: str
  unit:
    description:
      - The systemd unit that runs the component, for example V(kubelet), V(rke2-server) or V(k3s-agent).
      - Required with O(check=restart).
    type: str
  flags:
    description:
      - With O(check=answers), the flags (name without dashes, value; V(null) for a removed flag) the process must
        run with, as given to M(nodeguard.failover.static_pod_flags). Without it no process is looked for (k3s runs
        every component inside the k3s process).
    type: dict
  pid:
    description: With O(check=still), the PID an earlier call returned (RV(process.main_pid)). Without it only O(health_url) is asked.
    type: int
  after:
    description: With O(check=still), what O(stable_seconds) counted from, for the message, for example V(the leader lease was renewed).
    type: str
    default: ""
  health_url:
    description:
      - The component's health endpoint, for example V(http://127.0.0.1:10248/healthz) for the kubelet.
      - Empty means the component serves none; then only the process is checked.
    type: str
    default: ""
  ca_path:
    description:
      - CA bundle to verify an C(https) O(health_url) with. The certificate is verified only when it is given
        (the controller-manager's is self-signed unless it was given a certificate).
    type: path
  stable_seconds:
    description: Seconds the same process must keep running (V(restart), V(still)).
    type: int
    default: 10
  timeout:
    description: Seconds to wait for an C(ok) from O(health_url), and with O(flags) for the process.
    type: int
    default: 180
  interval:
    description: Seconds between two questions to O(health_url) or two readings of the processes.
    type: int
    default: 2
  components:
    description:
      - With O(check=restored), the restored components, in the order to wait for them (the API server first,
        the controller-manager needs it).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The component's name, for example V(kube-apiserver).
        type: str
        required: true
        aliases: [component]
      health_url:
        description: Its health endpoint, for example V(https://127.0.0.1:10257/healthz).
        type: str
        required: true
        aliases: [url]
      ca_path:
        description: CA bundle to verify its certificate with; empty verifies none (as O(ca_path)).
        type: str
        default: ""
        aliases: [ca]
      path:
        description: The file that was restored for it; only returned, in RV(components).
        type: str
        default: ""
  started:
    description:
      - With O(check=detection), when the first change was made, in seconds since the epoch of the controller's
        clock (C(now().timestamp()) in the play).
    type: float
  lease:
    description:
      - With O(check=detection), the registered result of M(nodeguard.failover.failover_lease_renewal_info) on
        C(kube-system/kube-controller-manager) after the restore. A failed reading counts as not renewed.
      - O(timeout) is the time that module waited, for the message.
    type: dict
"""
