# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RKE2 and k3s config.yaml: component flags live in ``<component>-arg`` lists of ``"flag=value"``.

Both read /etc/rancher/{rke2,k3s}/config.yaml and then config.yaml.d/*.yaml in name order. In
those files a later key replaces an earlier one, while ``key+`` appends to it. So a drop-in
file gets ``kube-apiserver-arg+`` (adds to what config.yaml sets) and config.yaml itself gets
the plain key. When a flag repeats on the command line, its last value wins.
"""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import DISTRIBUTIONS as DISTRIBUTION_TABLE
from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import RANCHER
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

Rendered = namedtuple("Rendered", "document changes")

DISTRIBUTIONS = RANCHER
ARG_KEYS = (
    "kube-apiserver-arg",
    "kube-controller-manager-arg",
    "kube-scheduler-arg",
    "kubelet-arg",
    "kube-proxy-arg",
    "etcd-arg",
)


def config_dir(distribution: str) -> str:
    if distribution not in DISTRIBUTIONS:
        raise FileEditError(f"unknown distribution {distribution!r} for a Rancher config file (want rke2 or k3s)")
    return DISTRIBUTION_TABLE[distribution].config_dir


def is_drop_in(path: str) -> bool:
    """True for files in a config.yaml.d directory."""
    return path.replace("\\", "/").rstrip("/").split("/")[-2:-1] == ["config.yaml.d"]


def _stored_key(document, key: str, source: str):
    """Which spelling of ``key`` the document uses (``key`` or ``key+``); None when neither."""
    present = [name for name in (key, key + "+") if name in document]
    if len(present) > 1:
        raise FileEditError(f"{source} sets both {key} and {key}+; merge them by hand first")
    return present[0] if present else None


def _items(document, stored: str | None, source: str) -> list:
    if stored is None:
        return []
    value = document[stored]
    if isinstance(value, str):  # a single "flag=value" is allowed instead of a list
        return [value]
    if value is None:
        return []
    if not isinstance(value, list):
        raise FileEditError(f"{source}: {stored} must be a list of \"flag=value\" strings, found {type(value).__name__}")
    return value


def _check_key(key, source: str) -> None:
    if key not in ARG_KEYS:
        raise FileEditError(f"{source}: unknown argument list {key!r} (known: {', '.join(ARG_KEYS)})")


def render(document, args: dict, source: str, drop_in: bool = False) -> Rendered:
    """Apply ``{"kube-apiserver-arg": {flag: value|None}, ...}``; ``drop_in`` picks ``key+`` for new keys."""
    if not isinstance(args, dict):
        raise FileEditError(f"{source}: args must be a mapping like {{kube-apiserver-arg: {{flag: value}}}}, got {args!r}")
    planned = []
    for key, wanted in yamldoc.plain(args, source).items():  # playbook variables arrive as tagged strings
        _check_key(key, source)
        stored = _stored_key(document, key, source)
        current = flaglib.read_list(_items(document, stored, source), "")
        changes = flaglib.plan(current, wanted, None, f"{source} {stored or key}")
        if changes:
            planned.append((key, stored, changes, current))
    if not planned:
        return Rendered(document, [])
    new_document = yamldoc.copy_document(document)
    lines = []
    for key, stored, changes, current in planned:
        name = stored or (key + "+" if drop_in else key)
        items = new_document.get(name)
        if not isinstance(items, list):
            items = new_document[name] = [] if items is None else [items]
        yamldoc.refuse_shared(items, f"{source} {name}")
        flaglib.apply_to_list(items, changes, "")
        if not items:
            del new_document[name]
        lines.extend(flaglib.describe(changes, current, name))
    return Rendered(new_document, lines)


def read_args(document, source: str) -> list:
    """``[(key, appends, {flag: [values]})]`` for each argument list the document sets.

    A file may set both ``key`` and ``key+``; the plain key comes first, then the appended one.
    """
    found = []
    for key in ARG_KEYS:
        for stored in (key, key + "+"):
            if stored in document:
                found.append((key, stored.endswith("+"), flaglib.read_list(_items(document, stored, source), "")))
    return found


def merge_files(documents: list) -> dict:
    """Effective ``{key: {flag: [values]}}`` of config.yaml followed by drop-ins, in order.

    ``documents`` is ``[(source, document)]``. A plain key replaces what earlier files set,
    ``key+`` appends; within the merged list the last value of a flag is the one that counts.
    """
    effective = {}
    for source, document in documents:
        for key, appends, flags in read_args(document, source):
            merged = effective.get(key, {}) if appends else {}
            for flag, values in flags.items():
                merged.setdefault(flag, []).extend(values)
            effective[key] = merged
    return effective
