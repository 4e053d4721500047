"""The lab's worker nodes behave like kubeadm workers as far as the API can see (issue 3, item 3).

Each worker is a container whose kubelet.service is the kubelet stand-in (kwok plus a volume
manager): it registers with its own node identity, heartbeats as its /var/lib/kubelet/config.yaml
says (re-read on `systemctl restart kubelet`), runs and finalizes pods, and reports the CSI
volumes it uses.
"""

from __future__ import annotations

import base64
import itertools
import statistics
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID
from kubernetes import client
from kubernetes.client.rest import ApiException

NAMESPACE = "failover-lab"
CSI_DRIVER = "lab.csi.nodeguard.dev"
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"


def worker_file(lab, node: str, path: str) -> str:
    return lab.podman("exec", node, "cat", path).stdout


def write_worker_file(lab, node: str, path: str, text: str) -> None:
    """Replace a file in the worker atomically, as the tune role's modules do."""
    subprocess.run(["podman", "exec", "-i", node, "sh", "-c", f"cat > {path}.tmp && mv {path}.tmp {path}"],
                   input=text, text=True, check=True)


def restart_kubelet(lab, node: str) -> None:
    lab.podman("exec", node, "systemctl", "restart", "kubelet")


def ready_heartbeat(lab, node: str):
    return next(c.last_heartbeat_time for c in lab.core().read_node(node).status.conditions if c.type == "Ready")


def sample_changes(read, seconds: float, interval: float = 0.2) -> list[float]:
    """Monotonic times at which read() returned a new value, over `seconds`."""
    changes, last = [], read()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = read()
        if value != last:
            changes.append(time.monotonic())
            last = value
        time.sleep(interval)
    return changes


def gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]


@pytest.fixture
def worker(lab) -> str:
    lab.reset_lab()
    return lab.worker_names()[0]


@pytest.fixture
def tuned_worker(lab, worker) -> Iterator[str]:
    """The worker's kubelet config with fast heartbeats (update 2s, no report frequency, lease 8s); restored after."""
    original = worker_file(lab, worker, KUBELET_CONFIG)
    original_lease = configured_lease_seconds(lab, worker)
    config = yaml.safe_load(original)
    config["nodeStatusUpdateFrequency"] = "2s"
    config.pop("nodeStatusReportFrequency", None)  # kubelet rule: then the report frequency is 2s too
    config["nodeLeaseDurationSeconds"] = 8
    write_worker_file(lab, worker, KUBELET_CONFIG, yaml.safe_dump(config, sort_keys=False))
    restart_kubelet(lab, worker)
    try:
        yield worker
    finally:
        write_worker_file(lab, worker, KUBELET_CONFIG, original)
        restart_kubelet(lab, worker)
        lab.wait_for(lambda: lab.node_lease(worker).spec.lease_duration_seconds == original_lease, timeout=60,
                     what=f"{worker} back on its original kubelet config")


def test_workers_register_with_their_own_node_identity(lab):
    for node in lab.worker_names():
        kubeconfig = yaml.safe_load(worker_file(lab, node, "/etc/kubernetes/kubelet.conf"))
        pem = base64.b64decode(kubeconfig["users"][0]["user"]["client-certificate-data"])
        subject = x509.load_pem_x509_certificate(pem).subject
        assert subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == f"system:node:{node}"
        assert subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:nodes"

        api_node = lab.core().read_node(node)
        assert lab.node_ready(node)
        assert api_node.metadata.annotations["volumes.kubernetes.io/controller-managed-attach-detach"] == "true"
        csinode = client.StorageV1Api(lab.api_client()).read_csi_node(node)
        assert [d.name for d in csinode.spec.drivers] == [CSI_DRIVER]


def configured_lease_seconds(lab, node: str) -> int:
    """nodeLeaseDurationSeconds in the worker's config.yaml (kubelet default 40 when unset or 0)."""
    return int(yaml.safe_load(worker_file(lab, node, KUBELET_CONFIG)).get("nodeLeaseDurationSeconds") or 40)


def test_lease_is_renewed_every_quarter_of_the_configured_duration(lab, worker):
    duration = configured_lease_seconds(lab, worker)  # 40 with the kubeadm-written config
    assert lab.node_lease(worker).spec.lease_duration_seconds == duration
    renewals = sample_changes(lambda: lab.node_lease(worker).spec.renew_time, seconds=duration * 0.8)
    intervals = gaps(renewals)
    assert intervals, f"fewer than two lease renewals in {duration * 0.8:.0f}s: {renewals}"
    assert 0.2 * duration <= statistics.median(intervals) <= 0.3 * duration


