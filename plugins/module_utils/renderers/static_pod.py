# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Static pod manifests: a component's flags are the ``--flag=value`` words that follow its binary.

The container runs ``command`` followed by ``args``, so that is what is read, in that order:

* kubeadm: ``command: [kube-controller-manager, --flag=value, ...]``, no ``args``;
* hand-written manifests: ``command: ["kube-controller-manager"]`` and the flags in ``args``;
* kOps: ``command: [/go-runner]`` and ``args: [--log-file=..., /usr/local/bin/kube-controller-manager, --flag, ...]``:
  go-runner's own flags come before the component's binary and are not the component's.

A flag is edited where it is (the first place it appears; repeats are dropped, the last value was the one
that counted). A new flag goes at the end of the process's words: in ``args`` when the container has
them, else in ``command``, which is after the component's binary either way.
"""

from __future__ import annotations

import posixpath
import re
from collections import namedtuple

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

Rendered = namedtuple("Rendered", "document changes")

SHELLS = frozenset(("sh", "bash", "ash", "dash"))


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


def _list(container_doc, key: str, container: str, source: str):
    value = container_doc.get(key)
    if value is not None and not isinstance(value, list):
        raise FileEditError(f"{source}: container {container!r} {key} must be a list, found {type(value).__name__}")
    return value


def process_words(container_doc, container: str, source: str) -> list:
    """The words the container runs, ``command`` then ``args``, each as (list, index) where it is stored.

    Only the words that follow the component's binary (a word whose file name is ``container``) are the
    component's flags: returns those places. Without such a word, the words after the command's first.
    """
    command = _list(container_doc, "command", container, source)
    args = _list(container_doc, "args", container, source)
    places = [(command, number) for number in range(len(command or []))]
    places += [(args, number) for number in range(len(args or []))]
    words = [str(items[number]) for items, number in places]
    binary = next((number for number, word in enumerate(words) if posixpath.basename(word) == container), None)
    if binary is not None:
        return places[binary + 1:]
    if not command:
        raise FileEditError(
            f"{source}: container {container!r} has no command list and its args do not name the {container} binary: "
            "which program reads the flags depends on the image's entrypoint; its flags cannot be edited here"
        )
    if posixpath.basename(words[0]) in SHELLS:
        raise FileEditError(
            f"{source}: container {container!r} runs its command through {words[0]}; flags inside a shell command "
            "line cannot be edited here"
        )
    return places[1:]


def read_flags(document, container: str, source: str) -> dict:
    """Current flags of a container's process: ``{name: [value, ...]}`` in the order it reads them (None for a bare ``--flag``)."""
    places = process_words(find_container(document, container, source), container, source)
    return flaglib.read_list([items[number] for items, number in places], "--")


def image_version(document, container: str, source: str) -> str:
    """The version the container's image tag names, without its ``v`` (registry.k8s.io/kube-apiserver:v1.35.4 ->
    1.35.4; a digest after ``@`` is ignored), or "" when the image has no tag that starts with one."""
    image = str(find_container(document, container, source).get("image") or "").split("@", 1)[0]
    name, _colon, tag = image.rpartition(":")
    tag = tag.removeprefix("v")
    if not name or "/" in tag or not re.match(r"[0-9]+[.][0-9]+[.][0-9]+", tag):
        return ""  # no tag (a colon before a slash is a registry's port), or a tag that names no version
    return tag


def _apply(container_doc, container: str, changes: list, source: str) -> None:
    """Apply planned changes: the first occurrence is replaced, repeats dropped, a new flag appended last."""
    for name, value in changes:
        places = process_words(container_doc, container, source)
        found = [(items, number) for items, number in places if (flaglib.split_item(items[number], "--") or (None,))[0] == name]
        if value is not None and found:
            items, number = found[0]
            items[number] = yamldoc.same_style(items[number], f"--{name}={value}")
        repeats = found[1:] if value is not None else found
        for items, number in sorted(repeats, key=lambda place: place[1], reverse=True):  # each list from its end
            del items[number]
        if value is not None and not found:
            target = container_doc.get("args") if container_doc.get("args") is not None else container_doc["command"]
            target.append(f"--{name}={value}")


def render(document, container: str, flags: dict | None, feature_gates: dict | None, source: str) -> Rendered:
    """Set (or remove, for None) flags of one container's process; merge feature gates gate by gate."""
    where = f"{source} container {container}"
    current = read_flags(document, container, source)
    changes = flaglib.plan(current, flags, feature_gates, where)
    if not changes:
        return Rendered(document, [])
    new_document = yamldoc.copy_document(document)
    container_doc = find_container(new_document, container, source)
    for key in ("command", "args"):
        if container_doc.get(key) is not None:
            yamldoc.refuse_shared(container_doc[key], f"{where} {key}")
    _apply(container_doc, container, changes, source)
    return Rendered(new_document, flaglib.describe(changes, current, container))


def command_of(document, container: str, source: str) -> list:
    """The container's command as plain strings (for the module's ``command`` return value)."""
    return [str(item) for item in find_container(document, container, source).get("command") or []]


def args_of(document, container: str, source: str) -> list:
    """The container's args as plain strings (for the module's ``args`` return value)."""
    return [str(item) for item in find_container(document, container, source).get("args") or []]
