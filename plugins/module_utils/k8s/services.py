# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The few API calls the incident code makes, returning plain dicts (API field names, camelCase).

Everything above this file works on dicts, so unit tests replace ``Cluster`` with a fake.
Every call is narrow on purpose: pods are only ever listed by node or by label in one namespace.
"""

from __future__ import annotations

import json
import time

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError

try:
    from kubernetes import client as k8s_client
    from kubernetes.client.rest import ApiException
    from urllib3.exceptions import HTTPError as Urllib3Error
except ImportError:  # reported by the module through client.HAS_KUBERNETES
    ApiException = Urllib3Error = None

NODE_LEASE_NAMESPACE = "kube-node-lease"

# medik8s, the other node remediator node-outage stays out of the way of (incident/safety.py): its custom
# resources by plural -> (API group, version), as the medik8s operators serve them. All are listed cluster-wide.
MEDIK8S_RESOURCES = {
    "nodehealthchecks": ("remediation.medik8s.io", "v1alpha1"),  # cluster-scoped
    "fenceagentsremediations": ("fence-agents-remediation.medik8s.io", "v1alpha1"),  # namespaced, named after the node
    "selfnoderemediations": ("self-node-remediation.medik8s.io", "v1alpha1"),  # namespaced, named after the node
}


# Every read asks for a gzip-compressed answer. The apiserver compresses answers above 128 KiB (feature
# APIResponseCompression, on by default since Kubernetes 1.16) and sends smaller ones as they are; urllib3
# inflates them before they are parsed. The full Node list, which the safety rules read at each decision
# (incident/node_list.py), is about 11 KB per Node as JSON and far less compressed (docs/runbooks/node-outage.md,
# 'What one incident reads').
COMPRESSED = {"Accept-Encoding": "gzip"}


# How long one call may wait (seconds), at most: to connect (TCP and TLS) and then for each read of the answer.
# Each is cut to fit the run's lock (call_timeouts), so a call that is never answered ends well before the lock expires.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 20.0


def call_timeouts(lock_ttl_seconds=None) -> tuple:
    """(connect, read) seconds for every call of a run holding a lock of ``lock_ttl_seconds``.

    The worst a call can take is two connects (client.RETRIES retries a failed connect once) and one read:
    1.5 times the read timeout. That stays within a quarter of the lock's TTL, and the lock is renewed every third
    of it, so a run whose call is never answered stops, and releases its lock, before the lock expires."""
    read = READ_TIMEOUT if not lock_ttl_seconds else max(1.0, min(READ_TIMEOUT, lock_ttl_seconds / 6.0))
    return min(CONNECT_TIMEOUT, read / 4.0), read


class ConflictError(ClusterError):
    """The object changed since we read it (HTTP 409): re-read and decide again."""


class NoAnswerError(ClusterError):
    """The call got no HTTP answer (no connection, a timeout, the connection dropped): a write may or may not have
    been taken (patch_node_confirmed reads it back)."""


class WriteUnknownError(ClusterError):
    """A write's answer was lost and reading the object back did not show whether it was taken."""


class RunDeadlineError(ClusterError):
    """The run's deadline (Cluster.set_deadline) has passed: the call was not sent."""


