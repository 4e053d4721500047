"""Helpers for tests that run against the failover lab (lab/scripts/lab.sh, docs/lab.md).

Everything goes to loopback or to the lab's own containers: the API through the port published
on 127.0.0.1, node power through the lab's Redfish BMC (or podman when no BMC is up).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import requests
from kubernetes import client, config

REPO = Path(__file__).resolve().parents[2]
STATE = REPO / "lab" / ".state"
LAB_SH = REPO / "lab" / "scripts" / "lab.sh"
CONTROL_PLANE = "ng-cp1"
NAMESPACE = "failover-lab"
# The version the lab builds and runs: what lab/k8s-build/go.mod requires of k8s.io/kubernetes.
K8S_VERSION = next(line.split()[-1] for line in (REPO / "lab" / "k8s-build" / "go.mod").read_text().splitlines()
                   if line.split()[:1] == ["k8s.io/kubernetes"] or line.split()[:2] == ["require", "k8s.io/kubernetes"])
KUBECTL_CACHED = Path.home() / ".cache" / "nodeguard" / "k8s" / K8S_VERSION / "bin" / "kubectl"
# Where each component answers its health check inside the control-plane node (kubeadm probes).
HEALTH_URLS = {
    "etcd": "http://127.0.0.1:2381/readyz",
    "kube-apiserver": "https://127.0.0.1:6443/readyz",
    "kube-controller-manager": "https://127.0.0.1:10257/healthz",
    "kube-scheduler": "https://127.0.0.1:10259/readyz",
}

T = TypeVar("T")


def kubeconfig() -> str:
    return str(STATE / "admin.kubeconfig")


def kubectl(*args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    binary = str(KUBECTL_CACHED) if KUBECTL_CACHED.exists() else "kubectl"
    return subprocess.run([binary, "--kubeconfig", kubeconfig(), *args], input=stdin,
                          capture_output=True, text=True, check=check)


def api_client() -> client.ApiClient:
    return config.new_client_from_config(config_file=kubeconfig())


def core() -> client.CoreV1Api:
    return client.CoreV1Api(api_client())


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check)


def value_when(read: Callable[[], T], accept: Callable[[T], Any]) -> Callable[[], T | None]:
    """A wait_for predicate that returns what read() gives once accept() likes it."""

    def predicate() -> T | None:
        value = read()
        return value if accept(value) else None

    return predicate


def playbook_failure(output: str, tail: int = 3000) -> str:
    """An ansible-playbook run's output for an assertion message: every failed task's msg first (a long result
    printed after it would push it out of a plain tail), then the output's tail."""
    lines = output.splitlines()
    failed = [i for i, line in enumerate(lines) if line.startswith("fatal:") or line.lstrip().startswith("msg:")]
    head = "\n".join("\n".join(lines[i : i + 4]) for i in failed[:5])
    return f"{head}\n...\n{output[-tail:]}"


def wait_for(predicate: Callable[[], T], timeout: float, interval: float = 1.0, what: str = "condition") -> T:
    """Call predicate until it returns something truthy; return that. Raise TimeoutError otherwise.

    Exceptions from the predicate count as "not yet" (the API may be restarting), the last one is
    reported on timeout.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = predicate()
            if last:
                return last
        except Exception as error:  # noqa: BLE001 - any failure means "not yet"; reported on timeout
            last = error
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what} not reached within {timeout:.0f}s (last: {last!r})")
        time.sleep(interval)


# --- the lab as a whole --------------------------------------------------------------------

def lab_is_up() -> bool:
    if not Path(kubeconfig()).exists():
        return False
    return kubectl("get", "--raw", "/readyz", "--request-timeout=3s", check=False).returncode == 0


def lab_up() -> None:
    subprocess.run([str(LAB_SH), "up"], check=True)


def inventory_nodes() -> dict[str, list[str]]:
    """{'control_plane': [...], 'workers': [...]} from lab/.state/inventory.yml."""
    import yaml

    inventory = yaml.safe_load((STATE / "inventory.yml").read_text())
    groups = inventory["all"]["children"]
    return {group: sorted((groups[group].get("hosts") or {}).keys()) for group in ("control_plane", "workers")}


def worker_names() -> list[str]:
    return sorted(n.metadata.name for n in core().list_node().items if n.metadata.name.startswith("ng-worker"))


# --- node power ----------------------------------------------------------------------------

def _bmc(node: str) -> dict | None:
    path = STATE / "bmc" / "endpoints.json"
    if not path.exists():
        return None
    entry = json.loads(path.read_text()).get(node)
    if entry and "type" not in entry:
        entry = entry.get("bmc")
    return entry


def _redfish_reset(bmc: dict, reset_type: str) -> None:
    url = f"{bmc['address']}/redfish/v1/Systems/{bmc['system_id']}/Actions/ComputerSystem.Reset"
    response = requests.post(url, json={"ResetType": reset_type}, auth=(bmc["username"], bmc["password"]),
                             verify=bmc["ca_cert"], timeout=30)
    response.raise_for_status()


def container_state(node: str) -> str:
    result = podman("container", "inspect", "--format", "{{.State.Status}}", node, check=False)
    return result.stdout.strip() if result.returncode == 0 else "absent"


def power_off(node: str) -> None:
    """Hard power-off, as a crash: through the node's Redfish BMC if it has one, else podman."""
    bmc = _bmc(node)
    if bmc:
        _redfish_reset(bmc, "ForceOff")
    else:
        podman("stop", "--time", "0", node)
    wait_for(lambda: container_state(node) != "running", timeout=30, interval=0.5, what=f"{node} powered off")


