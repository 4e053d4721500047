"""The lab CSI driver's node path on the REAL kubelet (issue 14, deliverable 2; docs/lab.md).

The real-kubelet worker (NODEGUARD_LAB_REAL_KUBELET=1; brought up for the module if the lab has none)
runs nodeguard-csi-node (lab/k8s-build/csinode) next to its kubelet. In order:
  1. the kubelet registered the driver: the worker's CSINode lists lab.csi.nodeguard.dev with the node's
     name as its node id (what the VolumeAttachments and the attacher stand-in use);
  2. a db pod, moved there (the other workers cordoned, the pod deleted), runs with its RWO volume:
     attached (VolumeAttachment, volumesInUse), bind-mounted at the pod's volume path in the node, and
     a file written through the container's own mount namespace lands in the volume's directory;
  3. the worker is powered off through its lab BMC; node-outage proves it off, taints it out-of-service:
     the db pod is Ready on another worker and no VolumeAttachment names the dead worker any more;
  4. powered on again, node-recover removes the taint.
Afterwards the lab is as before: workers uncordoned, the worker on, no taint, no incident traces.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from kubernetes import client

REPO = Path(__file__).resolve().parents[3]
INVENTORY = REPO / "lab" / ".state" / "inventory.yml"
DRIVER = "lab.csi.nodeguard.dev"
VOLUMES_DIR = "/var/lib/nodeguard-csi/volumes"  # nodeguard-csi-node's --data-dir default
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
LOCK_NAMESPACE = "nodeguard-system"
# Short waits for the lab, as the incident lab tests use; production defaults are in the roles.
FAST = {
    "node_outage_not_ready_seconds": 5,
    # Started at the first NotReady, as an alert would start it: wait for the proofs instead of refusing.
    "node_outage_proof_timeout": 60,
    "node_outage_lease_margin_seconds": 5,
    "node_outage_detach_timeout": 120,
    "node_outage_replacement_timeout": 180,
    "node_outage_poll_interval": 1,
    "node_recover_healthy_seconds": 5,
    "node_recover_retries": 40,
    "node_recover_delay": 3,
}


def node_exec(lab, node: str, *command: str, check: bool = True) -> subprocess.CompletedProcess:
    return lab.podman("exec", node, *command, check=check)


def storage(lab) -> client.StorageV1Api:
    return client.StorageV1Api(lab.api_client())


def db_pods(lab) -> list:
    return lab.core().list_namespaced_pod(lab.NAMESPACE, label_selector="app=db").items


def pod_ready(pod) -> bool:
    return pod.status.phase == "Running" and any(
        c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def attachments_on(lab, node: str) -> list:
    return [a for a in storage(lab).list_volume_attachment().items if a.spec.node_name == node]


def volume_of(lab, pod) -> tuple[str, str]:
    """(PersistentVolume name, CSI volume handle) of the db pod's data claim."""
    claim = next(v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim)
    pv_name = lab.core().read_namespaced_persistent_volume_claim(claim, lab.NAMESPACE).spec.volume_name
    return pv_name, lab.core().read_persistent_volume(pv_name).spec.csi.volume_handle


def container_pid(lab, node: str, pod) -> int:
    """The PID, in the node, of the pod's db container (containerd's task list in the k8s.io namespace)."""
    container_id = pod.status.container_statuses[0].container_id.split("://", 1)[1]
    tasks = node_exec(lab, node, "ctr", "--namespace", "k8s.io", "tasks", "list").stdout.splitlines()
    for line in tasks[1:]:
        task, pid, status = line.split()[:3]
        if task == container_id and status == "RUNNING":
            return int(pid)
    raise AssertionError(f"no running containerd task {container_id} in {node}:\n" + "\n".join(tasks))


def playbook(lab, name: str, node: str) -> subprocess.CompletedProcess:
    """playbooks/<name>.yml for one node with the lab inventory (admin kubeconfig, the node's BMC)."""
    vars_file = lab.STATE / f"real-kubelet-volumes-{os.getpid()}.json"
    vars_file.write_text(json.dumps(dict(FAST, outage_nodes=[node])))
    argv = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(INVENTORY),
            str(REPO / "playbooks" / f"{name}.yml"), "-e", f"@{vars_file}"]
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    try:
        return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    finally:
        vars_file.unlink()


def delete_incident_traces(lab, node: str) -> None:
    """What node-outage leaves besides the taint and the record: the node's durable history and lock Lease."""
    lab.kubectl("delete", "configmap", "-n", "nodeguard-history", f"nodeguard-history-{node}", "--ignore-not-found", check=False)
    lab.kubectl("delete", "lease", "-n", LOCK_NAMESPACE, f"nodeguard-failover-{node}", "--ignore-not-found", check=False)


@pytest.fixture(scope="module")
def real_worker(lab):
    """The real-kubelet worker (brought up if the lab has none, removed again afterwards), with everything
    put back after the module, whatever happened."""
    with lab.real_kubelet_worker() as node:
        lab.reset_lab()
        yield node
        lab.reset_lab()  # powers the worker on, uncordons every node, removes test taints and the incident record
        delete_incident_traces(lab, node)


