"""kubelet stand-in for a lab worker container: kwok for Node/Lease/Pod status, plus what kwok lacks.

Started by systemd as kubelet.service; `systemctl restart kubelet` re-reads the config, as for a
real kubelet. On start it:
1. reads /var/lib/kubelet/config.yaml (heartbeat timings, maxPods, registerWithTaints);
2. registers the Node (or refreshes its status after a reboot) with the identity of its
   kubeconfig (system:node:<name>), and its CSINode with the lab CSI driver;
3. renews its node Lease and clears the holder: kwok takes a new identity per process and would
   otherwise wait a whole lease duration before renewing after a restart (a kubelet does not);
4. runs kwok for this one node with Stages rendered from the config;
5. runs the volume manager (volumesInUse, attach before start) on every change of its Node or
   its pods, until kwok exits.
"""

from __future__ import annotations

import argparse
import datetime
import http.server
import ipaddress
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import kubelet_config
import kwok_stages
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from volume_manager import VolumeManager

LAB_CSI_DRIVER = "lab.csi.nodeguard.dev"
KWOK_VERSION_TAG = "kwok-v0.7.0"
# The volume manager runs when its node or one of its pods changes, and at least this often
# while a change is pending (e.g. a volumesInUse write held back by nodeStatusUpdateFrequency).
VOLUME_RESYNC_SECONDS = 1.0

log = logging.getLogger("kubelet-standin")


def boot_id() -> str:
    """An id per container start: /run is a fresh tmpfs each time the container (node) boots."""
    path = "/run/nodeguard-boot-id"
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(str(uuid.uuid4()))
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


# What a kubelet reads from /sys/class/dmi/id/product_uuid: written by workers.sh when the container
# (machine) is created, the same UUID the node's lab BMC reports (lab/bmc/system_uuid.py).
PRODUCT_UUID_FILE = "/etc/nodeguard/product_uuid"


def system_uuid() -> str:
    try:
        with open(PRODUCT_UUID_FILE, encoding="utf-8") as handle:
            return handle.read().strip()
    except FileNotFoundError:
        log.warning("%s missing: systemUUID stays empty (recreate the worker with workers.sh)", PRODUCT_UUID_FILE)
        return ""


def node_status(node_ip: str, hostname: str, settings: kubelet_config.KubeletSettings, kubelet_version: str) -> dict:
    resources = {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "50Gi", "pods": str(settings.max_pods)}
    return {
        "addresses": [{"type": "InternalIP", "address": node_ip}, {"type": "Hostname", "address": hostname}],
        "capacity": resources,
        "allocatable": resources,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "architecture": "amd64",
            "operatingSystem": "linux",
            "osImage": "Debian GNU/Linux 12 (bookworm), nodeguard lab",
            "kernelVersion": os.uname().release,
            "kubeletVersion": kubelet_version,
            "kubeProxyVersion": "",
            "containerRuntimeVersion": KWOK_VERSION_TAG,
            "bootID": boot_id(),
            "machineID": "",
            "systemUUID": system_uuid(),
        },
    }


def register_node(core, name: str, node_ip: str, settings, kubelet_version: str) -> None:
    status = node_status(node_ip, name, settings, kubelet_version)
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
            # Without it the attach-detach controller does not manage this node's volumes.
            "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
        },
        "spec": {"taints": settings.register_with_taints} if settings.register_with_taints else {},
        "status": status,
    }
    try:
        core.create_node(body)
        log.info("registered node %s (%s)", name, node_ip)
    except ApiException as error:
        if error.status != 409:
            raise
        # Known node (kubelet restart or node reboot): refresh what a kubelet reports on start.
        core.patch_node_status(name, {"status": status})
        log.info("node %s already registered; status refreshed (bootID %s)", name, status["nodeInfo"]["bootID"])


def register_csi_driver(storage, core, name: str) -> None:
    """What the kubelet and node-driver-registrar do: a CSINode owned by the Node, listing the lab driver."""
    node = core.read_node(name)
    body = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        # Owned by the current Node object: a re-created Node (new control plane) takes it over,
        # so the garbage collector does not remove it with the old owner.
        "metadata": {"name": name, "ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node.metadata.uid}]},
        "spec": {"drivers": [{"name": LAB_CSI_DRIVER, "nodeID": name, "topologyKeys": None}]},
    }
    try:
        storage.create_csi_node(body)
    except ApiException as error:
        if error.status != 409:
            raise
        storage.patch_csi_node(name, {"metadata": body["metadata"], "spec": body["spec"]})


def renew_and_release_lease(coordination, name: str, settings) -> None:
    """Renew the Lease now, as a starting kubelet does, and clear its holder so kwok takes it over.

    kwok picks a new holder identity per process and would otherwise wait for the old holder's
    lease to expire; its first renewal also comes only one renew interval after start.
    """
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    body = {"spec": {"holderIdentity": None, "renewTime": now,
                     "leaseDurationSeconds": settings.lease_duration_seconds}}
    try:
        coordination.patch_namespaced_lease(name, "kube-node-lease", body)
    except ApiException as error:
        if error.status != 404:
            raise


