"""In-memory stand-ins for the Kubernetes API, the clock and a power source.

FakeCluster implements the methods of k8s.services.Cluster on plain dicts, with resourceVersion checks,
so the incident logic runs unchanged. ``controllers`` are callbacks run on every clock tick; tests use
them to play the parts of the attach-detach controller and the workload controllers.
"""

from __future__ import annotations

import copy
import itertools
import uuid

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.times import format_micro_time, format_time
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import ConflictError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import Identity, PowerError, PowerReading

T0 = 1_800_000_000.0  # a fixed "now" for every test


class FakeClock:
    def __init__(self, now: float = T0):
        self.t = now
        self.sleeps = []
        self.controllers = []

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds
        for controller in self.controllers:
            controller(self.t)


def system_uuid(name):
    """The SMBIOS system UUID of the fake machine behind node ``name`` (also what its FakePower reports)."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.machines.test"))


def node(name, ready="True", since=T0 - 600, labels=None, taints=None, annotations=None):
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": {"taints": taints} if taints else {},
        "status": {
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": format_time(since)}],
            "nodeInfo": {"bootID": f"boot-{name}-1", "systemUUID": system_uuid(name)},
        },
    }


def lease(name, renewed, duration=40):
    return {"metadata": {"name": name}, "spec": {"renewTime": format_micro_time(renewed), "leaseDurationSeconds": duration}}


def renewing_lease(cluster, clock, name: str, every: float = 10.0, skew: float = 0.0):
    """``name``'s kubelet lives: its Lease now, renewed every ``every`` seconds of the clock (a new resourceVersion
    and renewTime each time, as a kubelet's update writes them), its renewTime by a clock ``skew`` seconds off ours.
    Returns a function that stops the renewals (the kubelet dies)."""
    state = {"next": clock.now() + every, "version": 1}

    def write(now):
        state["version"] += 1
        renewed = lease(name, now + skew)
        renewed["metadata"]["resourceVersion"] = str(state["version"])
        cluster.node_leases[name] = renewed

    def tick(now):
        if now >= state["next"]:
            write(now)
            state["next"] = now + every

    write(clock.now())
    clock.controllers.append(tick)
    return lambda: clock.controllers.remove(tick)


_uids = itertools.count(1)


def pod(name, node_name, namespace="app", owner=None, ready=True, created=T0 - 3600, annotations=None, tolerations=None):
    refs = [{"kind": owner[0], "name": owner[1], "controller": True}] if owner else []
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"pod-uid-{next(_uids)}",
            "ownerReferences": refs,
            "annotations": annotations or {},
            "labels": {"app": owner[1].split("-")[0]} if owner else {},
            "creationTimestamp": format_time(created),
        },
        "spec": {"nodeName": node_name, "tolerations": tolerations or []},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": format_time(created)}],
        },
    }


def volume_attachment(name, node_name, pv="pv-1", created=T0 - 3600):
    return {
        "metadata": {"name": name, "creationTimestamp": format_time(created)},
        "spec": {"nodeName": node_name, "attacher": "csi.example.com", "source": {"persistentVolumeName": pv}},
        "status": {"attached": True},
    }


class FakeCluster:
    def __init__(self, nodes, version="v1.35.4"):
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.node_leases = {}
        self.leases = {}
        self.pods = []
        self.attachments = []
        self.events = []
        self.replicasets = {}
        self.deployments = {}
        self.version = version
        self.config_maps = {}
        self.calls = []
        self.fail_on = {}  # method name -> exception to raise once
        self.medik8s = {}  # plural -> objects; a plural missing here is not served (no such medik8s operator)

    def set_deadline(self, seconds):
        self.deadline_seconds = seconds  # services.Cluster refuses calls after it; the fake only keeps it

    def _maybe_fail(self, name):
        error = self.fail_on.pop(name, None)
        if error:
            raise error

    def snapshot(self):
        """Everything a refusal must leave untouched."""
        return copy.deepcopy((self.nodes, self.pods, self.attachments, self.leases, self.events, self.config_maps))

    def server_version(self):
        return self.version

    def get_node(self, name):
        n = self.nodes.get(name)
        return copy.deepcopy(n) if n else None

    def list_nodes(self):
        return copy.deepcopy(list(self.nodes.values()))

    def patch_node(self, name, patch):
        self._maybe_fail("patch_node")
        self.calls.append(("patch_node", name))
        current = self.nodes[name]
        wanted_rv = patch.get("metadata", {}).get("resourceVersion")
        if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
            raise ConflictError("conflict")
        current["metadata"].setdefault("annotations", {}).update(patch.get("metadata", {}).get("annotations", {}))
        if "spec" in patch:
            current["spec"].update(patch["spec"])
        current["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
        return copy.deepcopy(current)

    def get_node_lease(self, name):
        return copy.deepcopy(self.node_leases.get(name))

    def list_pods_on_node(self, node_name):
        self.calls.append(("list_pods_on_node", node_name))
        return copy.deepcopy([p for p in self.pods if p["spec"].get("nodeName") == node_name])

    def get_pod(self, namespace, name):
        for p in self.pods:
            if p["metadata"]["namespace"] == namespace and p["metadata"]["name"] == name:
                return copy.deepcopy(p)
        return None

    def list_pods(self, namespace, label_selector):
        key, value = label_selector.split("=")
        return copy.deepcopy([p for p in self.pods if p["metadata"]["namespace"] == namespace and p["metadata"]["labels"].get(key) == value])

    def force_delete_pod(self, namespace, name, uid):
        self._maybe_fail("force_delete_pod")
        self.calls.append(("force_delete_pod", f"{namespace}/{name}"))
        before = len(self.pods)
        self.pods = [p for p in self.pods if p["metadata"]["uid"] != uid]
        return len(self.pods) < before

    def get_replicaset(self, namespace, name):
        return copy.deepcopy(self.replicasets.get((namespace, name)))

    def get_deployment(self, namespace, name):
        return copy.deepcopy(self.deployments.get((namespace, name)))

    def list_volume_attachments(self):
        return copy.deepcopy(self.attachments)

    def delete_volume_attachment(self, name):
        self.calls.append(("delete_volume_attachment", name))
        self.attachments = [a for a in self.attachments if a["metadata"]["name"] != name]

    def list_medik8s(self, plural):
        self._maybe_fail("list_medik8s")
        found = self.medik8s.get(plural)
        return None if found is None else copy.deepcopy(found)

    def get_lease(self, namespace, name):
        return copy.deepcopy(self.leases.get((namespace, name)))

    def create_lease(self, namespace, body):
        key = (namespace, body["metadata"]["name"])
        if key in self.leases:
            raise ConflictError("exists")
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = "1"
        self.leases[key] = body
        return copy.deepcopy(body)

    def replace_lease(self, namespace, body):
        key = (namespace, body["metadata"]["name"])
        current = self.leases.get(key)
        if current is None or current["metadata"]["resourceVersion"] != body["metadata"].get("resourceVersion"):
            raise ConflictError("conflict")
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
        self.leases[key] = body
        return copy.deepcopy(body)

    def delete_lease(self, namespace, name, resource_version):
        self._maybe_fail("delete_lease")
        current = self.leases.get((namespace, name))
        if current is not None and current["metadata"]["resourceVersion"] != resource_version:
            raise ConflictError("conflict")  # the precondition of a real delete
        self.leases.pop((namespace, name), None)

    def create_event(self, namespace, body):
        self._maybe_fail("create_event")
        self.events.append((namespace, copy.deepcopy(body)))
        return body

    def get_config_map(self, namespace, name):
        return copy.deepcopy(self.config_maps.get((namespace, name)))

    def create_config_map(self, namespace, body):
        self._maybe_fail("create_config_map")
        key = (namespace, body["metadata"]["name"])
        if key in self.config_maps:
            raise ConflictError("exists")
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = "1"
        self.config_maps[key] = body
        return copy.deepcopy(body)

    def replace_config_map(self, namespace, body):
        self._maybe_fail("replace_config_map")
        key = (namespace, body["metadata"]["name"])
        current = self.config_maps.get(key)
        if current is None or current["metadata"]["resourceVersion"] != body["metadata"].get("resourceVersion"):
            raise ConflictError("conflict")
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(int(current["metadata"]["resourceVersion"]) + 1)
        self.config_maps[key] = body
        return copy.deepcopy(body)


class FakePower:
    method = "redfish"

    def __init__(self, state="off", error=None, off_takes=0, machine="w3"):
        self.state = state
        self.error = error
        self.actions = []
        self.off_failures = off_takes
        self.machine = machine  # the node whose machine this BMC controls

    def identify(self):
        if self.error:
            raise PowerError(self.error)
        return Identity("system-uuid", system_uuid(self.machine), f"fake BMC UUID {system_uuid(self.machine)}")

    def status(self):
        if self.error:
            raise PowerError(self.error)
        return PowerReading(self.state, self.method, f"fake PowerState={self.state}")

    def power_off(self):
        self.actions.append("off")
        if self.off_failures:
            self.off_failures -= 1
            raise PowerError("BMC busy")
        self.state = "off"

    def power_on(self):
        self.actions.append("on")
        self.state = "on"
