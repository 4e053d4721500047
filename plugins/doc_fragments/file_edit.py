# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options and attributes shared by every nodeguard.failover module that edits a file.

The matching argument spec is FILE_EDIT_ARGUMENT_SPEC in plugins/module_utils/files.py.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  backup:
    description:
      - Keep a timestamped copy (C(<name>.<pid>.<YYYY-mm-dd@HH:MM:SS>~)) of the file before changing it.
      - The path is returned as RV(backup_file) so a role can restore it when the component does not come back healthy.
    type: bool
    default: true
  backup_dir:
    description:
      - Directory for backups, created with mode C(0700) when missing.
      - Defaults to the directory of the file, except where the module documents otherwise
        (for example M(nodeguard.failover.static_pod_flags), because the kubelet would start a backup
        left in its static pod directory as a second pod).
    type: path
  expected_checksum:
    description:
      - SHA-256 (hex) the file must have before the edit, for example from M(ansible.builtin.stat) with
        O(ansible.builtin.stat#module:checksum_algorithm=sha256).
      - When it differs, the module fails and changes nothing. Use it to make sure the file is still the one
        you reviewed.
      - Independently of this option the module always re-reads the file just before writing and refuses
        to overwrite a file that changed since it was read.
    type: str
requirements:
  - ruamel.yaml on the managed host (Debian/Ubuntu C(python3-ruamel.yaml), pip C(ruamel.yaml)); it keeps comments,
    key order and quoting of the edited file.
attributes:
  check_mode:
    support: full
    description: Reports the exact diff and writes nothing.
  diff_mode:
    support: full
    description: Shows the file text before and after.
  platform:
    support: full
    platforms: posix
    description: Target host with Python and ruamel.yaml.
notes:
  - Only the keys the module owns are changed. Every other line is written back byte for byte, including comments,
    key order, quoting, trailing spaces, flow lists (C([a, b])), literal blocks (C(|-)), unknown fields and the final
    newline or its absence. New keys and list items take the indentation of the block they are added to (including
    list items indented under their key, C(nodes:) / C(  - address:)) and go before the comment or blank line that ends
    the block.
  - An existing file that is empty or holds only comments is refused, because a kubelet restarted on a nearly
    empty C(config.yaml) would lose its C(staticPodPath), C(clusterDNS) and client CA. Where the module has a
    C(create) option, setting it allows the edit. M(nodeguard.failover.rancher_config) accepts an empty file, because
    an empty RKE2/k3s C(config.yaml) is valid. A file that is not YAML is refused with its path and the line where
    it breaks.
  - The file is replaced atomically; owner, mode and SELinux context of the old file are kept. A symlink is followed
    and the file it points to is edited.
  - In the diff, in RV(changes) and in returned flags, values of secret-looking keys and C(flag=value) items are masked
    in every spelling (C(token), C(agent-token), C(password), C(ssh_key), C(etcd-s3-access-key), C(etcd_s3_access_key),
    C(secret_key), C(datastore-endpoint), ...); the file itself keeps them. Paths to secrets (C(*-file), C(*_path)) and
    booleans are shown.
"""
