# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rke1_cluster_config
short_description: Set component flags in an RKE1 cluster.yml
version_added: 0.1.0
description:
  - Sets, changes or removes entries of C(services.<service>.extra_args) in an RKE1 C(cluster.yml), creating the
    C(services), service and C(extra_args) mappings when needed.
  - This module only edits the file. RKE1 applies it with C(rke up), which restarts components across the cluster;
    the module never runs it. The C(nodeguard.failover) roles run C(rke up) only when asked to
    (see C(docs/distributions.md)), or run it yourself when the task reports a change.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.file_edit
options:
  path:
    description: The RKE1 C(cluster.yml).
    type: path
    required: true
  services:
    description:
      - Flags per RKE1 service, as C(service -> flag -> value). Services are C(kube-api), C(kube-controller),
        C(kubelet), C(scheduler), C(kubeproxy) and C(etcd).
      - Flag names have no leading dashes; values are strings (numbers and booleans are converted); V(null) removes
        the flag. A mapping as the value of C(feature-gates) is merged gate by gate.
      - The kubelet only accepts flags for some KubeletConfiguration fields (for example
        C(node-status-update-frequency)); there is no flag for C(nodeLeaseDurationSeconds).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Faster failover on an RKE1 cluster
  nodeguard.failover.rke1_cluster_config:
    path: /opt/rke/cluster.yml
    services:
      kube-controller:
        node-monitor-period: 2s
        node-monitor-grace-period: 20s
      kube-api:
        default-not-ready-toleration-seconds: "30"
        default-unreachable-toleration-seconds: "30"
      kubelet:
        node-status-update-frequency: 4s
  register: rke1_config

- name: Apply it (only when you want rke up to run now)
  ansible.builtin.command:
    cmd: rke up --config /opt/rke/cluster.yml
  when: rke1_config is changed
  changed_when: true
"""

RETURN = r"""
path:
  description: The cluster.yml.
  returned: always
  type: str
changes:
  description: One line per flag that changed (or would change in check mode).
  returned: always
  type: list
  elements: str
  sample: ["kube-controller: node-monitor-grace-period (unset) -> 20s"]
extra_args:
  description: C(extra_args) of every service after the change, as C(service -> flag -> value).
  returned: success
  type: dict
backup_file:
  description: Backup of cluster.yml taken before it was changed.
  returned: changed and O(backup=true) and not in check mode
  type: str
checksum:
  description: SHA-256 of the file after the change (or as it would be in check mode).
  returned: success
  type: str
previous_checksum:
  description: SHA-256 of the file as it was read.
  returned: success
  type: str
"""

from ansible_collections.nodeguard.failover.plugins.module_utils.files import FileEdit, redact_flags, run_file_module
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import rke1

OPTIONS = {
    "path": {"type": "path", "required": True},
    "services": {"type": "dict", "required": True},
}


def plan(params) -> FileEdit:
    path = params["path"]

    def report(document):
        current = rke1.read_settings(document, path)
        return {
            "extra_args": {
                service: redact_flags(flaglib.last_values(flags))
                for service, flags in current.items()
                if flags
            }
        }

    return FileEdit(path, render=lambda document: rke1.render(document, params["services"], path), report=report)


def main():
    run_file_module(OPTIONS, plan)


if __name__ == "__main__":
    main()
