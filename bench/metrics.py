"""Counters from the apiserver's and etcd's /metrics, and what a measured window did to them.

Write cost, as the benchmark defines it:
- write requests: apiserver_request_total with verb POST, PUT, PATCH, DELETE (and DELETECOLLECTION);
- write bytes: apiserver_request_body_size_bytes_sum (the request bodies the apiserver received)
  for the verbs create, update, patch, delete, deletecollection. This is the client-to-apiserver
  traffic; the apiserver then writes whole objects to etcd, counted separately as
  etcd_network_client_grpc_received_bytes_total (on etcd's metrics port);
- etcd database growth: etcd_mvcc_db_total_size_in_bytes.
"""

from __future__ import annotations

import subprocess
from collections import defaultdict
from dataclasses import dataclass, field

import requests
from prometheus_client.parser import text_string_to_metric_families

WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION")
WRITE_BODY_VERBS = ("create", "update", "patch", "delete", "deletecollection")


@dataclass
class Snapshot:
    """The counters the benchmark needs, at one moment."""

    writes_by_resource: dict[str, float] = field(default_factory=dict)  # "verb resource/subresource" -> count
    write_body_bytes: float = 0.0
    etcd_db_bytes: float = 0.0
    etcd_received_bytes: float = 0.0


def _samples(text: str):
    for family in text_string_to_metric_families(text):
        yield from family.samples


def parse_apiserver(text: str, snapshot: Snapshot) -> None:
    writes: dict[str, float] = defaultdict(float)
    for sample in _samples(text):
        labels = sample.labels
        if sample.name == "apiserver_request_total" and labels.get("verb") in WRITE_VERBS:
            resource = labels.get("resource", "")
            if labels.get("subresource"):
                resource += "/" + labels["subresource"]
            writes[f"{labels['verb']} {resource}"] += sample.value
        elif sample.name == "apiserver_request_body_size_bytes_sum" and labels.get("verb") in WRITE_BODY_VERBS:
            snapshot.write_body_bytes += sample.value
    snapshot.writes_by_resource = dict(writes)


def parse_etcd(text: str, snapshot: Snapshot) -> None:
    for sample in _samples(text):
        if sample.name == "etcd_mvcc_db_total_size_in_bytes":
            snapshot.etcd_db_bytes = sample.value
        elif sample.name == "etcd_network_client_grpc_received_bytes_total":
            snapshot.etcd_received_bytes = sample.value


def scrape(kubectl: str, kubeconfig: str, etcd_metrics_url: str | None) -> Snapshot:
    snapshot = Snapshot()
    text = subprocess.run([kubectl, f"--kubeconfig={kubeconfig}", "get", "--raw", "/metrics"],
                          capture_output=True, text=True, check=True).stdout
    parse_apiserver(text, snapshot)
    if etcd_metrics_url:
        parse_etcd(requests.get(etcd_metrics_url, timeout=10).text, snapshot)
    return snapshot


def window(before: Snapshot, after: Snapshot, seconds: float) -> dict:
    """Rates over a window between two snapshots."""
    keys = set(before.writes_by_resource) | set(after.writes_by_resource)
    per_resource = {key: after.writes_by_resource.get(key, 0.0) - before.writes_by_resource.get(key, 0.0)
                    for key in keys}
    writes = sum(per_resource.values())
    return {
        "seconds": round(seconds, 1),
        "write_requests": int(writes),
        "write_rps": round(writes / seconds, 2),
        "write_bytes_per_s": round((after.write_body_bytes - before.write_body_bytes) / seconds, 1),
        "etcd_received_bytes_per_s": round((after.etcd_received_bytes - before.etcd_received_bytes) / seconds, 1),
        "etcd_db_growth_bytes_per_min": round((after.etcd_db_bytes - before.etcd_db_bytes) * 60 / seconds, 1),
        "etcd_db_bytes_end": int(after.etcd_db_bytes),
        "writes_per_resource": {key: int(value) for key, value in sorted(per_resource.items()) if value},
    }