class Cluster:
    """Thin wrapper around kubernetes.client typed APIs."""

    def __init__(self, api_client, timeouts: tuple = (CONNECT_TIMEOUT, READ_TIMEOUT)):
        self._api = api_client
        self._timeouts = timeouts  # (connect, read) seconds of every call: call_timeouts
        self._deadline = None  # (monotonic time, seconds given): set_deadline
        self.core = k8s_client.CoreV1Api(api_client)
        self.apps = k8s_client.AppsV1Api(api_client)
        self.storage = k8s_client.StorageV1Api(api_client)
        self.coordination = k8s_client.CoordinationV1Api(api_client)
        self.version_api = k8s_client.VersionApi(api_client)
        self.custom = k8s_client.CustomObjectsApi(api_client)

    # -- plumbing -----------------------------------------------------------------------------
    def set_deadline(self, seconds: float) -> None:
        """The run's deadline, ``seconds`` from now on this machine's monotonic clock: after it no call is sent
        (RunDeadlineError names the call), but for the release of a lock (delete_lease)."""
        self._deadline = (time.monotonic() + seconds, seconds)

    def _check_deadline(self, what: str) -> None:
        if self._deadline is not None and time.monotonic() >= self._deadline[0]:
            raise RunDeadlineError(
                f"{what}: not sent: the run's deadline ({self._deadline[1]:.0f}s, the sum of its waits and timeouts) has passed. "
                "The run stopped before this call; the cluster is as the incident record on the Node says"
            )

    def _call(self, what: str, fn, *args, missing_ok: bool = False, past_deadline: bool = False, **kwargs):
        # The API's own JSON, parsed once: building typed client objects and turning them back
        # into dicts took seconds for the Node list of a 1000-node cluster (docs/benchmarks).
        # Compressed on the wire (COMPRESSED): the full Node list is most of what an incident reads.
        if not past_deadline:
            self._check_deadline(what)
        try:
            response = fn(*args, _preload_content=False, _headers=dict(COMPRESSED), _request_timeout=self._timeouts, **kwargs)
            body = response.data
        except ApiException as e:
            if missing_ok and e.status == 404:
                return None
            if e.status == 409:
                raise ConflictError(f"{what}: conflict, the object changed meanwhile: {_message(e)}") from e
            raise ClusterError(f"{what}: API answered {e.status} {e.reason}: {_message(e)}") from e
        except Urllib3Error as e:  # no HTTP status: refused, timed out (call_timeouts) or dropped
            reason = getattr(e, "reason", None) or e  # urllib3's MaxRetryError wraps the last error
            raise NoAnswerError(f"{what}: no answer from the API server ({self._api.configuration.host}): {reason}") from e
        return json.loads(body) if body else None

    # -- cluster ------------------------------------------------------------------------------
    def server_version(self) -> str:
        return self._call("read server version", self.version_api.get_code)["gitVersion"]

    # -- nodes --------------------------------------------------------------------------------
    def get_node(self, name: str):
        return self._call(f"read node {name}", self.core.read_node, name, missing_ok=True)

    def list_nodes(self) -> list:
        return self._call("list nodes", self.core.list_node)["items"]

    def patch_node(self, name: str, patch: dict) -> dict:
        """JSON merge patch. Put metadata.resourceVersion in the patch to make it conditional."""
        return self._call(
            f"patch node {name}",
            self.core.patch_node,
            name,
            patch,
            _content_type="application/merge-patch+json",
        )

    def get_node_lease(self, name: str):
        return self._call(
            f"read lease of node {name}",
            self.coordination.read_namespaced_lease,
            name,
            NODE_LEASE_NAMESPACE,
            missing_ok=True,
        )

    # -- pods ---------------------------------------------------------------------------------
    def list_pods_on_node(self, node: str) -> list:
        return self._call(
            f"list pods on node {node}",
            self.core.list_pod_for_all_namespaces,
            field_selector=f"spec.nodeName={node}",
        )["items"]

    def get_pod(self, namespace: str, name: str):
        return self._call(f"read pod {namespace}/{name}", self.core.read_namespaced_pod, name, namespace, missing_ok=True)

    def list_pods(self, namespace: str, label_selector: str) -> list:
        return self._call(
            f"list pods in {namespace} ({label_selector})",
            self.core.list_namespaced_pod,
            namespace,
            label_selector=label_selector,
        )["items"]

    def force_delete_pod(self, namespace: str, name: str, uid: str) -> bool:
        """Delete with grace 0, only the incarnation ``uid``. False when that incarnation is already gone.

        A 409 answer means the UID precondition failed: the pod of that name is now another incarnation. That
        happens when PodGC force-deleted ours first (it does so for pods on a node with the out-of-service taint)
        and a StatefulSet re-created the pod under the same name. kube-apiserver words this answer two ways (the
        registry's "the UID in the precondition ... does not match the UID in record", storage's "Precondition
        failed"), so the pod is read again instead of trusting either text: gone, or another UID, is not an error.
        """
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        try:
            deleted = self._call(
                f"delete pod {namespace}/{name}",
                self.core.delete_namespaced_pod,
                name,
                namespace,
                body=body,
                grace_period_seconds=0,
                missing_ok=True,
            )
        except ConflictError:
            current = self.get_pod(namespace, name)
            if current is not None and current["metadata"].get("uid") == uid:
                raise  # our incarnation is still there: a conflict we do not understand, never a success
            return False
        return deleted is not None

    # -- owners -------------------------------------------------------------------------------
    def get_replicaset(self, namespace: str, name: str):
        return self._call(f"read replicaset {namespace}/{name}", self.apps.read_namespaced_replica_set, name, namespace, missing_ok=True)

    def get_deployment(self, namespace: str, name: str):
        return self._call(f"read deployment {namespace}/{name}", self.apps.read_namespaced_deployment, name, namespace, missing_ok=True)

    # -- volumes ------------------------------------------------------------------------------
    def list_volume_attachments(self) -> list:
        # VolumeAttachments have no field selector for spec.nodeName; callers filter.
        return self._call("list volumeattachments", self.storage.list_volume_attachment)["items"]

    def delete_volume_attachment(self, name: str) -> None:
        self._call(f"delete volumeattachment {name}", self.storage.delete_volume_attachment, name, missing_ok=True)

    # -- leases (locks) -----------------------------------------------------------------------
    def get_lease(self, namespace: str, name: str):
        return self._call(f"read lease {namespace}/{name}", self.coordination.read_namespaced_lease, name, namespace, missing_ok=True)

    def create_lease(self, namespace: str, body: dict) -> dict:
        return self._call(
            # The lock namespace comes with deploy/rbac/; say so, as a 404 here usually means it was not applied.
            f"create lease {namespace}/{body['metadata']['name']} (the lock namespace comes from deploy/rbac/, see docs/rbac.md)",
            self.coordination.create_namespaced_lease,
            namespace,
            body,
        )

    def replace_lease(self, namespace: str, body: dict) -> dict:
        """Replace; body.metadata.resourceVersion makes it fail with ConflictError if someone else wrote."""
        name = body["metadata"]["name"]
        return self._call(f"update lease {namespace}/{name}", self.coordination.replace_namespaced_lease, name, namespace, body)

    def delete_lease(self, namespace: str, name: str, resource_version: str) -> None:
        """Also after the run's deadline: the release of a lock must not wait for the lock to expire."""
        body = {"preconditions": {"resourceVersion": resource_version}}
        self._call(
            f"delete lease {namespace}/{name}",
            self.coordination.delete_namespaced_lease,
            name,
            namespace,
            body=body,
            missing_ok=True,
            past_deadline=True,
        )

    # -- incident history (config maps) -------------------------------------------------------
    def get_config_map(self, namespace: str, name: str):
        return self._call(f"read configmap {namespace}/{name}", self.core.read_namespaced_config_map, name, namespace, missing_ok=True)

    def create_config_map(self, namespace: str, body: dict) -> dict:
        """Create; ConflictError when it exists already (another writer was first)."""
        return self._call(f"create configmap {namespace}/{body['metadata']['name']}", self.core.create_namespaced_config_map, namespace, body)

    def replace_config_map(self, namespace: str, body: dict) -> dict:
        """Replace; body.metadata.resourceVersion makes it fail with ConflictError if someone else wrote."""
        name = body["metadata"]["name"]
        return self._call(f"update configmap {namespace}/{name}", self.core.replace_namespaced_config_map, name, namespace, body)

    # -- other remediators (medik8s) -----------------------------------------------------------
    def list_medik8s(self, plural: str):
        """Every object of a medik8s resource (MEDIK8S_RESOURCES), in all namespaces; None when the API does not
        serve it (404: the CRD is not installed, so that medik8s operator is not there)."""
        group, version = MEDIK8S_RESOURCES[plural]
        found = self._call(f"list {plural}.{group}", self.custom.list_cluster_custom_object, group, version, plural, missing_ok=True)
        return None if found is None else found["items"]

    # -- events -------------------------------------------------------------------------------
    def create_event(self, namespace: str, body: dict) -> dict:
        return self._call("create event", self.core.create_namespaced_event, namespace, body)


