"""The slice of the kubelet's volume manager that the attach-detach controller depends on.

kwok knows nothing about volumes. A real kubelet, for each pod bound to it:
1. adds the pod's attachable volumes to node.status.volumesInUse ("reported in use");
2. waits until the attach-detach controller lists them in node.status.volumesAttached
   (i.e. the CSI attacher marked the VolumeAttachment attached);
3. mounts them, creates the sandbox (condition PodReadyToStartContainers=True) and starts containers;
4. after the pod is gone, unmounts and drops the volumes from volumesInUse, which lets the
   controller detach.
The controller never detaches a volume still in volumesInUse from a healthy node, and from an
unhealthy node only after 6 minutes or when the node has the out-of-service taint. Reporting
volumesInUse is therefore what makes non-graceful failover in the lab behave as in production.

This class does steps 1, 2, 4 and the sandbox condition of step 3; kwok's pod-start stage waits
for that condition and does the rest.
"""

from __future__ import annotations

import datetime
import logging
import time

from kubernetes.client.rest import ApiException

CSI_PLUGIN = "kubernetes.io/csi"
SANDBOX_CONDITION = "PodReadyToStartContainers"
FINISHED_PHASES = ("Succeeded", "Failed")

log = logging.getLogger("volume-manager")


def unique_volume_name(driver: str, volume_handle: str) -> str:
    """The name the attach-detach controller uses in volumesAttached/volumesInUse for a CSI volume."""
    return f"{CSI_PLUGIN}/{driver}^{volume_handle}"


def _has_true_condition(pod, kind: str) -> bool:
    return any(c.type == kind and c.status == "True" for c in (pod.status.conditions or []))


class VolumeManager:
    def __init__(self, core, storage, node_name: str, status_update_seconds: float):
        self.core = core
        self.storage = storage
        self.node_name = node_name
        self.status_update_seconds = status_update_seconds
        self._last_node_write = 0.0
        # True while the last sync left something to do (a held-back write, an unbound claim).
        self.pending = True
        self._attach_required: dict[str, bool] = {}
        self._pv_by_claim: dict[str, tuple[str, str] | None] = {}

    def _driver_requires_attach(self, driver: str) -> bool:
        if driver not in self._attach_required:
            try:
                csi_driver = self.storage.read_csi_driver(driver)
                required = csi_driver.spec.attach_required
                self._attach_required[driver] = True if required is None else bool(required)
            except ApiException as error:
                if error.status != 404:
                    raise
                # No CSIDriver object: the controller treats the volume as attachable.
                return True
        return self._attach_required[driver]

    def _claim_volume(self, namespace: str, claim_name: str) -> tuple[str, str] | None:
        """(driver, volumeHandle) of the CSI PV bound to a claim, or None while unbound / not CSI."""
        key = f"{namespace}/{claim_name}"
        if self._pv_by_claim.get(key):
            return self._pv_by_claim[key]
        claim = self.core.read_namespaced_persistent_volume_claim(claim_name, namespace)
        if claim.status.phase != "Bound" or not claim.spec.volume_name:
            return None
        pv = self.core.read_persistent_volume(claim.spec.volume_name)
        csi = pv.spec.csi
        result = (csi.driver, csi.volume_handle) if csi else None
        self._pv_by_claim[key] = result
        return result

    def attachable_volumes(self, pod) -> set[str] | None:
        """Unique names of the pod's volumes that need attaching; None if one is not bound yet."""
        names = set()
        for volume in pod.spec.volumes or []:
            claim = volume.persistent_volume_claim
            if claim is None:
                continue
            csi = self._claim_volume(pod.metadata.namespace, claim.claim_name)
            if csi is None:
                return None
            driver, handle = csi
            if self._driver_requires_attach(driver):
                names.add(unique_volume_name(driver, handle))
        return names

    def _mark_sandbox_ready(self, pod) -> None:
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {"status": {"conditions": [
            {"type": SANDBOX_CONDITION, "status": "True", "lastTransitionTime": now},
        ]}}
        self.core.patch_namespaced_pod_status(pod.metadata.name, pod.metadata.namespace, body)
        log.info("pod %s/%s: volumes attached and mounted, sandbox ready",
                 pod.metadata.namespace, pod.metadata.name)

    def sync(self) -> None:
        pods = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={self.node_name}").items
        node = self.core.read_node(self.node_name)
        attached = {v.name for v in (node.status.volumes_attached or [])}
        reported = set(node.status.volumes_in_use or [])
        in_use: set[str] = set()
        pending = False
        for pod in pods:
            if pod.metadata.deletion_timestamp or pod.status.phase in FINISHED_PHASES:
                continue  # kwok removes deleted pods at once; their volumes are unmounted with them
            volumes = self.attachable_volumes(pod)
            if volumes is None:
                pending = True  # claim not bound yet: look again soon
                continue
            in_use |= volumes
            if _has_true_condition(pod, SANDBOX_CONDITION):
                continue
            # Mount only volumes already reported in use and attached, as the kubelet does.
            if volumes <= attached and volumes <= reported:
                self._mark_sandbox_ready(pod)
            else:
                pending = True
        now = time.monotonic()
        if in_use != reported:
            if now - self._last_node_write >= self.status_update_seconds:
                self.core.patch_node_status(self.node_name, {"status": {"volumesInUse": sorted(in_use)}})
                self._last_node_write = now
                log.info("node %s: volumesInUse %s", self.node_name, sorted(in_use) or "[]")
            else:
                pending = True  # written at the next status update
        self.pending = pending
