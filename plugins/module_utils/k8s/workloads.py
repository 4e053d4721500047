# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workloads for tune-failover: a pod's owner, rolling it as `kubectl rollout restart` does, and its rollout's state
(plugins/module_utils/rollout.py, module failover_toleration_rollout).

This is tuning, run with the tuning credentials: none of these calls is the incident remediator's, so they live
outside services.Cluster (whose calls deploy/rbac grants, tests/unit/deploy/test_rbac_matches_calls.py).
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import Cluster

# The owners a restart recreates pods of, by kind -> the AppsV1Api methods' resource name.
ROLLABLE = {"Deployment": "deployment", "StatefulSet": "stateful_set", "DaemonSet": "daemon_set"}
# What `kubectl rollout restart` writes: a new pod template, so the controller replaces every pod in its own order.
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


class Workloads(Cluster):
    """The reads and the one write (a template annotation) that rolling a workload needs."""

    def list_pods_in(self, namespaces) -> list:
        """The pods of these namespaces; every namespace's when ``namespaces`` is empty."""
        if not namespaces:
            return self._call("list pods in all namespaces", self.core.list_pod_for_all_namespaces)["items"]
        return [pod for namespace in namespaces
                for pod in self._call(f"list pods in {namespace}", self.core.list_namespaced_pod, namespace)["items"]]

    def get_workload(self, kind: str, namespace: str, name: str):
        read = getattr(self.apps, f"read_namespaced_{ROLLABLE[kind]}")
        return self._call(f"get {kind} {namespace}/{name}", read, name, namespace, missing_ok=True)

    def restart(self, kind: str, namespace: str, name: str, at: str) -> dict:
        patch = getattr(self.apps, f"patch_namespaced_{ROLLABLE[kind]}")
        body = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: at}}}}}
        return self._call(f"restart {kind} {namespace}/{name}", patch, name, namespace, body)


def controller_of(metadata: dict):
    """(kind, name) of the object's controller (ownerReferences with controller: true), or None."""
    for owner in metadata.get("ownerReferences") or []:
        if owner.get("controller"):
            return owner.get("kind"), owner.get("name")
    return None


def owner_of(workloads: Workloads, pod: dict, cache: dict):
    """The workload a restart recreates ``pod`` through: {kind, namespace, name, object}, the pod's other controller
    as {kind, namespace, name, object: None} (a Job, a ReplicaSet nobody owns: nothing to roll), or None for a bare
    pod. ReplicaSets are followed to their Deployment. ``cache`` keeps what was read, by (kind, namespace, name)."""
    metadata = pod.get("metadata") or {}
    namespace = metadata.get("namespace", "")
    controller = controller_of(metadata)
    if controller is None:
        return None
    kind, name = controller
    if kind == "ReplicaSet":
        replica_set = _cached(cache, ("ReplicaSet", namespace, name), lambda: workloads.get_replicaset(namespace, name))
        parent = controller_of((replica_set or {}).get("metadata") or {})
        if parent is None or parent[0] != "Deployment":
            return {"kind": kind, "namespace": namespace, "name": name, "object": None}
        kind, name = parent
    if kind not in ROLLABLE:
        return {"kind": kind, "namespace": namespace, "name": name, "object": None}
    found = _cached(cache, (kind, namespace, name), lambda: workloads.get_workload(kind, namespace, name))
    return {"kind": kind, "namespace": namespace, "name": name, "object": found}


def _cached(cache: dict, key: tuple, read):
    if key not in cache:
        cache[key] = read()
    return cache[key]


def rollout_status(kind: str, workload: dict) -> tuple:
    """(done, what is left) of a workload's rollout, as `kubectl rollout status` judges it: the controller saw the
    new generation, and every replica is updated and available (ready for a StatefulSet)."""
    metadata, spec, status = workload.get("metadata") or {}, workload.get("spec") or {}, workload.get("status") or {}
    if status.get("observedGeneration", 0) < metadata.get("generation", 0):
        return False, "the controller has not yet seen the new template"
    if kind == "Deployment":
        wanted = spec.get("replicas", 1)
        counts = (status.get("updatedReplicas", 0), status.get("replicas", 0), status.get("availableReplicas", 0))
        done = counts[0] >= wanted and counts[1] <= counts[0] and counts[2] >= counts[0]
        return done, f"{counts[0]} of {wanted} updated, {counts[1]} in all, {counts[2]} available"
    if kind == "StatefulSet":
        wanted = spec.get("replicas", 1)
        revision_done = status.get("updateRevision") == status.get("currentRevision")
        updated, ready = status.get("updatedReplicas", 0), status.get("readyReplicas", 0)
        done = (revision_done or updated >= wanted) and ready >= wanted
        return done, f"{updated} of {wanted} updated, {ready} ready"
    wanted = status.get("desiredNumberScheduled", 0)
    updated, available = status.get("updatedNumberScheduled", 0), status.get("numberAvailable", 0)
    return updated >= wanted and available >= wanted, f"{updated} of {wanted} updated, {available} available"
