# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rancher_config
short_description: Set component flags in an RKE2 or k3s config.yaml or config.yaml.d drop-in
version_added: 0.1.0
description:
  - Sets, changes or removes C(flag=value) items of the C(kube-controller-manager-arg), C(kube-apiserver-arg),
    C(kubelet-arg) (and C(kube-scheduler-arg), C(kube-proxy-arg), C(etcd-arg)) lists in
    C(/etc/rancher/rke2/config.yaml), C(/etc/rancher/k3s/config.yaml) or a drop-in in the C(config.yaml.d) directory
    next to it.
  - RKE2 and k3s read C(config.yaml) first, then C(config.yaml.d/*.yaml) in name order. A later plain key replaces
    an earlier one while C(key+) appends to it, so new keys in a drop-in are written as C(kube-apiserver-arg+) and add to
    what C(config.yaml) sets; when a flag repeats, its last value wins. A drop-in cannot remove a flag that
    C(config.yaml) sets.
  - The service (C(rke2-server), C(rke2-agent), C(k3s), C(k3s-agent)) reads the files only at start; restart it afterwards.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.file_edit
options:
  distribution:
    description: Which distribution the file belongs to; picks the default O(path).
    type: str
    required: true
    choices: [rke2, k3s]
  path:
    description:
      - The file to edit. Defaults to C(/etc/rancher/<distribution>/config.yaml).
      - A path inside a C(config.yaml.d) directory is treated as a drop-in (new keys get a C(+) suffix).
    type: path
  args:
    description:
      - Flags per argument list, as C(list-name -> flag -> value); see the examples.
      - Flag names have no leading dashes; values are strings (numbers and booleans are converted); V(null) removes
        the flag. A mapping as the value of C(feature-gates) is merged gate by gate.
    type: dict
    required: true
  create:
    description:
      - Create the file (mode C(0600)) when it does not exist, as for a new drop-in. Without it a missing file is an
        error. The directory must exist.
      - An existing empty file is edited either way (an empty C(config.yaml) is valid for RKE2 and k3s).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Faster failover on RKE2 servers, in a drop-in of our own
  nodeguard.failover.rancher_config:
    distribution: rke2
    path: /etc/rancher/rke2/config.yaml.d/50-nodeguard-failover.yaml
    create: true
    args:
      kube-controller-manager-arg:
        node-monitor-period: 2s
        node-monitor-grace-period: 20s
      kube-apiserver-arg:
        default-not-ready-toleration-seconds: "30"
        default-unreachable-toleration-seconds: "30"
  register: rke2_config

- name: Kubelet heartbeat on a k3s agent (config.yaml itself)
  nodeguard.failover.rancher_config:
    distribution: k3s
    args:
      kubelet-arg:
        node-status-update-frequency: 4s
"""

RETURN = r"""
path:
  description: The file.
  returned: always
  type: str
changes:
  description: One line per flag that changed (or would change in check mode).
  returned: always
  type: list
  elements: str
  sample: ["kube-controller-manager-arg+: node-monitor-grace-period (unset) -> 20s"]
drop_in:
  description: Whether the file was treated as a C(config.yaml.d) drop-in.
  returned: always
  type: bool
backup_file:
  description: Backup of the file taken before it was changed.
  returned: changed and O(backup=true) and not in check mode and the file existed
  type: str
checksum:
  description: SHA-256 of the file after the change (or as it would be in check mode).
  returned: success
  type: str
previous_checksum:
  description: SHA-256 of the file as it was read (null when it did not exist).
  returned: success
  type: str
"""

import os

from ansible_collections.nodeguard.failover.plugins.module_utils.files import FileEdit, run_file_module
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import rancher

OPTIONS = {
    "distribution": {"type": "str", "required": True, "choices": list(rancher.DISTRIBUTIONS)},
    "path": {"type": "path"},
    "args": {"type": "dict", "required": True},
    "create": {"type": "bool", "default": False},
}


def plan(params) -> FileEdit:
    path = params["path"] or os.path.join(rancher.config_dir(params["distribution"]), "config.yaml")
    drop_in = rancher.is_drop_in(path)
    return FileEdit(
        path,
        render=lambda document: rancher.render(document, params["args"], path, drop_in=drop_in),
        create=params["create"],
        empty_ok=True,  # RKE2 and k3s start with an empty config.yaml: every setting has a default
        result={"drop_in": drop_in},
    )


def main():
    run_file_module(OPTIONS, plan)


if __name__ == "__main__":
    main()
