# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The not-ready/unreachable tolerations a pod carries, against the defaults the API server adds now.

The API server's DefaultTolerationSeconds admission plugin adds ``node.kubernetes.io/not-ready`` and
``node.kubernetes.io/unreachable`` NoExecute tolerations with ``--default-*-toleration-seconds`` to a pod that has
none for the key, when the pod is created. A pod keeps them for its whole life: after tune-failover changes the
defaults, a pod that was running before keeps the old seconds until it is created again. A pod whose own template
sets the toleration keeps that value whatever the defaults are; recreating it changes nothing.

Plain data in, plain data out (Pod objects and pod templates as the API returns them).
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import kubernetes_defaults
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import NEWEST_SUPPORTED, Version

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
KEYS = (NOT_READY, UNREACHABLE)
# What the API server adds when its --default-*-toleration-seconds flags are not set (the same in every version).
_STOCK = kubernetes_defaults(Version(*NEWEST_SUPPORTED, 0))
API_SERVER_DEFAULTS = {NOT_READY: _STOCK.not_ready_toleration_seconds, UNREACHABLE: _STOCK.unreachable_toleration_seconds}


def cluster_defaults(not_ready_seconds=None, unreachable_seconds=None) -> dict:
    """{key: seconds} the API server adds now; None for a flag that is not set (the API server's own default)."""
    given = {NOT_READY: not_ready_seconds, UNREACHABLE: unreachable_seconds}
    return {key: API_SERVER_DEFAULTS[key] if given[key] is None else int(given[key]) for key in KEYS}


def by_design(pod: dict) -> bool:
    """DaemonSet pods tolerate both taints without limit by design, and mirror (static) pods are never evicted."""
    metadata = pod.get("metadata") or {}
    owners = [owner.get("kind") for owner in metadata.get("ownerReferences") or []]
    return "DaemonSet" in owners or "kubernetes.io/config.mirror" in (metadata.get("annotations") or {})


def mismatches(pod_spec: dict, defaults: dict) -> list:
    """[{key, seconds, default}] for each NoExecute not-ready/unreachable toleration of ``pod_spec`` whose seconds differ
    from ``defaults`` ({key: seconds}); ``seconds`` is "unbounded" for a toleration without tolerationSeconds."""
    found = []
    for toleration in (pod_spec or {}).get("tolerations") or []:
        key = toleration.get("key", "")
        if key not in defaults or toleration.get("effect", "NoExecute") != "NoExecute":
            continue
        seconds = toleration.get("tolerationSeconds")
        if seconds is None or int(seconds) != defaults[key]:
            found.append({"key": key, "seconds": "unbounded" if seconds is None else int(seconds), "default": defaults[key]})
    return found


def set_by_template(template_spec: dict) -> set:
    """The keys of KEYS that a pod template sets itself (any effect): the admission plugin leaves those alone."""
    return {toleration.get("key") for toleration in (template_spec or {}).get("tolerations") or []} & set(KEYS)


def admitted_with_old_defaults(pod: dict, template_spec: dict | None, defaults: dict) -> list:
    """The mismatches of ``pod`` that a new pod from ``template_spec`` would not have: tolerations the admission
    plugin added with earlier defaults. ``template_spec`` None: a bare pod (no template), every mismatch counts."""
    if by_design(pod):
        return []
    own = set_by_template(template_spec) if template_spec is not None else set()
    return [entry for entry in mismatches(pod.get("spec") or {}, defaults) if entry["key"] not in own]
