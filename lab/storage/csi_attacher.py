"""external-attacher stand-in for the lab CSI driver (lab.csi.nodeguard.dev).

Does to VolumeAttachments what the csi-attacher sidecar does after a successful
ControllerPublishVolume / ControllerUnpublishVolume, without any storage behind it:
- new VolumeAttachment for our driver: add the finalizer, then set status.attached=true;
- VolumeAttachment being deleted (the attach-detach controller detaches): set
  status.attached=false and remove the finalizer, which lets the object go.
The attach-detach controller decides when to attach and detach (including the 6-minute force
detach and the out-of-service taint); this only answers it.

Runs in the lab container ng-csi-attacher (see storage.sh) with its own identity, and watches
VolumeAttachments; a broken watch (apiserver restart) is simply started again.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from kubernetes import client, config, watch

DRIVER = "lab.csi.nodeguard.dev"
# The real sidecar's finalizer name: external-attacher/<driver name with dots as dashes>.
FINALIZER = "external-attacher/" + DRIVER.replace(".", "-")

log = logging.getLogger("csi-attacher")


def reconcile(storage, attachment) -> None:
    if attachment.spec.attacher != DRIVER:
        return
    name = attachment.metadata.name
    finalizers = attachment.metadata.finalizers or []
    attached = bool(attachment.status and attachment.status.attached)
    where = f"{attachment.spec.source.persistent_volume_name} on {attachment.spec.node_name}"

    if attachment.metadata.deletion_timestamp:
        if FINALIZER not in finalizers:
            return
        if attached:
            storage.patch_volume_attachment_status(name, {"status": {"attached": False}})
        storage.patch_volume_attachment(name, {"metadata": {"$deleteFromPrimitiveList/finalizers": [FINALIZER]}})
        log.info("detached %s (%s)", name, where)
        return

    if FINALIZER not in finalizers:
        storage.patch_volume_attachment(name, {"metadata": {"finalizers": [FINALIZER]}})
    if not attached:
        storage.patch_volume_attachment_status(name, {"status": {"attached": True, "attachmentMetadata": {}}})
        log.info("attached %s (%s)", name, where)


def run(storage) -> None:
    while True:
        try:
            # A watch without resourceVersion starts with an ADDED event per existing object.
            for event in watch.Watch().stream(storage.list_volume_attachment, timeout_seconds=300):
                if event["type"] in ("ADDED", "MODIFIED"):
                    reconcile(storage, event["object"])
        except Exception as error:  # noqa: BLE001 - keep serving through apiserver restarts
            log.warning("watch interrupted: %s", error)
            time.sleep(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stdout)
    config.load_kube_config(config_file=args.kubeconfig)
    log.info("serving VolumeAttachments of %s", DRIVER)
    run(client.StorageV1Api())
    return 0


if __name__ == "__main__":
    sys.exit(main())
