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
  - Only the keys the module owns are changed; comments, key order, quoting and unknown fields are kept.
  - The file is replaced atomically; owner, mode and SELinux context of the old file are kept. A symlink is followed
    and the file it points to is edited.
  - In the diff, values of secret-looking keys (C(token), C(agent-token), C(password), C(ssh_key), C(datastore-endpoint), ...)
    are masked; the file itself keeps them.
"""
