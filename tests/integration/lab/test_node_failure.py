"""A stopped worker is handled by the real controllers, as a crashed node in production (issue 3, item 8).

Runs on the failover lab: real kube-controller-manager (node lifecycle, taint eviction, Pod GC,
attach-detach, StatefulSet), real scheduler, kubelet stand-ins on the workers, the CSI attacher
stand-in. Power-off is a stopped worker container.

To keep the module short, kube-controller-manager runs with a short node-monitor grace period
for these tests only (the manifest is restored afterwards), and the probe workloads tolerate
unreachable for a few seconds instead of the default 300.

Measured durations are appended to lab/.state/benchmarks/node-failure.jsonl (numbers, not assertions).
"""

from __future__ import annotations

import datetime
import json
import time
import uuid
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

KCM = "kube-controller-manager"
NAMESPACE = "failover-lab"
CSI_DRIVER = "lab.csi.nodeguard.dev"
# Short detection for this module. It must stay above the workers' lease renewal interval
# (0.25 x nodeLeaseDurationSeconds = 10s with kubeadm defaults), or healthy nodes would flap.
GRACE_SECONDS = 20
MONITOR_PERIOD_SECONDS = 1
TOLERATION_SECONDS = 5
# How long a state that must persist (Terminating pod, attached volume) is watched before acting.
HOLD_SECONDS = 15
UNREACHABLE = "node.kubernetes.io/unreachable"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"

pytestmark = pytest.mark.resets_lab


# --- helpers -----------------------------------------------------------------------------------


def record(lab, measurement: str, seconds: float, **context) -> None:
    path = lab.STATE / "benchmarks" / "node-failure.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"measurement": measurement, "seconds": round(seconds, 2), "at": time.time(), **context}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
    print(f"{measurement}: {seconds:.1f}s {context}")


def ready_status(lab, node: str) -> str:
    for condition in lab.core().read_node(node).status.conditions or []:
        if condition.type == "Ready":
            return condition.status
    return "missing"


def taint_effects(lab, node: str, key: str) -> set[str]:
    return {t.effect for t in lab.core().read_node(node).spec.taints or [] if t.key == key}


def taint_added(lab, node: str, key: str, effect: str) -> datetime.datetime:
    for taint in lab.core().read_node(node).spec.taints or []:
        if taint.key == key and taint.effect == effect:
            return taint.time_added
    raise AssertionError(f"{node} has no {key}:{effect} taint")


def lease_renew_time(lab, node: str) -> datetime.datetime:
    coordination = client.CoordinationV1Api(lab.api_client())
    return coordination.read_namespaced_lease(node, "kube-node-lease").spec.renew_time


