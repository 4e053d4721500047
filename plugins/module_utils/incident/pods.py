# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pods on a dead node are force-deleted, which are left alone, and why.

- mirror (static) pods belong to the kubelet; deleting the mirror does nothing useful.
- DaemonSet pods belong to the node; they come back with it.
- pods that tolerate the out-of-service taint chose to stay; they are reported, not deleted.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import OUT_OF_SERVICE_KEY
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import parse_time

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def owner(pod: dict):
    """(kind, name) of the controlling owner, or (None, None)."""
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    for ref in refs:
        if ref.get("controller"):
            return ref.get("kind"), ref.get("name")
    if refs:
        return refs[0].get("kind"), refs[0].get("name")
    return None, None


def is_mirror(pod: dict) -> bool:
    return MIRROR_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})


def is_daemonset_pod(pod: dict) -> bool:
    return owner(pod)[0] == "DaemonSet"


def tolerates_out_of_service(pod: dict) -> bool:
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        key = toleration.get("key") or ""
        effect = toleration.get("effect") or ""
        operator = toleration.get("operator") or "Equal"
        if effect not in ("", "NoExecute"):
            continue
        if key == OUT_OF_SERVICE_KEY:
            return True
        if not key and operator == "Exists":
            return True  # tolerates every taint
    return False


def summary(pod: dict) -> dict:
    """What the record keeps of a pod: enough to delete it safely and to find its replacement."""
    meta = pod["metadata"]
    kind, name = owner(pod)
    return {
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta["uid"],
        "owner_kind": kind,
        "owner_name": name,
    }


def classify(pods: list) -> dict:
    """Split the pods of a node into delete / skipped (with reason) / tolerating."""
    result = {"delete": [], "skipped": [], "tolerating": []}
    for pod in pods:
        entry = summary(pod)
        if is_mirror(pod):
            result["skipped"].append(dict(entry, reason="mirror (static) pod"))
        elif is_daemonset_pod(pod):
            result["skipped"].append(dict(entry, reason="DaemonSet pod"))
        elif tolerates_out_of_service(pod):
            result["tolerating"].append(dict(entry, reason="tolerates the out-of-service taint, will not move"))
        else:
            result["delete"].append(entry)
    return result


def is_running_ready(pod: dict) -> bool:
    if (pod.get("status") or {}).get("phase") != "Running" or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def ready_time(pod: dict):
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime"))
    return None


def old_incarnation(pods: list, since: float) -> list:
    """Pods bound to the node that predate the incident and should have gone.

    Mirror, DaemonSet and taint-tolerating pods belong on the node and are not counted: the danger is a
    pod whose replacement already runs elsewhere (two writers on one volume).
    """
    old = []
    for pod in pods:
        created = parse_time((pod.get("metadata") or {}).get("creationTimestamp"))
        if is_mirror(pod) or is_daemonset_pod(pod) or tolerates_out_of_service(pod):
            continue
        if created is not None and created < since:
            old.append(summary(pod))
    return old