@pytest.fixture(scope="module")
def moved_db_pod(lab, real_worker):
    """A db pod (re)started on the real-kubelet worker: the other workers cordoned, one db pod deleted, its
    replacement scheduled on the only schedulable worker; the other workers uncordoned again once it runs."""
    others = [n for n in lab.worker_names() if n != real_worker]
    # The db pod already there if there is one (the anti-affinity would keep any other away), else the first.
    pods = sorted(db_pods(lab), key=lambda p: p.metadata.name)
    victim = next((p for p in pods if p.spec.node_name == real_worker), pods[0])
    for node in others:
        lab.kubectl("cordon", node)
    try:
        lab.kubectl("delete", "pod", "-n", lab.NAMESPACE, victim.metadata.name, "--wait=false")
        pod = lab.wait_for(
            lab.value_when(lambda: lab.core().read_namespaced_pod(victim.metadata.name, lab.NAMESPACE),
                           lambda p: p.metadata.uid != victim.metadata.uid and p.spec.node_name == real_worker and pod_ready(p)),
            timeout=240, interval=2, what=f"{victim.metadata.name} Running and Ready on {real_worker}")
    finally:
        for node in others:
            lab.kubectl("uncordon", node, check=False)
    return pod


def test_the_kubelet_registered_the_driver_with_the_node_name_as_node_id(lab, real_worker):
    csinode = storage(lab).read_csi_node(real_worker)
    drivers = {d.name: d for d in csinode.spec.drivers or []}
    assert DRIVER in drivers, f"CSINode {real_worker} lists {sorted(drivers)}"
    assert drivers[DRIVER].node_id == real_worker
    # The kubelet also writes the node id on the Node, where the attach side of a real driver reads it.
    annotation = lab.core().read_node(real_worker).metadata.annotations.get("csi.volume.kubernetes.io/nodeid", "{}")
    assert json.loads(annotation).get(DRIVER) == real_worker, annotation
    assert node_exec(lab, real_worker, "systemctl", "is-active", "nodeguard-csi-node").stdout.strip() == "active"


def test_db_pod_runs_on_the_real_kubelet_with_its_volume_mounted(lab, real_worker, moved_db_pod):
    pod = moved_db_pod
    pv_name, handle = volume_of(lab, pod)
    attached = [a for a in attachments_on(lab, real_worker) if a.spec.source.persistent_volume_name == pv_name]
    assert attached and attached[0].status.attached, f"no attached VolumeAttachment of {pv_name} on {real_worker}"
    in_use = lab.core().read_node(real_worker).status.volumes_in_use or []
    assert f"kubernetes.io/csi/{DRIVER}^{handle}" in in_use, in_use

    # The kubelet's per-pod volume path is a mount point in the node (NodePublishVolume's bind mount).
    target = f"/var/lib/kubelet/pods/{pod.metadata.uid}/volumes/kubernetes.io~csi/{pv_name}/mount"
    assert node_exec(lab, real_worker, "mountpoint", "-q", target, check=False).returncode == 0, f"{target} is not mounted"

    # A file written at the volume's mount path as the container sees it (through its own mount
    # namespace: /proc/<pid>/root) is in the volume's directory on the node.
    mount_path = next(m.mount_path for m in pod.spec.containers[0].volume_mounts if m.name == "data")
    name, content = f"nodeguard-test-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    in_volume = f"{VOLUMES_DIR}/{handle}/{name}"
    assert node_exec(lab, real_worker, "test", "-e", in_volume, check=False).returncode != 0
    pid = container_pid(lab, real_worker, pod)
    node_exec(lab, real_worker, "sh", "-c", f"echo {content} > /proc/{pid}/root{mount_path}/{name}")
    try:
        assert node_exec(lab, real_worker, "cat", in_volume, check=False).stdout.strip() == content
    finally:
        node_exec(lab, real_worker, "rm", "-f", in_volume, check=False)


def test_power_off_node_outage_moves_the_db_pod_and_detaches(lab, real_worker, moved_db_pod):
    old = moved_db_pod
    assert lab.core().read_namespaced_pod(old.metadata.name, lab.NAMESPACE).metadata.uid == old.metadata.uid
    boot_id = lab.core().read_node(real_worker).status.node_info.boot_id
    started = time.monotonic()
    lab.power_off(real_worker)
    lab.wait_for(lambda: not lab.node_ready(real_worker), timeout=180, interval=2, what=f"{real_worker} NotReady")

    result = playbook(lab, "node_outage", real_worker)
    assert result.returncode == 0, lab.playbook_failure(result.stdout + result.stderr)
    node = lab.core().read_node(real_worker)
    assert any(t.key == OUT_OF_SERVICE for t in node.spec.taints or []), "node-outage left no out-of-service taint"
    replacement = lab.wait_for(
        lab.value_when(lambda: lab.core().read_namespaced_pod(old.metadata.name, lab.NAMESPACE),
                       lambda p: p.metadata.uid != old.metadata.uid and pod_ready(p)),
        timeout=180, interval=2, what=f"{old.metadata.name} Ready again")
    assert replacement.spec.node_name != real_worker
    lab.wait_for(lambda: not attachments_on(lab, real_worker), timeout=120, interval=2,
                 what=f"the VolumeAttachments of {real_worker} gone")
    print(f"\n{real_worker} off to {old.metadata.name} Ready on {replacement.spec.node_name}: {time.monotonic() - started:.1f}s")

    # Back on: a new boot, and node-recover lifts the taint.
    lab.power_on(real_worker)
    lab.wait_for(lambda: lab.node_ready(real_worker), timeout=240, interval=2, what=f"{real_worker} Ready after power-on")
    assert lab.core().read_node(real_worker).status.node_info.boot_id != boot_id
    result = playbook(lab, "node_recover", real_worker)
    assert result.returncode == 0, lab.playbook_failure(result.stdout + result.stderr)
    node = lab.core().read_node(real_worker)
    assert not any(t.key == OUT_OF_SERVICE for t in node.spec.taints or []), "node-recover kept the taint"