def graceful_shutdown(node: str) -> None:
    """A graceful shutdown through the node's Redfish BMC (ResetType GracefulShutdown, the power button):
    the BMC accepts it at once and the node's OS shuts down afterwards."""
    bmc = _bmc(node)
    if not bmc:
        raise AssertionError(f"{node} has no BMC in this lab")
    _redfish_reset(bmc, "GracefulShutdown")


def power_on(node: str) -> None:
    bmc = _bmc(node)
    if bmc:
        _redfish_reset(bmc, "On")
    else:
        podman("start", node)
    wait_for(lambda: container_state(node) == "running", timeout=30, interval=0.5, what=f"{node} powered on")


# --- nodes and workloads -------------------------------------------------------------------

def node_ready(node: str) -> bool:
    for condition in core().read_node(node).status.conditions or []:
        if condition.type == "Ready":
            return condition.status == "True"
    return False


def workloads_ready() -> bool:
    apps = client.AppsV1Api(api_client())
    for deployment in apps.list_namespaced_deployment(NAMESPACE).items:
        if (deployment.status.available_replicas or 0) < (deployment.spec.replicas or 0):
            return False
    for statefulset in apps.list_namespaced_stateful_set(NAMESPACE).items:
        if (statefulset.status.ready_replicas or 0) < (statefulset.spec.replicas or 0):
            return False
    for daemonset in apps.list_namespaced_daemon_set(NAMESPACE).items:
        status = daemonset.status
        if (status.number_ready or 0) < (status.desired_number_scheduled or 0):
            return False
    return True


def _is_test_left_over(key: str) -> bool:
    return key == "node.kubernetes.io/out-of-service" or "nodeguard" in key


def reset_lab(timeout: float = 180) -> None:
    """All worker nodes on and Ready, taints/annotations added by tests removed, workloads Ready."""
    api = core()
    for node in worker_names():
        if container_state(node) != "running":
            power_on(node)
    for node in api.list_node().items:
        taints = node.spec.taints or []
        kept = [t for t in taints if not _is_test_left_over(t.key)]
        annotations = {key: None for key in (node.metadata.annotations or {}) if _is_test_left_over(key)}
        patch: dict[str, Any] = {}
        if len(kept) != len(taints):
            patch.setdefault("spec", {})["taints"] = [t.to_dict() for t in kept]
        if node.spec.unschedulable:
            patch.setdefault("spec", {})["unschedulable"] = None
        if annotations:
            patch["metadata"] = {"annotations": annotations}
        if patch:
            api.patch_node(node.metadata.name, patch)
    for node in worker_names():
        _wait_ready_or_power_cycle(node, timeout)
    wait_for(workloads_ready, timeout=timeout, interval=2, what="workloads in failover-lab Ready")


def _boot_stalled(node: str) -> bool:
    """systemd inside the container never finished booting (seen rarely on a loaded machine after
    a hard power-off: every start job waits, none runs), so the kubelet stand-in never starts."""
    state = podman("exec", node, "systemctl", "is-system-running", check=False).stdout.strip()
    return state in ("initializing", "starting")


def _wait_ready_or_power_cycle(node: str, timeout: float) -> None:
    """Wait for the node to be Ready; a node whose container boot stalled is powered off and on
    once, as one would a hung server, and is then given the full timeout again."""
    first = min(timeout, 120)
    try:
        wait_for(lambda: node_ready(node), timeout=first, what=f"{node} Ready")
        return
    except TimeoutError:
        if not _boot_stalled(node):
            wait_for(lambda: node_ready(node), timeout=max(1.0, timeout - first), what=f"{node} Ready")
            return
    print(f"lablib: {node}'s boot stalled (systemd still starting); power-cycling it once", flush=True)
    power_off(node)
    power_on(node)
    wait_for(lambda: node_ready(node), timeout=timeout, what=f"{node} Ready after a power cycle")


