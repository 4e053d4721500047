# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Safe editing of YAML configuration files on a node.

``run_file_module`` is the ``main()`` of every file module (one argument spec, one failure path);
each module only says which file to edit and how (a ``FileEdit``). ``edit_yaml_file`` does the
careful part:

1. read the file and remember its SHA-256 (optionally compare with ``expected_checksum``);
   refuse an existing file with no YAML in it unless the module says empty is valid or ``create`` is set;
2. parse it with a comment-preserving round trip and let a renderer change the document;
   every line the renderer did not change is written back byte for byte (``yamldoc.dump``);
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
from collections import namedtuple

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError, NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

# Options every file-editing module shares; documented in doc fragment nodeguard.failover.file_edit.
FILE_EDIT_ARGUMENT_SPEC = {
    "backup": {"type": "bool", "default": True},
    "backup_dir": {"type": "path"},
    "expected_checksum": {"type": "str"},
}

# Mode of files this collection creates (they can hold tokens, e.g. RKE2 config.yaml).
NEW_FILE_MODE = 0o600

# Names whose values never appear in a diff, a change line or a returned flag: RKE2/k3s join tokens,
# etcd S3 keys and datastore URLs, RKE1 SSH keys and registry passwords. Both spellings
# (etcd-s3-access-key, etcd_s3_access_key) and camelCase. The file itself keeps them.
_SECRET_WORDS = (
    r"token|password|passwd|secret|(?:access|private|ssh|api|session|encryption)[-_]?key|key[-_]?data"
    r"|datastore[-_]?endpoint"
)
_SECRET_NAME = re.compile(rf"^-{{0,2}}[\w.+-]*(?:{_SECRET_WORDS})[\w.+-]*$", re.IGNORECASE)
_KEPT_ELSEWHERE = re.compile(r"[-_]?(?:path|file|dir)$", re.IGNORECASE)  # where a secret is kept is no secret
# "key: value" and "- key: value" lines, and "- flag=value" list items (RKE2 *-arg lists, static pod commands).
_KEY_LINE = re.compile(r"^(?P<indent>\s*(?:-\s+)*)(?P<quote>[\"']?)(?P<key>[\w.+-]+)(?P=quote)\s*:(?P<rest>(?:\s.*)?)$")
_FLAG_ITEM = re.compile(r"^(?P<indent>\s*-\s+)(?P<quote>[\"']?)(?P<key>-{0,2}[\w.+-]+)=(?P<rest>.*)$")
REDACTED = "<redacted by nodeguard.failover>"
_NOT_SECRET_VALUES = ("", "{}", "[]", "true", "false", "null", "~")  # e.g. RKE2 "secrets-encryption: true"


def is_secret_name(name) -> bool:
    """True for key and flag names whose values are secrets (token, etcd-s3-access-key, ssh_key, ...)."""
    name = str(name)
    return bool(_SECRET_NAME.match(name)) and not _KEPT_ELSEWHERE.search(name)


def _is_secret(name, value) -> bool:
    value = re.sub(r"\s+#.*$", "", str(value)).strip().strip("\"'").lower()
    return is_secret_name(name) and value not in _NOT_SECRET_VALUES


def redact_secrets(text: str) -> str:
    """The text with the values of secret-looking keys and flag items (and their block scalars) masked."""
    lines = []
    hidden_deeper_than = None
    for line in text.splitlines(keepends=True):
        indent = len(line) - len(line.lstrip())
        if hidden_deeper_than is not None:
            if not line.strip() or indent > hidden_deeper_than:
                continue
            hidden_deeper_than = None
        match = _KEY_LINE.match(line.rstrip("\r\n"))
        if match and _is_secret(match.group("key"), match.group("rest")):
            quote = match.group("quote")
            lines.append(f"{match.group('indent')}{quote}{match.group('key')}{quote}: {REDACTED}\n")
            if match.group("rest").strip()[:1] in ("|", ">"):
                hidden_deeper_than = indent
            continue
        match = _FLAG_ITEM.match(line.rstrip("\r\n"))
        if match and _is_secret(match.group("key"), match.group("rest")):
            quote = match.group("quote")
            lines.append(f"{match.group('indent')}{quote}{match.group('key')}={REDACTED}{quote}\n")
            continue
        lines.append(line)
    return "".join(lines)


def redact_flags(flags: dict) -> dict:
    """``{name: value}`` with the values of secret-looking names masked, for a module's return values."""
    return {name: REDACTED if _is_secret(name, value) else value for name, value in flags.items()}


def redact_command(command: list) -> list:
    """A command line with the values of secret-looking ``--flag=value`` items masked."""
    redacted = []
    for item in command:
        name, equals, value = str(item).partition("=")
        redacted.append(f"{name}={REDACTED}" if equals and _is_secret(name, value) else item)
    return redacted


def _redact_change(change: str) -> str:
    """A change line ("where: name old -> new") without the values when it is about a secret-looking name."""
    for word in re.split(r"[\s:]+", change):
        if is_secret_name(word):
            return change[: change.index(word) + len(word)] + f" {REDACTED}"
    return change


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


