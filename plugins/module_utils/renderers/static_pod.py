# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubeadm static pod manifests: flags live in ``spec.containers[name].command`` as ``--flag=value``."""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

Rendered = namedtuple("Rendered", "document changes")


def find_container(document, container: str, source: str):
    """The container mapping named ``container``; a clear error names the ones that exist."""
    if document.get("kind") not in (None, "Pod"):
        raise FileEditError(f"{source} is a {document.get('kind')}, not a static Pod manifest")
    spec = document.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not containers:
        raise FileEditError(f"{source} has no spec.containers list; is it a static Pod manifest?")
    names = []
    for candidate in containers:
        if isinstance(candidate, dict):
            names.append(str(candidate.get("name")))
            if candidate.get("name") == container:
                return candidate
    raise FileEditError(f"{source} has no container named {container!r} (containers: {', '.join(names)})")


def _command(container_doc, container: str, source: str):
    command = container_doc.get("command")
    if not isinstance(command, list):
        raise FileEditError(
            f"{source}: container {container!r} has no command list; its flags cannot be edited here"
        )
    return command


def read_flags(document, container: str, source: str) -> dict:
    """Current flags of a container: ``{name: [value, ...]}`` (None for a bare ``--flag``)."""
    return flaglib.read_list(_command(find_container(document, container, source), container, source), "--")


def render(document, container: str, flags: dict | None, feature_gates: dict | None, source: str) -> Rendered:
    """Set (or remove, for None) flags of one container; merge feature gates gate by gate."""
    where = f"{source} container {container}"
    current = read_flags(document, container, source)
    changes = flaglib.plan(current, flags, feature_gates, where)
    if not changes:
        return Rendered(document, [])
    new_document = yamldoc.copy_document(document)
    command = _command(find_container(new_document, container, source), container, source)
    flaglib.apply_to_list(command, changes, "--")
    return Rendered(new_document, flaglib.describe(changes, current, container))


def command_of(document, container: str, source: str) -> list:
    """The container's command as plain strings (for the module's ``command`` return value)."""
    return [str(item) for item in _command(find_container(document, container, source), container, source)]