def test_kubeadm_config_writes_full_status_only_every_five_minutes(lab, worker):
    config = yaml.safe_load(worker_file(lab, worker, KUBELET_CONFIG))
    if config.get("nodeStatusUpdateFrequency") not in (None, "0s") or config.get("nodeStatusReportFrequency") not in (None, "0s"):
        pytest.fail(f"{worker} does not run the kubeadm-written kubelet config (left over by another test?)")
    # nodeStatusReportFrequency defaults to 5m: with nothing changing, the status is not rewritten
    # at the 10s update frequency. (One report may fall into the window.)
    writes = sample_changes(lambda: ready_heartbeat(lab, worker), seconds=25)
    assert len(writes) <= 1, f"status rewritten {len(writes)} times in 25s"


def test_restarting_kubelet_applies_a_new_heartbeat_config(lab, tuned_worker):
    lab.wait_for(lambda: lab.node_lease(tuned_worker).spec.lease_duration_seconds == 8, timeout=60,
                 what="the lease written with the new duration")
    renewals = sample_changes(lambda: lab.node_lease(tuned_worker).spec.renew_time, seconds=12)
    intervals = gaps(renewals)
    assert len(intervals) >= 3
    assert 1.5 <= statistics.median(intervals) <= 3  # 0.25 x 8s
    # nodeStatusUpdateFrequency 2s without a report frequency: a full status write every 2s.
    writes = sample_changes(lambda: ready_heartbeat(lab, tuned_worker), seconds=10)
    intervals = gaps(writes)
    assert len(intervals) >= 2
    assert 1.5 <= statistics.median(intervals) <= 3.5


def test_pods_run_with_an_ip_and_their_deletion_is_finalized(lab, worker):
    core = lab.core()
    name = f"run-probe-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(NAMESPACE, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": worker, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    })
    try:
        pod = lab.wait_for(lab.value_when(
            lambda: core.read_namespaced_pod(name, NAMESPACE), lambda p: p.status.phase == "Running"),
            timeout=30, what=f"{name} Running")
        assert any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)
        assert pod.status.pod_ip and pod.status.host_ip
        assert pod.status.container_statuses[0].state.running is not None
    finally:
        core.delete_namespaced_pod(name, NAMESPACE)  # graceful: the stand-in must finalize it

    def gone() -> bool:
        try:
            core.read_namespaced_pod(name, NAMESPACE)
            return False
        except ApiException as error:
            return error.status == 404

    lab.wait_for(gone, timeout=30, what=f"{name} deleted by its kubelet")


def test_nodes_report_the_csi_volumes_their_pods_use(lab):
    lab.reset_lab()
    storage = client.StorageV1Api(lab.api_client())
    for pod in lab.core().list_namespaced_pod(NAMESPACE, label_selector="app=db").items:
        pv = lab.core().read_persistent_volume(
            lab.core().read_namespaced_persistent_volume_claim(f"data-{pod.metadata.name}", NAMESPACE).spec.volume_name)
        volume = f"kubernetes.io/csi/{CSI_DRIVER}^{pv.spec.csi.volume_handle}"
        node = lab.core().read_node(pod.spec.node_name)
        assert volume in (node.status.volumes_in_use or [])
        assert volume in [v.name for v in node.status.volumes_attached or []]
        attachments = [va for va in storage.list_volume_attachment().items
                       if va.spec.source.persistent_volume_name == pv.metadata.name]
        assert [(va.spec.node_name, va.status.attached) for va in attachments] == [(pod.spec.node_name, True)]


@pytest.mark.resets_lab
def test_a_rebooted_worker_comes_back_ready_with_its_pods(lab, worker):
    core = lab.core()
    boot_before = core.read_node(worker).status.node_info.boot_id
    pods_before = {p.metadata.uid for p in core.list_namespaced_pod(NAMESPACE, field_selector=f"spec.nodeName={worker}").items}
    lab.power_off(worker)
    lab.power_on(worker)
    lab.wait_for(lambda: core.read_node(worker).status.node_info.boot_id != boot_before, timeout=60,
                 what=f"{worker} registered with a new boot id")
    lab.wait_for(lambda: lab.node_ready(worker), timeout=60, what=f"{worker} Ready")
    lab.wait_for(lab.workloads_ready, timeout=60, what="workloads Ready")
    pods_after = {p.metadata.uid for p in core.list_namespaced_pod(NAMESPACE, field_selector=f"spec.nodeName={worker}").items}
    assert pods_before == pods_after  # nothing evicted in a quick reboot: the same pods run again