def patch_node_confirmed(cluster, name: str, patch: dict, landed) -> dict:
    """``cluster.patch_node`` for a write made conditional on ``patch["metadata"]["resourceVersion"]``, whose answer
    may be lost: the API may have taken the write and the reply never came (NoAnswerError). Then the Node is read
    again: returned when ``landed(node)`` shows this write on it; ConflictError when the Node has moved on without
    it (the conditional write can never be taken now: decide again); WriteUnknownError when the Node is as before
    (the write may still be taken) or cannot be read."""
    try:
        return cluster.patch_node(name, patch)
    except NoAnswerError as lost:
        try:
            node = cluster.get_node(name)
        except ClusterError as e:
            raise WriteUnknownError(f"{lost}; reading node {name} back failed too ({e}): whether the write was taken is unknown") from lost
        if node is not None and landed(node):
            return node
        if node is None or node["metadata"].get("resourceVersion") != patch["metadata"]["resourceVersion"]:
            raise ConflictError(f"{lost}; node {name} read back has changed without this write: it was not taken") from lost
        raise WriteUnknownError(f"{lost}; node {name} read back is unchanged, so the write may still be taken") from lost


def _message(error) -> str:
    """The API's own message out of an ApiException body, else its text."""
    try:
        return json.loads(error.body).get("message") or str(error.body)
    except (TypeError, ValueError, AttributeError):
        return str(error.body or error)
