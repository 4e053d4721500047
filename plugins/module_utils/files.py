# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safe editing of YAML configuration files on a node.

One function, ``edit_yaml_file``, does the careful part for every file module:

1. read the file and remember its SHA-256 (optionally compare with ``expected_checksum``);
2. parse it with a comment-preserving round trip and let a renderer change the document;
3. if nothing changed, stop (idempotence); in check mode, report the diff and stop;
4. re-read the checksum just before writing and refuse if someone changed the file meanwhile;
5. keep a timestamped backup, then replace the file atomically (``module.atomic_move``
   keeps the owner, mode and SELinux context of the file it replaces).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import time

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

# Options every file-editing module shares; documented in doc fragment nodeguard.failover.file_edit.
FILE_EDIT_ARGUMENT_SPEC = {
    "backup": {"type": "bool", "default": True},
    "backup_dir": {"type": "path"},
    "expected_checksum": {"type": "str"},
}

# Mode of files this collection creates (they can hold tokens, e.g. RKE2 config.yaml).
NEW_FILE_MODE = 0o600

# Keys whose values never appear in a diff: RKE2/k3s join tokens and datastore URLs, RKE1 SSH keys
# and registry passwords. The file itself keeps them; only the reported text is masked.
_SECRET_KEY = re.compile(
    r"^(?P<indent>\s*(?:-\s+)?)(?P<key>[\w.+-]*(?:token|password|passwd|secret|ssh_key|private_key|access_key|"
    r"datastore-endpoint)[\w.+-]*)\s*:(?P<rest>.*)$",
    re.IGNORECASE,
)
REDACTED = "<redacted by nodeguard.failover>"


def redact_secrets(text: str) -> str:
    """The text with the values of secret-looking keys (and their block scalars) masked."""
    lines = []
    hidden_deeper_than = None
    for line in text.splitlines(keepends=True):
        indent = len(line) - len(line.lstrip())
        if hidden_deeper_than is not None:
            if not line.strip() or indent > hidden_deeper_than:
                continue
            hidden_deeper_than = None
        match = _SECRET_KEY.match(line)
        if match and re.search(r"[_-](path|file|dir)$", match.group("key")):
            match = None  # where a secret is kept is no secret
        if match and match.group("rest").strip() not in ("", "{}", "[]"):
            lines.append(f"{match.group('indent')}{match.group('key')}: {REDACTED}\n")
            if match.group("rest").strip()[:1] in ("|", ">"):
                hidden_deeper_than = indent
            continue
        lines.append(line)
    return "".join(lines)


def require_yaml_library(module) -> None:
    """Fail the module the standard Ansible way when ruamel.yaml is missing on the managed host."""
    if not yamldoc.HAS_RUAMEL:
        module.fail_json(msg=missing_required_lib(yamldoc.RUAMEL_REQUIREMENT), exception=yamldoc.RUAMEL_IMPORT_TRACEBACK)


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise FileEditError(f"cannot read {path}: {error}") from None


def _decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FileEditError(f"{path} is not UTF-8 text: {error}") from None


def read_yaml_file(path: str):
    """(document, text, checksum) of an existing YAML file; FileEditError when missing or malformed."""
    data = _read_bytes(path)
    if data is None:
        raise FileEditError(f"{path} does not exist")
    text = _decode(data, path)
    return yamldoc.load(text, path), text, sha256_of(data)


def backup_path(path: str, backup_dir: str | None) -> str:
    """Where the backup goes: ``<name>.<pid>.<YYYY-mm-dd@HH:MM:SS>~`` like Ansible's backup_local."""
    stamp = time.strftime("%Y-%m-%d@%H:%M:%S", time.localtime())
    name = f"{os.path.basename(path)}.{os.getpid()}.{stamp}~"
    return os.path.join(backup_dir or os.path.dirname(os.path.abspath(path)), name)


def _backup(module, path: str, backup_dir: str | None) -> str:
    if backup_dir and not os.path.isdir(backup_dir):
        try:
            os.makedirs(backup_dir, mode=0o700)
        except OSError as error:
            raise FileEditError(f"cannot create backup directory {backup_dir}: {error}") from None
    destination = backup_path(path, backup_dir)
    try:
        module.preserved_copy(path, destination)
    except (OSError, shutil.Error) as error:
        raise FileEditError(f"cannot back up {path} to {destination}: {error}") from None
    return destination


def _write_atomically(module, path: str, text: str, creating: bool) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    # A dot name: the kubelet ignores hidden files in its static pod directory.
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".nodeguard", dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(text.encode("utf-8"))
        module.atomic_move(temporary, path)
        if creating:  # atomic_move gives new files the umask default; tighten it
            os.chmod(path, NEW_FILE_MODE)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def edit_yaml_file(module, path: str, render, create: bool = False, backup_dir: str | None = None) -> dict:
    """Apply ``render(document) -> Rendered(document, changes)`` to the YAML file at ``path``.

    Returns the module result: changed, path, changes, diff, checksum, previous_checksum,
    backup_file (when a backup was written). Raises FileEditError and changes nothing on any
    problem. ``backup_dir`` overrides the module's ``backup_dir`` option default.
    """
    params = module.params
    data = _read_bytes(path)
    creating = data is None
    if creating and not create:
        raise FileEditError(f"{path} does not exist")
    if creating and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise FileEditError(f"cannot create {path}: its directory does not exist")
    text = "" if creating else _decode(data, path)
    checksum = None if creating else sha256_of(data)
    expected = params.get("expected_checksum")
    if expected and expected.lower() != (checksum or ""):
        found = checksum or "(missing)"
        raise FileEditError(f"{path} has SHA-256 {found}, not the expected_checksum {expected}; nothing changed")

    document = yamldoc.load(text, path)
    rendered = render(document)
    result = {"changed": False, "path": path, "changes": list(rendered.changes), "checksum": checksum, "previous_checksum": checksum}
    if not rendered.changes:  # nothing to set: not even a new empty file
        return result

    new_text = yamldoc.dump(rendered.document, text)
    result.update(
        changed=True,
        checksum=sha256_of(new_text.encode("utf-8")),
        diff={
            "before": redact_secrets(text),
            "after": redact_secrets(new_text),
            "before_header": path if not creating else "/dev/null",
            "after_header": path,
        },
    )
    if module.check_mode:
        return result

    # Last look before writing: someone (kubeadm, an operator, another run) may have edited it.
    now = _read_bytes(path)
    if (now is None) != creating or (now is not None and sha256_of(now) != checksum):
        raise FileEditError(f"{path} changed on disk since it was read; nothing written, run again")
    if params.get("backup") and not creating:
        result["backup_file"] = _backup(module, path, params.get("backup_dir") or backup_dir)
    try:
        # Like lineinfile: edit the file a symlink points to, keep the link.
        _write_atomically(module, os.path.realpath(path), new_text, creating)
    except OSError as error:
        raise FileEditError(f"cannot write {path}: {error}") from None
    return result
