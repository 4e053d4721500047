# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Did every StatefulSet and Deployment pod that was on the dead node get a Ready replacement elsewhere?

A StatefulSet pod's replacement has the same name and a new uid. A Deployment pod's replacement is any
Ready pod of the same Deployment, on another node, created after the incident began, not counted twice.
Other owners (Jobs, bare pods, plain ReplicaSets) are reported as not verified.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.pods import is_running_ready, ready_time
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import parse_time


def label_selector(selector: dict) -> str:
    """A LabelSelector object as the string the API's labelSelector parameter takes."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def group_key(old: dict):
    """The group an old pod's replacement is searched in, after owners were resolved (see resolve_groups)."""
    if old.get("owner_kind") == "StatefulSet":
        return ("StatefulSet", old["namespace"], old["name"])
    if old.get("deployment"):
        return ("Deployment", old["namespace"], old["deployment"])
    return None


def match(old_pods: list, candidates: dict, node: str, since: float) -> dict:
    """Pair old pods with replacements.

    ``candidates`` maps group_key -> list of current pods in that group.
    Returns {"replaced": [...], "waiting": [...], "unverified": [...]}.
    """
    used = set()
    result = {"replaced": [], "waiting": [], "unverified": []}
    old_uids = {p["uid"] for p in old_pods}
    for old in old_pods:
        key = group_key(old)
        label = f"{old['namespace']}/{old['name']}"
        owner = f"{old.get('owner_kind')}/{old.get('owner_name')}" if key is None or key[0] == "StatefulSet" else f"Deployment/{key[2]}"
        if key is None:
            result["unverified"].append({"pod": label, "owner": owner})
            continue
        found = None
        for pod in candidates.get(key, []):
            meta = pod["metadata"]
            created = parse_time(meta.get("creationTimestamp")) or 0
            if (
                meta["uid"] in old_uids
                or meta["uid"] in used
                or (pod.get("spec") or {}).get("nodeName") in (None, node)
                or created < since - 1
                or not is_running_ready(pod)
            ):
                continue
            found = pod
            break
        if found is None:
            result["waiting"].append({"pod": label, "owner": owner})
            continue
        used.add(found["metadata"]["uid"])
        ready_at = ready_time(found)
        result["replaced"].append(
            {
                "pod": label,
                "owner": owner,
                "replacement": f"{found['metadata']['namespace']}/{found['metadata']['name']}",
                "node": found["spec"]["nodeName"],
                "seconds": round(ready_at - since, 1) if ready_at else None,
            }
        )
    return result


def resolve_deployments(cluster, old_pods: list) -> list:
    """Add 'deployment' to pods owned by a ReplicaSet that a Deployment controls (one read per ReplicaSet)."""
    cache = {}
    resolved = []
    for old in old_pods:
        old = dict(old)
        if old.get("owner_kind") == "ReplicaSet":
            key = (old["namespace"], old["owner_name"])
            if key not in cache:
                rs = cluster.get_replicaset(*key)
                refs = ((rs or {}).get("metadata") or {}).get("ownerReferences") or []
                cache[key] = next((r["name"] for r in refs if r.get("kind") == "Deployment"), None)
            old["deployment"] = cache[key]
        resolved.append(old)
    return resolved


def gather_candidates(cluster, old_pods: list) -> dict:
    """Current pods per group: one pod read per StatefulSet pod, one labelled list per Deployment."""
    candidates = {}
    for old in old_pods:
        key = group_key(old)
        if key is None or key in candidates:
            continue
        kind, namespace, name = key
        if kind == "StatefulSet":
            pod = cluster.get_pod(namespace, name)
            candidates[key] = [pod] if pod else []
        else:
            deployment = cluster.get_deployment(namespace, name)
            if not deployment:
                candidates[key] = []
                continue
            selector = label_selector(deployment["spec"]["selector"])
            candidates[key] = cluster.list_pods(namespace, selector)
    return candidates