def rollback_plan(edits: list, removed: dict | None = None, removed_backup: str = "") -> dict:
    """What a role must put back after a failed change, from the registered results of its file edits.

    ``edits``: results of tasks that changed files (this collection's file modules report ``path``,
    ansible.builtin.copy reports ``dest``); skipped or unchanged ones are left out. A changed file with a
    ``backup_file`` is restored from it; one without was created by the run and is removed.
    ``removed``: the result of removing a file that was first copied to ``removed_backup``; when the
    removal changed something, the file is restored from that copy.

    Returns ``{"restore": [{path, backup_file}], "remove": [path], "paths": [every changed path]}``.
    """
    changed = [edit for edit in edits if isinstance(edit, dict) and edit.get("changed")]
    if removed and removed.get("changed"):
        if not removed_backup:
            raise FileEditError(f"rollback_plan: {removed.get('path')} was removed, but no saved copy is named")
        changed.append({"path": removed.get("path"), "backup_file": removed_backup})
    restore, remove, paths = [], [], []
    for edit in changed:
        path = edit.get("path") or edit.get("dest")
        if not path:
            raise FileEditError(f"rollback_plan: a changed file's result names no path: {sorted(edit)}")
        paths.append(path)
        if edit.get("backup_file"):
            restore.append({"path": path, "backup_file": edit["backup_file"]})
        else:
            remove.append(path)
    return {"restore": restore, "remove": remove, "paths": paths}


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


# What a file module edits, as its plan() returns it:
#   path: the file; render(document) -> renderers' Rendered(document, changes);
#   report(document) -> extra return values read from the document after the change (or None);
#   create: write a new file when it is missing (or empty); empty_ok: an existing empty file is valid input;
#   backup_dir: default backup directory; result: fixed extra return values.
FileEdit = namedtuple("FileEdit", "path render report create empty_ok backup_dir result", defaults=(None, False, False, None, None))


def run_file_module(options: dict, plan) -> None:
    """The ``main()`` of every file module: arguments, ruamel.yaml check, the edit, one failure path.

    ``options`` is the module's own argument spec (the shared file options are added here);
    ``plan(params)`` returns the FileEdit to carry out.
    """
    module = AnsibleModule(argument_spec=dict(options, **FILE_EDIT_ARGUMENT_SPEC), supports_check_mode=True)
    require_yaml_library(module)
    path = module.params.get("path")
    try:
        edit = plan(module.params)
        path = edit.path
        result = edit_yaml_file(module, edit)
    except NodeguardError as error:
        module.fail_json(msg=str(error), path=path, changes=[])
    module.exit_json(**result)


def _refuse_empty(path: str, create_option: bool) -> None:
    hint = "; set create=true to write a new file in its place" if create_option else ""
    raise FileEditError(
        f"{path} exists but is empty (no YAML in it, at most comments); refusing to treat it as a new file, which would "
        f"drop every setting the file should have. Restore it (for example from a backup){hint}. Nothing changed."
    )


def edit_yaml_file(module, edit: FileEdit) -> dict:
    """Apply ``edit.render`` to the YAML file ``edit.path``.

    Returns the module result: changed, path, changes, diff, checksum, previous_checksum,
    backup_file (when a backup was written), plus edit.report() and edit.result.
    Raises FileEditError and changes nothing on any problem.
    """
    params = module.params
    path = edit.path
    data = _read_bytes(path)
    creating = data is None
    if creating and not edit.create:
        raise FileEditError(f"{path} does not exist")
    if creating and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise FileEditError(f"cannot create {path}: its directory does not exist")
    text = "" if creating else _decode(data, path)
    checksum = None if creating else sha256_of(data)
    expected = params.get("expected_checksum")
    if expected and expected.lower() != (checksum or ""):
        found = checksum or "(missing)"
        raise FileEditError(f"{path} has SHA-256 {found}, not the expected_checksum {expected}; nothing changed")

    if not creating and yamldoc.is_empty(text) and not (edit.empty_ok or edit.create):
        _refuse_empty(path, "create" in params)
    document = yamldoc.load(text, path)
    rendered = edit.render(document)
    result = {"changed": False, "path": path, "changes": [_redact_change(change) for change in rendered.changes]}
    result.update(checksum=checksum, previous_checksum=checksum, **(edit.result or {}))
    if edit.report:
        result.update(edit.report(rendered.document))
    if not rendered.changes:  # nothing to set: not even a new empty file
        return result

    new_text = yamldoc.dump(rendered.document, text, path)
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
        result["backup_file"] = _backup(module, path, params.get("backup_dir") or edit.backup_dir)
    try:
        # Like lineinfile: edit the file a symlink points to, keep the link.
        _write_atomically(module, os.path.realpath(path), new_text, creating)
    except OSError as error:
        raise FileEditError(f"cannot write {path}: {error}") from None
    return result