def node_ip_address() -> str:
    # podman writes the container's own name and address into /etc/hosts.
    return socket.gethostbyname(socket.gethostname())


def kwok_cidr(pod_cidr: str) -> str:
    """kwok's --cidr is "first address/prefix": hand out pod IPs from the first host address."""
    network = ipaddress.ip_network(pod_cidr, strict=False)
    return f"{network.network_address + 1}/{network.prefixlen}"


def start_kwok(args, settings, node_ip: str) -> subprocess.Popen:
    os.makedirs(args.state_dir, exist_ok=True)
    stages_path = os.path.join(args.state_dir, "kwok-stages.yaml")
    with open(stages_path, "w", encoding="utf-8") as handle:
        handle.write(kwok_stages.render(settings))
    command = [
        args.kwok,
        "--kubeconfig", args.kubeconfig,
        "--config", stages_path,
        "--manage-single-node", args.node_name,
        "--node-name", args.node_name,
        "--node-ip", node_ip,
        "--cidr", kwok_cidr(args.pod_cidr),
        "--node-lease-duration-seconds", str(settings.lease_duration_seconds),
    ]
    log.info("starting %s", " ".join(command))
    return subprocess.Popen(command)


def serve_healthz(settings: kubelet_config.KubeletSettings) -> None:
    """/healthz answers ok where the kubelet serves it (healthzBindAddress:healthzPort), once kwok runs."""

    class Healthz(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.path == "/healthz"
            self.send_response(200 if ok else 404)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.end_headers()
            self.wfile.write(b"ok" if ok else b"404 page not found\n")

        def log_message(self, *_args):
            pass

    if settings.healthz_port:
        server = http.server.ThreadingHTTPServer((settings.healthz_bind_address, settings.healthz_port), Healthz)
        threading.Thread(target=server.serve_forever, name="healthz", daemon=True).start()


def watch_in_background(list_function, changed: threading.Event, **selector) -> None:
    """Set `changed` on every event of a watch; the watch is restarted when it ends or breaks."""

    def loop() -> None:
        while True:
            try:
                for _event in watch.Watch().stream(list_function, timeout_seconds=300, **selector):
                    changed.set()
            except Exception as error:  # noqa: BLE001 - apiserver restarts break watches; start again
                log.debug("watch %s: %s", list_function.__name__, error)
                time.sleep(1)
            changed.set()  # events may have been missed while it was down

    threading.Thread(target=loop, name=list_function.__name__, daemon=True).start()


def run(args) -> int:
    settings = kubelet_config.load(args.config)
    log.info(
        "config %s: nodeStatusUpdateFrequency=%ss nodeStatusReportFrequency=%ss nodeLeaseDurationSeconds=%s "
        "(lease renewed every %ss)", args.config, settings.status_update_seconds, settings.status_report_seconds,
        settings.lease_duration_seconds, settings.lease_renew_seconds)

    config.load_kube_config(config_file=args.kubeconfig)
    core, storage, coordination = client.CoreV1Api(), client.StorageV1Api(), client.CoordinationV1Api()
    kubelet_version = client.VersionApi().get_code().git_version
    node_ip = node_ip_address()

    register_node(core, args.node_name, node_ip, settings, kubelet_version)
    register_csi_driver(storage, core, args.node_name)
    renew_and_release_lease(coordination, args.node_name, settings)
    kwok = start_kwok(args, settings, node_ip)
    serve_healthz(settings)

    stopping = []

    def stop(signum, _frame):
        log.info("signal %s: stopping kwok", signum)
        stopping.append(signum)
        kwok.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    volumes = VolumeManager(core, storage, args.node_name, settings.status_update_seconds)
    changed = threading.Event()
    watch_in_background(core.list_pod_for_all_namespaces, changed, field_selector=f"spec.nodeName={args.node_name}")
    watch_in_background(core.list_node, changed, field_selector=f"metadata.name={args.node_name}")
    while kwok.poll() is None:
        if not changed.wait(timeout=VOLUME_RESYNC_SECONDS) and not volumes.pending:
            continue
        changed.clear()
        try:
            volumes.sync()
        except Exception as error:  # noqa: BLE001 - keep heartbeating through API hiccups, as a kubelet does
            log.warning("volume manager: %s", error)
            volumes.pending = True
    log.info("kwok exited with %s", kwok.returncode)
    return 0 if stopping else (kwok.returncode or 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="/var/lib/kubelet/config.yaml")
    parser.add_argument("--kubeconfig", default="/etc/kubernetes/kubelet.conf")
    parser.add_argument("--node-name", default=socket.gethostname())
    parser.add_argument("--kwok", default="/usr/local/bin/kwok")
    parser.add_argument("--state-dir", default="/var/lib/kubelet/standin")
    # The kubelet's (deprecated) --pod-cidr flag: pod IPs kwok hands out on this node.
    parser.add_argument("--pod-cidr", default="10.244.0.0/24")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stdout)
    try:
        return run(args)
    except kubelet_config.KubeletConfigError as error:
        # A file the kubelet refuses: its last line and exit code 1, as a kubelet (no traceback).
        print(kubelet_config.command_failed(error), file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