# --- control-plane components (static pods in ng-cp1) --------------------------------------

def cp_exec(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    return podman("exec", CONTROL_PLANE, *command, check=check)


def manifest_path(component: str) -> str:
    return f"/etc/kubernetes/manifests/{component}.yaml"


def read_manifest(component: str) -> str:
    return cp_exec("cat", manifest_path(component)).stdout


def write_manifest(component: str, text: str) -> None:
    """Replace a manifest atomically (write a dot file, then rename), as careful tools do."""
    temporary = f"/etc/kubernetes/manifests/.{component}.yaml.tmp"
    subprocess.run(["podman", "exec", "-i", CONTROL_PLANE, "sh", "-c", f"cat > {temporary} && mv {temporary} "
                    f"{manifest_path(component)}"], input=text, text=True, check=True)


def component_pid(component: str) -> int:
    out = cp_exec("systemctl", "show", "--property=MainPID", "--value", f"{component}.service").stdout.strip()
    return int(out or 0)


def component_flags(component: str) -> list[str]:
    """The live argv of a running component, from /proc/<pid>/cmdline inside the node."""
    pid = component_pid(component)
    if not pid:
        return []
    cmdline = cp_exec("cat", f"/proc/{pid}/cmdline", check=False).stdout
    return [arg for arg in cmdline.split("\0") if arg]


def node_lease(node: str) -> client.V1Lease:
    """The node's heartbeat Lease (kube-node-lease/<node>)."""
    return client.CoordinationV1Api(api_client()).read_namespaced_lease(node, "kube-node-lease")


def node_lease_exists(node: str) -> bool:
    try:
        node_lease(node)
    except client.exceptions.ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def lease_holder(name: str, namespace: str = "kube-system") -> str:
    """Who holds a Lease: for kube-controller-manager / kube-scheduler, the process running the controllers."""
    lease = client.CoordinationV1Api(api_client()).read_namespaced_lease(name, namespace)
    return lease.spec.holder_identity or ""


def component_healthy(component: str) -> bool:
    """The component's own health endpoint answers ok (anonymous access is allowed for these paths)."""
    result = cp_exec("curl", "--silent", "--insecure", "--max-time", "3", HEALTH_URLS[component], check=False)
    return result.returncode == 0 and result.stdout.strip() == "ok"


# --- the real-kubelet worker (NODEGUARD_LAB_REAL_KUBELET=1, docs/lab-workers.md) ------------

REAL_KUBELET_LABEL = "nodeguard.lab.kubelet=real"  # the podman label workers.sh gives it


def real_kubelet_workers() -> list[str]:
    names = podman("ps", "-a", "--filter", f"label={REAL_KUBELET_LABEL}", "--format", "{{.Names}}").stdout.split()
    return sorted(names)


def lab_up_with_real_kubelet(enabled: bool) -> None:
    """lab.sh up with or without the real-kubelet worker in its BMCs and inventory (idempotent)."""
    env = dict(os.environ, NODEGUARD_LAB_REAL_KUBELET="1" if enabled else "0")
    subprocess.run([str(LAB_SH), "up"], check=True, env=env)


@contextlib.contextmanager
def real_kubelet_worker() -> Iterator[str]:
    """The lab's real-kubelet worker, on and Ready. A lab without one gets one for the block; afterwards the
    workloads are drained off it, and the machine, its Node and its BMC and inventory entries are removed."""
    created = not real_kubelet_workers()
    if created:
        lab_up_with_real_kubelet(True)
    names = real_kubelet_workers()
    assert names, "lab.sh up with NODEGUARD_LAB_REAL_KUBELET=1 brought up no real-kubelet worker"
    node = names[0]
    assert node in inventory_nodes()["workers"], f"{node} is not in the lab inventory's workers"
    if container_state(node) != "running":
        power_on(node)
    # A new kubelet reports Ready a moment before it creates its Lease: wait for both.
    wait_for(lambda: node_ready(node) and node_lease_exists(node), timeout=180, what=f"{node} Ready with its Lease")
    try:
        yield node
    finally:
        if created:
            kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=180s", check=False)
            podman("rm", "--force", "--time", "0", node)
            kubectl("delete", "node", node, "--ignore-not-found")
            lab_up_with_real_kubelet(False)
