# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: kubelet_config
short_description: Set fields of a KubeletConfiguration file
version_added: 0.1.0
description:
  - Sets, changes or removes top-level fields of a kubelet configuration file (C(kind) V(KubeletConfiguration)),
    such as C(/var/lib/kubelet/config.yaml) written by kubeadm, or a file in a kubelet C(--config-dir) drop-in directory.
  - Mapping values such as C(featureGates) are merged key by key; other values replace the field.
  - The file may be YAML or JSON, as the kubelet reads either. A JSON file stays JSON, in its own layout and key order
    (a new field goes last). JSON laid out in a way this module cannot write back without changing other lines (for
    example a space before each colon) is refused before anything is written; lay it out as C(jq) writes it first.
  - The kubelet reads the file only at start; restart it afterwards. The kubelet cannot check a configuration without
    running it, and this module checks only the types of the fields it knows (a duration must be a Go duration, a count
    an integer). A value the kubelet refuses for other reasons (for example a negative C(nodeLeaseDurationSeconds)) shows
    only when the kubelet starts. The C(nodeguard.failover.kubelet_heartbeat) role therefore restarts the kubelet, checks
    that it came back healthy, and restores the backup (RV(backup_file)) when it did not.
  - On kubeadm clusters also update the C(kubelet) key of ConfigMap C(kube-system/kubelet-config), or
    C(kubeadm upgrade) rewrites the file; see the P(nodeguard.failover.kubelet_config_merge#filter) filter.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.file_edit
options:
  path:
    description: KubeletConfiguration file to edit.
    type: path
    default: /var/lib/kubelet/config.yaml
  settings:
    description:
      - KubeletConfiguration fields (camelCase, as in the file) and their values; V(null) removes a field so the
        kubelet default applies.
      - Durations are Go duration strings (V(10s), V(1m0s)); C(nodeLeaseDurationSeconds) and other counts are integers.
    type: dict
    required: true
  create:
    description:
      - Create the file (mode C(0600), with C(apiVersion) and C(kind)) when it does not exist, for example a drop-in
        in the kubelet C(--config-dir). Without it a missing file is an error.
      - Also allows writing into an existing empty file, which is otherwise refused, because a kubelet restarted on a file
        with only the given settings would run without its C(staticPodPath), C(clusterDNS) and client CA.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Report node status every 4 s with a 20 s lease
  nodeguard.failover.kubelet_config:
    settings:
      nodeStatusUpdateFrequency: 4s
      nodeStatusReportFrequency: 1m0s
      nodeLeaseDurationSeconds: 20
  register: kubelet_file

- name: Restart the kubelet when the file changed
  ansible.builtin.systemd_service:
    name: kubelet
    state: restarted
  when: kubelet_file is changed

- name: Go back to the kubelet default for the report frequency
  nodeguard.failover.kubelet_config:
    settings:
      nodeStatusReportFrequency: null
"""

RETURN = r"""
path:
  description: The file.
  returned: always
  type: str
changes:
  description: One line per field that changed (or would change in check mode).
  returned: always
  type: list
  elements: str
  sample: ["nodeStatusUpdateFrequency: '10s' -> '4s'"]
settings:
  description: The failover-relevant fields in the file after the change (absent fields use kubelet defaults).
  returned: success
  type: dict
  sample: {"nodeStatusUpdateFrequency": "4s", "nodeLeaseDurationSeconds": 20}
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

from ansible_collections.nodeguard.failover.plugins.module_utils.files import FileEdit, run_file_module
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubelet

OPTIONS = {
    "path": {"type": "path", "default": "/var/lib/kubelet/config.yaml"},
    "settings": {"type": "dict", "required": True},
    "create": {"type": "bool", "default": False},
}


def plan(params) -> FileEdit:
    path = params["path"]
    return FileEdit(
        path,
        render=lambda document: kubelet.render(document, params["settings"], path),
        report=lambda document: {"settings": kubelet.read_settings(document, path)},
        create=params["create"],
    )


def main():
    run_file_module(OPTIONS, plan)


if __name__ == "__main__":
    main()
