# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: static_pod_flags
short_description: Set command-line flags of a container in a static pod manifest
version_added: 0.1.0
description:
  - Sets, changes or removes C(--flag=value) items of one container of a static pod manifest, such as
    C(/etc/kubernetes/manifests/kube-controller-manager.yaml) or C(kube-apiserver.yaml) (kubeadm) or
    C(kube-controller-manager.manifest) (kOps).
  - Reads the process as the container runs it, C(command) then C(args). The component's flags are the words after
    its binary (a word whose file name is the container name). kubeadm puts them in C(command), hand-written manifests
    often in C(args), and kOps runs the command C(/go-runner) with go-runner's own flags, then the binary and the
    component's flags, in C(args). A wrapper's flags (before the binary) are never read or changed.
  - A flag is changed where it is; when it is given more than once, the first is changed and the others are removed
    (the last one was the value the component used). A new flag goes last, after the component's binary, in C(args)
    when the container has C(args), else in C(command). A file whose last value already is the wanted one is not
    changed.
  - Feature gates are merged gate by gate into the existing C(--feature-gates=A=true,B=false) item.
  - The kubelet restarts the static pod as soon as the file changes. Wait for the component's C(/healthz)
    and restore RV(backup_file) when it does not come back (the C(nodeguard.failover) control plane role does this).
  - Flags set here are lost on C(kubeadm upgrade) unless they are also in the C(kube-system/kubeadm-config)
    ConfigMap; see the P(nodeguard.failover.kubeadm_cluster_config_merge#filter) filter.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.file_edit
options:
  path:
    description: Static pod manifest to edit.
    type: path
    required: true
  container:
    description:
      - Name of the container whose process carries the flags; also the file name of the component's binary
        in its C(command) or C(args).
      - Defaults to the file name without extension (C(kube-apiserver) for C(kube-apiserver.yaml)).
    type: str
  flags:
    description:
      - Flags to set, as C(name -> value) with names without leading dashes. Values are strings
        (numbers and booleans are converted); V(null) removes the flag.
      - A mapping as the value of C(feature-gates) is merged like O(feature_gates).
    type: dict
    default: {}
  feature_gates:
    description:
      - Feature gates to merge into C(--feature-gates), as C(Gate -> true|false); V(null) removes a gate.
      - The flag is removed when no gate is left.
    type: dict
  backup_dir:
    description:
      - Directory for backups. Defaults to a C(nodeguard-backups) directory next to the manifest directory
        (C(/etc/kubernetes/nodeguard-backups) for C(/etc/kubernetes/manifests/*.yaml)), because the kubelet
        would run a backup left in the manifest directory as a second static pod.
    type: path
"""

EXAMPLES = r"""
- name: Detect dead nodes faster (controller manager)
  nodeguard.failover.static_pod_flags:
    path: /etc/kubernetes/manifests/kube-controller-manager.yaml
    flags:
      node-monitor-period: 2s
      node-monitor-grace-period: 20s
      pod-eviction-timeout: null   # removed in 1.27; drop it if an old profile left it
  register: kcm_flags

- name: Evict pods from unreachable nodes after 30 s (apiserver)
  nodeguard.failover.static_pod_flags:
    path: /etc/kubernetes/manifests/kube-apiserver.yaml
    flags:
      default-not-ready-toleration-seconds: "30"
      default-unreachable-toleration-seconds: "30"

- name: Merge a feature gate without touching the others
  nodeguard.failover.static_pod_flags:
    path: /etc/kubernetes/manifests/kube-controller-manager.yaml
    feature_gates:
      NodeOutOfServiceVolumeDetach: true
"""

RETURN = r"""
path:
  description: The manifest.
  returned: always
  type: str
changes:
  description: One line per flag that changed (or would change in check mode).
  returned: always
  type: list
  elements: str
  sample: ["kube-controller-manager: node-monitor-grace-period 40s -> 20s"]
command:
  description: The container command after the change (or as it would be in check mode).
  returned: success
  type: list
  elements: str
args:
  description: The container args after the change (or as it would be in check mode); empty when it has none.
  returned: success
  type: list
  elements: str
flags:
  description:
    - The component's flags after the change (or as they would be in check mode), each with the value the component
      uses (the last one it reads); null for a bare C(--flag). Only the words after the component's binary, never a
      wrapper's (kOps' go-runner). Secret-looking values are masked.
    - Read this to find where the component serves, for example C(advertise-address) and C(secure-port).
  returned: success
  type: dict
  sample: {"advertise-address": "10.0.0.11", "secure-port": "6443", "service-account-key-file": "/etc/kubernetes/pki/sa.pub"}
backup_file:
  description: Backup of the manifest taken before it was changed.
  returned: changed and O(backup=true) and not in check mode
  type: str
  sample: /etc/kubernetes/nodeguard-backups/kube-controller-manager.yaml.4242.2026-11-22@03:10:00~
checksum:
  description: SHA-256 of the manifest after the change (or as it would be in check mode).
  returned: success
  type: str
previous_checksum:
  description: SHA-256 of the manifest as it was read.
  returned: success
  type: str
"""

import os

from ansible_collections.nodeguard.failover.plugins.module_utils.files import FileEdit, redact_command, redact_flags, run_file_module
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import static_pod

OPTIONS = {
    "path": {"type": "path", "required": True},
    "container": {"type": "str"},
    "flags": {"type": "dict", "default": {}},
    "feature_gates": {"type": "dict"},
}


def default_backup_dir(manifest: str) -> str:
    manifest_dir = os.path.dirname(os.path.abspath(manifest))
    return os.path.join(os.path.dirname(manifest_dir), "nodeguard-backups")


def plan(params) -> FileEdit:
    path = params["path"]
    container = params["container"] or os.path.splitext(os.path.basename(path))[0]
    return FileEdit(
        path,
        render=lambda document: static_pod.render(document, container, params["flags"], params["feature_gates"], path),
        report=lambda document: {
            "command": redact_command(static_pod.command_of(document, container, path)),
            "args": redact_command(static_pod.args_of(document, container, path)),
            "flags": redact_flags(flaglib.last_values(static_pod.read_flags(document, container, path))),
        },
        backup_dir=default_backup_dir(path),
    )


def main():
    run_file_module(OPTIONS, plan)


if __name__ == "__main__":
    main()
