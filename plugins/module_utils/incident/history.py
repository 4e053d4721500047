# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Durable incident history: one ConfigMap per node in the lock namespace, the last KEEP incident records
(fewer when they would not fit in one ConfigMap).

Events expire after an hour and the Node annotation holds only the latest incident; the history keeps
every record (also an ``interrupted`` one that a new run replaces on the Node) until KEEP newer ones exist.
Each key is an incident id, each value the record as JSON. Writes are conditional (resourceVersion):
two writers never lose each other's entries.

Only the remediator writes it, and only records it wrote itself (events.Recorder copies each record it saves), never
one read back from the Node annotation: the node's own kubelet, or anyone who may patch nodes, can write that. A run
that continues from the Node's record (node-outage's resume, node-recover) first compares it with its copy here
(compare): node-recover believes a record only as this history has it.
"""

from __future__ import annotations

import hashlib
import json

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import RefusedError
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError

# What the proofs read from an incident record: the Node's record is believed only where it agrees with its copy here.
TRUSTED_FIELDS = ("id", "node", "node_uid", "identity", "first_not_ready")

PREFIX = "nodeguard-history-"
KEEP = 20
MAX_BYTES = 900 * 1024  # a ConfigMap holds at most 1 MiB: the oldest incidents go first when records are large
_NAME_MAX = 253


def config_map_name(node: str) -> str:
    name = PREFIX + node
    if len(name) <= _NAME_MAX:
        return name
    digest = hashlib.sha256(node.encode()).hexdigest()[:12]
    return f"{name[: _NAME_MAX - 13]}-{digest}"


def _started(record: dict) -> str:
    return record.get("started") or ((record.get("steps") or {}).get("prove") or {}).get("start") or record.get("id") or ""


def entries(config_map) -> list:
    """The records in a history ConfigMap, oldest first. Entries that are not JSON records are skipped."""
    found = []
    for text in ((config_map or {}).get("data") or {}).values():
        try:
            record = json.loads(text)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("id"):
            found.append(record)
    return sorted(found, key=lambda r: (_started(r), r["id"]))


def _body(namespace: str, node: str, records: list, resource_version=None) -> dict:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": config_map_name(node),
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "nodeguard.failover"},
            "annotations": {"failover.nodeguard.io/node": node},
        },
        "data": {r["id"]: json.dumps(r, sort_keys=True, separators=(",", ":")) for r in records},
    }
    if resource_version:
        body["metadata"]["resourceVersion"] = resource_version
    return body


def upsert(cluster, namespace: str, record: dict, keep: int = KEEP) -> None:
    """Add or update ``record`` in its node's history, keeping the newest ``keep``. Raises ClusterError."""
    node = record["node"]
    for _attempt in range(5):
        current = cluster.get_config_map(namespace, config_map_name(node))
        kept = [r for r in entries(current) if r["id"] != record["id"]] + [record]
        kept = sorted(kept, key=lambda r: (_started(r), r["id"]))[-keep:]
        while len(kept) > 1 and len(json.dumps(_body("", node, kept)["data"])) > MAX_BYTES:
            kept = kept[1:]
        try:
            if current is None:
                cluster.create_config_map(namespace, _body(namespace, node, kept))
            else:
                cluster.replace_config_map(namespace, _body(namespace, node, kept, current["metadata"]["resourceVersion"]))
            return
        except ConflictError:
            continue  # another writer: re-read and merge again
    raise RefusedError("history-busy", f"the incident history of {node} kept changing; record {record['id']} was not archived")


def read(cluster, namespace: str, node: str) -> list:
    return entries(cluster.get_config_map(namespace, config_map_name(node)))


def _taint_end(record: dict):
    return ((record.get("steps") or {}).get("taint") or {}).get("end")


def compare(record: dict, kept: list) -> tuple:
    """(copy, differs) for the Node's ``record``: its copy among ``kept`` (read()), None when the history has none, and
    the TRUSTED_FIELDS (and ``steps.taint``, the taint time) in which the record differs from that copy (pure)."""
    copy = next((r for r in kept if r.get("id") == record["id"]), None)
    if copy is None:
        return None, []
    differs = [key for key in TRUSTED_FIELDS if record.get(key) != copy.get(key)]
    if _taint_end(record) != _taint_end(copy):
        differs.append("steps.taint")
    return copy, differs


def holds(cluster, namespace: str, node: str, incident_id: str) -> bool:
    """Whether the node's history has a copy of incident ``incident_id``. Raises ClusterError."""
    return any(r["id"] == incident_id for r in read(cluster, namespace, node))