def pod_is_ready(pod) -> bool:
    return pod.metadata.deletion_timestamp is None and any(
        c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def pods(lab, selector: str) -> list:
    return lab.core().list_namespaced_pod(NAMESPACE, label_selector=selector).items


def attachments(lab, pv_name: str) -> list:
    storage = client.StorageV1Api(lab.api_client())
    return [va for va in storage.list_volume_attachment().items if va.spec.source.persistent_volume_name == pv_name]


def attached_to(lab, pv_name: str, node: str) -> bool:
    return any(va.spec.node_name == node and va.status and va.status.attached for va in attachments(lab, pv_name))


def power_off_and_wait_unreachable(lab, node: str) -> None:
    lab.power_off(node)
    lab.wait_for(lambda: ready_status(lab, node) == "Unknown", timeout=GRACE_SECONDS + 30, interval=0.25,
                 what=f"{node} NotReady (Unknown)")
    lab.wait_for(lambda: taint_effects(lab, node, UNREACHABLE) >= {"NoSchedule", "NoExecute"}, timeout=15,
                 what=f"{node} unreachable taints")


def assert_still_off(lab, node: str) -> None:
    """The lab is shared: a node powered on by another session would explain what follows."""
    assert lab.container_state(node) != "running", f"{node} was powered on by someone else during the test"


def add_out_of_service_taint(lab, node: str) -> None:
    lab.kubectl("taint", "node", node, f"{OUT_OF_SERVICE}=nodeshutdown:NoExecute")


def short_unreachable_tolerations() -> list[dict]:
    return [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": TOLERATION_SECONDS}
            for key in (UNREACHABLE, "node.kubernetes.io/not-ready")]


def with_flags(manifest: str, flags: dict[str, str]) -> str:
    pod = yaml.safe_load(manifest)
    command = pod["spec"]["containers"][0]["command"]
    command[:] = [arg for arg in command if arg.split("=", 1)[0].lstrip("-") not in flags]
    command.extend(f"--{name}={value}" for name, value in flags.items())
    return yaml.safe_dump(pod, sort_keys=False)


def manifest_command(manifest: str) -> list[str]:
    return yaml.safe_load(manifest)["spec"]["containers"][0]["command"]


def restart_controller_manager(lab, manifest: str) -> None:
    """Write the manifest; wait until the new process runs its command, is healthy and leads."""
    leader_before = lab.lease_holder(KCM)
    lab.write_manifest(KCM, manifest)
    lab.wait_for(lambda: lab.component_flags(KCM) == manifest_command(manifest), timeout=60,
                 what="kube-controller-manager running the manifest's command")
    lab.wait_for(lambda: lab.component_healthy(KCM), timeout=60, what="kube-controller-manager healthy")
    lab.wait_for(lambda: lab.lease_holder(KCM) not in ("", leader_before), timeout=90,
                 what="the restarted kube-controller-manager holding its leader lease")


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fast_node_monitor(lab) -> Iterator[int]:
    """kube-controller-manager with a short node-monitor grace period for this module only."""
    original = lab.read_manifest(KCM)
    flags = {"node-monitor-period": f"{MONITOR_PERIOD_SECONDS}s", "node-monitor-grace-period": f"{GRACE_SECONDS}s"}
    try:
        restart_controller_manager(lab, with_flags(original, flags))
        lab.reset_lab()
        yield GRACE_SECONDS
    finally:
        restart_controller_manager(lab, original)


@pytest.fixture
def probe_statefulset(lab, fast_node_monitor) -> Iterator[dict]:
    """A one-replica StatefulSet with an RWO volume of the lab CSI driver and short unreachable tolerations."""
    name = f"probe-{uuid.uuid4().hex[:6]}"
    pv_name = f"lab-{name}-0"
    claim = f"data-{name}-0"
    core, apps = lab.core(), client.AppsV1Api(lab.api_client())
    core.create_persistent_volume({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "lab-rwo",
                 "claimRef": {"namespace": NAMESPACE, "name": claim},
                 "csi": {"driver": CSI_DRIVER, "volumeHandle": pv_name, "fsType": "ext4"}},
    })
    apps.create_namespaced_stateful_set(NAMESPACE, {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
        "spec": {
            "serviceName": name, "replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"tolerations": short_unreachable_tolerations(),
                         "containers": [{"name": "db", "image": "registry.k8s.io/pause:3.10",
                                         "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]},
            },
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": "lab-rwo",
                "resources": {"requests": {"storage": "1Gi"}}}}],
        },
    })
    pod = lab.wait_for(lambda: next((p for p in pods(lab, f"app={name}") if pod_is_ready(p)), None),
                       timeout=60, what=f"{name}-0 Ready")
    node = pod.spec.node_name
    lab.wait_for(lambda: attached_to(lab, pv_name, node), timeout=30, what=f"{pv_name} attached to {node}")
    try:
        yield {"name": name, "pod": pod, "node": node, "pv": pv_name, "claim": claim}
    finally:
        # The node may still be off: nothing here waits for deletions to finish.
        apps.delete_namespaced_stateful_set(name, NAMESPACE)
        for delete in (lambda: core.delete_namespaced_persistent_volume_claim(claim, NAMESPACE),
                       lambda: core.delete_persistent_volume(pv_name)):
            try:
                delete()
            except ApiException as error:
                if error.status != 404:
                    raise


@pytest.fixture
def probe_deployment(lab, fast_node_monitor) -> Iterator[str]:
    """Three replicas spread over the workers behind a Service, tolerating unreachable for TOLERATION_SECONDS."""
    name = f"evict-probe-{uuid.uuid4().hex[:6]}"
    apps = client.AppsV1Api(lab.api_client())
    apps.create_namespaced_deployment(NAMESPACE, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {
            "replicas": 3, "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "tolerations": short_unreachable_tolerations(),
                    "topologySpreadConstraints": [{
                        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
                        "nodeTaintsPolicy": "Honor", "labelSelector": {"matchLabels": {"app": name}}}],
                    "containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}],
                },
            },
        },
    })
    lab.core().create_namespaced_service(NAMESPACE, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}]},
    })
    lab.wait_for(lambda: sum(pod_is_ready(p) for p in pods(lab, f"app={name}")) == 3, timeout=60,
                 what=f"{name} 3 pods Ready")
    try:
        yield name
    finally:
        apps.delete_namespaced_deployment(name, NAMESPACE)
        lab.core().delete_namespaced_service(name, NAMESPACE)


# --- tests -------------------------------------------------------------------------------------


def test_stopped_worker_goes_unreachable_after_the_grace_period(lab, fast_node_monitor):
    node = lab.worker_names()[-1]
    assert ready_status(lab, node) == "True"

    stopped = time.time()
    lab.power_off(node)
    lab.wait_for(lambda: ready_status(lab, node) != "True", timeout=GRACE_SECONDS + 30, interval=0.25,
                 what=f"{node} NotReady")
    not_ready = time.time()
    last_heartbeat = lease_renew_time(lab, node).timestamp()

    assert ready_status(lab, node) == "Unknown"  # "Kubelet stopped posting node status."
    # Declared only after the grace period counted from the last heartbeat (Lease renewal); how
    # much later (monitor period, a loaded machine) is recorded below, not asserted.
    assert not_ready - last_heartbeat >= GRACE_SECONDS - 0.5
    lab.wait_for(lambda: taint_effects(lab, node, UNREACHABLE) == {"NoSchedule", "NoExecute"}, timeout=15,
                 what=f"{node} unreachable NoSchedule and NoExecute taints")
    record(lab, "stop_to_not_ready", not_ready - stopped, grace=GRACE_SECONDS, node=node)
    record(lab, "last_heartbeat_to_not_ready", not_ready - last_heartbeat, grace=GRACE_SECONDS, node=node)


def test_deployment_pods_are_evicted_after_their_toleration_and_rescheduled(lab, probe_deployment):
    name = probe_deployment
    node = next(p.spec.node_name for p in pods(lab, f"app={name}") if p.spec.node_name.startswith("ng-worker"))
    victims = {p.metadata.uid for p in pods(lab, f"app={name}") if p.spec.node_name == node}

    power_off_and_wait_unreachable(lab, node)
    tainted = taint_added(lab, node, UNREACHABLE, "NoExecute").timestamp()

    def evicted() -> list:
        on_node = [p for p in pods(lab, f"app={name}") if p.metadata.uid in victims]
        return on_node if on_node and all(p.metadata.deletion_timestamp for p in on_node) else []

    for pod in lab.wait_for(evicted, timeout=TOLERATION_SECONDS + 30, interval=0.5, what="probe pods evicted"):
        # deletionTimestamp = time of the eviction + the pod's termination grace period.
        evicted_at = pod.metadata.deletion_timestamp.timestamp() - pod.metadata.deletion_grace_period_seconds
        assert evicted_at - tainted >= TOLERATION_SECONDS - 1  # timeAdded has 1s resolution
        record(lab, "unreachable_taint_to_eviction", evicted_at - tainted, toleration=TOLERATION_SECONDS)

    def replaced() -> list:
        ready = [p for p in pods(lab, f"app={name}") if pod_is_ready(p) and p.metadata.uid not in victims]
        return ready if len(ready) == 3 else []

    replacements = lab.wait_for(replaced, timeout=60, what="3 Ready replicas without the stopped node")
    assert all(p.spec.node_name != node for p in replacements)
    # The evicted pods stay Terminating: only a kubelet on that node could confirm them gone.
    assert evicted(), "the evicted pods should still be Terminating while their node is off"
    # DaemonSet pods tolerate unreachable without a time limit: the agent stays.
    agents = [p for p in pods(lab, "app=agent") if p.spec.node_name == node]
    assert agents and all(p.metadata.deletion_timestamp is None for p in agents)

    # The Service sends traffic only to the replacements (EndpointSlice controller).
    def ready_endpoint_nodes() -> list[str]:
        slices = client.DiscoveryV1Api(lab.api_client()).list_namespaced_endpoint_slice(
            NAMESPACE, label_selector=f"kubernetes.io/service-name={name}").items
        return sorted(e.node_name for s in slices for e in s.endpoints or [] if e.conditions.ready)

    endpoint_nodes = lab.wait_for(lab.value_when(ready_endpoint_nodes, lambda n: len(n) == 3), timeout=30,
                                  what=f"3 ready endpoints for Service {name}")
    assert node not in endpoint_nodes


def test_statefulset_pod_stays_terminating_until_the_out_of_service_taint(lab, probe_statefulset):
    probe = probe_statefulset
    node, pod_name, old_uid = probe["node"], probe["pod"].metadata.name, probe["pod"].metadata.uid
    core = lab.core()

    power_off_and_wait_unreachable(lab, node)
    evicted = lab.wait_for(lab.value_when(
        lambda: core.read_namespaced_pod(pod_name, NAMESPACE), lambda p: p.metadata.deletion_timestamp),
        timeout=TOLERATION_SECONDS + 30, what=f"{pod_name} evicted")
    assert evicted.metadata.uid == old_uid

    # At most one pod per identity: no replacement while the old pod is Terminating, and the
    # volume stays attached to the dead node.
    deadline = time.monotonic() + HOLD_SECONDS
    while time.monotonic() < deadline:
        current = core.read_namespaced_pod(pod_name, NAMESPACE)
        assert_still_off(lab, node)
        assert current.metadata.uid == old_uid and current.metadata.deletion_timestamp
        assert attached_to(lab, probe["pv"], node)
        time.sleep(1)

    add_out_of_service_taint(lab, node)
    tainted = time.monotonic()

    def old_pod_gone() -> bool:
        try:
            return core.read_namespaced_pod(pod_name, NAMESPACE).metadata.uid != old_uid
        except ApiException as error:
            return error.status == 404

    lab.wait_for(old_pod_gone, timeout=60, interval=0.5, what=f"Pod GC deleting {pod_name}")
    record(lab, "out_of_service_to_pod_deleted", time.monotonic() - tainted)
    lab.wait_for(lambda: not any(va.spec.node_name == node for va in attachments(lab, probe["pv"])), timeout=60,
                 interval=0.5, what=f"VolumeAttachment of {probe['pv']} on {node} gone")
    record(lab, "out_of_service_to_volume_detached", time.monotonic() - tainted)

    replacement = lab.wait_for(lab.value_when(
        lambda: core.read_namespaced_pod(pod_name, NAMESPACE), lambda p: pod_is_ready(p) and p.metadata.uid != old_uid),
        timeout=90, what=f"replacement {pod_name} Ready")
    record(lab, "out_of_service_to_replacement_ready", time.monotonic() - tainted)
    assert replacement.spec.node_name != node
    assert attached_to(lab, probe["pv"], replacement.spec.node_name)


def test_force_deleted_pod_keeps_its_volume_until_the_out_of_service_taint(lab, probe_statefulset):
    """The node still reports the volume in use (volumesInUse): the attach-detach controller waits
    (6 minutes) before detaching from an unhealthy node, so a force-deleted pod's replacement
    cannot start. The out-of-service taint makes it detach at once."""
    probe = probe_statefulset
    node, pod_name, old_uid = probe["node"], probe["pod"].metadata.name, probe["pod"].metadata.uid
    core = lab.core()
    volume = f"kubernetes.io/csi/{CSI_DRIVER}^{probe['pv']}"
    assert volume in (core.read_node(node).status.volumes_in_use or [])

    power_off_and_wait_unreachable(lab, node)
    core.delete_namespaced_pod(pod_name, NAMESPACE, grace_period_seconds=0)

    replacement = lab.wait_for(lab.value_when(
        lambda: core.read_namespaced_pod(pod_name, NAMESPACE), lambda p: p.metadata.uid != old_uid and p.spec.node_name),
        timeout=60, what=f"replacement {pod_name} scheduled")
    assert replacement.spec.node_name != node
    deadline = time.monotonic() + HOLD_SECONDS
    while time.monotonic() < deadline:
        assert_still_off(lab, node)
        assert attached_to(lab, probe["pv"], node), "volume detached from an unhealthy node that still uses it"
        assert not pod_is_ready(core.read_namespaced_pod(pod_name, NAMESPACE)), "replacement started without its volume"
        time.sleep(1)

    add_out_of_service_taint(lab, node)
    tainted = time.monotonic()
    lab.wait_for(lambda: not any(va.spec.node_name == node for va in attachments(lab, probe["pv"])), timeout=60,
                 interval=0.5, what=f"force detach of {probe['pv']} from {node}")
    lab.wait_for(lambda: pod_is_ready(core.read_namespaced_pod(pod_name, NAMESPACE)), timeout=60,
                 what=f"replacement {pod_name} Ready")
    record(lab, "out_of_service_to_force_deleted_replacement_ready", time.monotonic() - tainted)
    assert attached_to(lab, probe["pv"], replacement.spec.node_name)
