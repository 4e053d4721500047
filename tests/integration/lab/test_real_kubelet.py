"""The REAL kubelet on a lab worker (issue 14, deliverables 1 and 3; docs/lab-workers.md).

The real-kubelet worker (NODEGUARD_LAB_REAL_KUBELET=1 adds it as ng-worker<N+1>) runs kubelet v1.35.4,
built from the control plane's k8s.io/kubernetes module, with containerd and runc in the node container.
The module brings it up when the lab has none (`lab.sh up` with the variable) and, in that case, removes
it again afterwards (`lab.sh up` without it rewrites the BMCs and the inventory), so the lab is left as
it was found. In order:
  1. the Node is Ready and says what runs it: kubelet v1.35.4, containerd, the SMBIOS UUID its BMC reports;
  2. a pod runs in real containers: containerd's tasks in the node, the process, its log through the API;
  3. the Lease is renewed every nodeLeaseDurationSeconds / 4, as config.yaml says;
  4. the kubelet_heartbeat role (as tune-failover's kubelet play runs it) changes config.yaml, restarts the
     kubelet; the kubelet holds the new Lease duration and rhythm and is Ready; audit-failover reads them;
  5. a planned shutdown (`systemctl poweroff` in the node) after the role set shutdownGracePeriod: the
     kubelet's shutdown manager (logind delay lock) marks the Node not ready "node is shutting down" and
     stops the pod with SIGTERM (DisruptionTarget TerminationByKubelet) before the machine goes down;
  6. a power cycle through its BMC: the node comes back Ready with a new bootID on the same machine.
"""

from __future__ import annotations

import datetime
import importlib.util
import itertools
import json
import os
import statistics
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CONFIG = "/var/lib/kubelet/config.yaml"
TUNE_PLAYBOOK = REPO / "tests" / "integration" / "lab" / "real_kubelet_tune.yml"
BUSYBOX = "localhost/nodeguard-lab/busybox:1.35"  # made in the node (lab/workers/kubelet/lab-images.py)
PAUSE = "registry.k8s.io/pause:3.10"
# The role's settings for the test: a Lease of 20 s is renewed every 5 s (stock: 40 s, every 10 s).
TUNED = {"nodeLeaseDurationSeconds": 20, "nodeStatusUpdateFrequency": "4s"}


def node_exec(lab, node: str, *command: str, check: bool = True) -> subprocess.CompletedProcess:
    return lab.podman("exec", node, *command, check=check)


def bmc_system_uuid(node: str) -> str:
    spec = importlib.util.spec_from_file_location("system_uuid", REPO / "lab" / "bmc" / "system_uuid.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.system_uuid(node))


def renewals(lab, node: str, count: int, timeout: float) -> list[datetime.datetime]:
    """The next `count` distinct renewTimes of the node's Lease (polled every 0.25 s)."""
    seen: list[datetime.datetime] = []
    deadline = time.monotonic() + timeout
    while len(seen) < count and time.monotonic() < deadline:
        renew = lab.node_lease(node).spec.renew_time
        if not seen or renew != seen[-1]:
            seen.append(renew)
        time.sleep(0.25)
    assert len(seen) >= count, f"only {len(seen)} Lease renewals of {node} in {timeout:.0f}s: {seen}"
    return seen


def assert_renew_rhythm(lab, node: str, expected: float) -> None:
    # The first value read may be an old renewal: gaps are taken between the renewals seen happen.
    times = renewals(lab, node, 5, timeout=6 * expected + 10)[1:]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    median = statistics.median(gaps)
    # The kubelet renews every duration/4 with up to 4% jitter; allow for a loaded 2-core machine.
    assert 0.8 * expected <= median <= 1.25 * expected, f"{node} renews its Lease every {gaps}, expected ~{expected}s"


def kubelet_pid(lab, node: str) -> str:
    return node_exec(lab, node, "systemctl", "show", "kubelet", "-p", "MainPID", "--value").stdout.strip()


def ready_condition(lab, node: str):
    return next(c for c in lab.core().read_node(node).status.conditions if c.type == "Ready")


def ansible_json(playbook: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    """Run a playbook with the lab inventory; the json stdout callback gives every task's result per host."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json",
               PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    result = subprocess.run([str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(REPO / "lab" / ".state" / "inventory.yml"),
                             str(playbook), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    try:
        return result, json.loads(result.stdout)
    except json.JSONDecodeError:
        return result, None


@pytest.fixture(scope="module")
def real_worker(lab):
    """The lab's real-kubelet worker (lablib.real_kubelet_worker), its config.yaml put back after the module."""
    with lab.real_kubelet_worker() as node:
        config = node_exec(lab, node, "cat", CONFIG).stdout
        yield node
        # Whatever happened: the worker on, its config.yaml as it was, the kubelet running it.
        if lab.container_state(node) != "running":
            lab.power_on(node)
        if node_exec(lab, node, "cat", CONFIG, check=False).stdout != config:
            subprocess.run(["podman", "exec", "-i", node, "sh", "-c", f"cat > {CONFIG} && systemctl restart kubelet"],
                           input=config, text=True, check=True)
        lab.wait_for(lambda: lab.node_ready(node), timeout=180, what=f"{node} Ready after the tests")


def pinned_pod(lab, node: str, name: str, containers: list[dict], grace_seconds: int = 1) -> None:
    manifest = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": lab.NAMESPACE},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": grace_seconds,
            "containers": containers,
        },
    }
    lab.kubectl("apply", "-f", "-", stdin=json.dumps(manifest))


def running_pod(lab, name: str, containers: int):
    return lab.wait_for(
        lab.value_when(lambda: lab.core().read_namespaced_pod(name, lab.NAMESPACE),
                       lambda p: p.status.phase == "Running" and all(s.ready for s in p.status.container_statuses or [])
                       and len(p.status.container_statuses or []) == containers),
        timeout=120, interval=1, what=f"{name} Running")


@pytest.fixture
def pod(lab, real_worker):
    """A pod pinned to the real worker: a busybox container that logs a token and sleeps, next to a pause container."""
    name, token = f"real-kubelet-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex
    pinned_pod(lab, real_worker, name, [
        {"name": "sleeper", "image": BUSYBOX, "imagePullPolicy": "Never",
         "command": ["sh", "-c", f"echo token={token}; exec sleep 3600"]},
        {"name": "pause", "image": PAUSE, "imagePullPolicy": "IfNotPresent"},
    ])
    yield name, token
    lab.kubectl("delete", "pod", "-n", lab.NAMESPACE, name, "--ignore-not-found", "--wait=false", check=False)


def test_node_is_ready_and_says_what_runs_it(lab, real_worker):
    node = lab.core().read_node(real_worker)
    info = node.status.node_info
    assert ready_condition(lab, real_worker).status == "True"
    assert info.kubelet_version == lab.K8S_VERSION
    assert info.container_runtime_version.startswith("containerd://"), info.container_runtime_version
    # The SMBIOS UUID its lab BMC reports (the identity node_power and node-recover compare).
    assert uuid.UUID(info.system_uuid) == uuid.UUID(bmc_system_uuid(real_worker)), info.system_uuid
    # Not the host's boot: the node's own (lab/workers/kubelet/nodeguard-node-identity.sh).
    assert info.boot_id != Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    # The real kubelet, not the stand-in: the process is /usr/local/bin/kubelet with the kubeadm flags.
    cmdline = node_exec(lab, real_worker, "cat", f"/proc/{kubelet_pid(lab, real_worker)}/cmdline").stdout.split("\0")
    assert cmdline[0] == "/usr/local/bin/kubelet", cmdline
    assert "--config=/var/lib/kubelet/config.yaml" in cmdline and "--kubeconfig=/etc/kubernetes/kubelet.conf" in cmdline
    # Its cgroups are its own: no cgroup mount in the node reaches above the node's cgroup namespace
    # (root "/../.." would be the host's hierarchy, where the node's systemd must never build its tree).
    mounts = [line.split() for line in node_exec(lab, real_worker, "cat", "/proc/1/mountinfo").stdout.splitlines()]
    outside = [m for m in mounts if m[4].startswith("/sys/fs/cgroup/") and m[3].startswith("/..")]
    assert not outside, outside


def test_pod_runs_in_real_containers(lab, real_worker, pod):
    name, token = pod
    running = running_pod(lab, name, containers=2)
    assert running.spec.node_name == real_worker
    assert running.status.pod_ip and running.status.pod_ip.startswith("10.244."), running.status.pod_ip
    ids = {s.name: s.container_id.split("://", 1)[1] for s in running.status.container_statuses}
    assert all(s.container_id.startswith("containerd://") for s in running.status.container_statuses)
    tasks = {line.split()[0]: line.split() for line in
             node_exec(lab, real_worker, "ctr", "--namespace", "k8s.io", "tasks", "list").stdout.splitlines()[1:]}
    for container, container_id in ids.items():
        assert container_id in tasks and tasks[container_id][2] == "RUNNING", f"{container}: {tasks}"
    sleeper_pid = tasks[ids["sleeper"]][1]
    assert node_exec(lab, real_worker, "cat", f"/proc/{sleeper_pid}/cmdline").stdout.split("\0")[:2] == ["sleep", "3600"]
    # The container's output, through the API server and the kubelet's own server.
    assert f"token={token}" in lab.kubectl("logs", "-n", lab.NAMESPACE, name, "-c", "sleeper").stdout

    lab.kubectl("delete", "pod", "-n", lab.NAMESPACE, name, "--wait=true", "--timeout=60s")
    remaining = node_exec(lab, real_worker, "ctr", "--namespace", "k8s.io", "tasks", "list").stdout
    assert not any(container_id in remaining for container_id in ids.values()), remaining


def test_lease_is_renewed_at_the_configured_rhythm(lab, real_worker):
    config = yaml.safe_load(node_exec(lab, real_worker, "cat", CONFIG).stdout)
    duration = config.get("nodeLeaseDurationSeconds") or 40  # the kubelet's default when unset
    assert lab.node_lease(real_worker).spec.lease_duration_seconds == duration
    assert_renew_rhythm(lab, real_worker, duration / 4)


def test_kubelet_role_retunes_the_real_kubelet_and_audit_reads_it(lab, real_worker, tmp_path):
    before = yaml.safe_load(node_exec(lab, real_worker, "cat", CONFIG).stdout)
    assert before.get("nodeLeaseDurationSeconds") != TUNED["nodeLeaseDurationSeconds"], "the test needs another value first"
    pid_before = kubelet_pid(lab, real_worker)
    started = datetime.datetime.now(datetime.UTC)

    result, report = ansible_json(TUNE_PLAYBOOK, "-e", json.dumps({"tune_hosts": real_worker, "tune_settings": TUNED}))
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert report is not None

    after = yaml.safe_load(node_exec(lab, real_worker, "cat", CONFIG).stdout)
    for key, value in TUNED.items():
        assert after[key] == value, (key, after.get(key))
    # Only the tuned fields changed: the node-specific ones (cgroupfs, containerd's socket) stayed.
    assert {k: v for k, v in after.items() if k not in TUNED} == {k: v for k, v in before.items() if k not in TUNED}
    assert kubelet_pid(lab, real_worker) not in ("0", pid_before), "the kubelet was not restarted"
    # The restarted kubelet holds the new Lease: its duration, a renewal after the restart, the new rhythm.
    renewed = lab.node_lease(real_worker)
    assert renewed.spec.lease_duration_seconds == TUNED["nodeLeaseDurationSeconds"]
    assert renewed.spec.renew_time > started
    assert ready_condition(lab, real_worker).status == "True"
    assert_renew_rhythm(lab, real_worker, TUNED["nodeLeaseDurationSeconds"] / 4)

    # The audit prints a short report and writes the whole of it, settings per node included, to a JSON file.
    audit_file = tmp_path / "audit.json"
    result, report = ansible_json(REPO / "playbooks" / "audit_failover.yml", "-e", f"audit_report_path={audit_file}")
    assert result.returncode == 0 and report is not None, (result.stdout + result.stderr)[-4000:]
    kubelet = json.loads(audit_file.read_text())["settings_per_node"][real_worker]["kubelet"]
    assert str(kubelet.get("nodeLeaseDurationSeconds")) == "20", kubelet
    assert kubelet.get("nodeStatusUpdateFrequency") == "4s", kubelet


@pytest.mark.parametrize("shutdown_by", ["systemctl poweroff", "BMC GracefulShutdown"])
def test_planned_shutdown_lets_the_kubelet_stop_pods_gracefully(lab, real_worker, shutdown_by):
    shutdown = {"shutdownGracePeriod": "20s", "shutdownGracePeriodCriticalPods": "5s"}
    result = ansible_json(TUNE_PLAYBOOK, "-e", json.dumps({"tune_hosts": real_worker, "tune_settings": shutdown}))[0]
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    # The kubelet's shutdown manager holds a logind "delay" lock for the shutdown (and wrote logind's InhibitDelayMaxSec).
    inhibitors = node_exec(lab, real_worker, "systemd-inhibit", "--list", "--no-pager").stdout
    assert any(line.split()[:1] == ["kubelet"] and "delay" in line.split() for line in inhibitors.splitlines()), inhibitors

    name = f"real-kubelet-shutdown-{uuid.uuid4().hex[:6]}"
    pinned_pod(lab, real_worker, name, [
        {"name": "server", "image": BUSYBOX, "imagePullPolicy": "Never",
         "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]},
    ], grace_seconds=30)
    try:
        running_pod(lab, name, containers=1)
        boot_id = lab.core().read_node(real_worker).status.node_info.boot_id
        if shutdown_by == "systemctl poweroff":
            node_exec(lab, real_worker, "systemctl", "poweroff", "--no-block")
        else:
            lab.graceful_shutdown(real_worker)
        lab.wait_for(lambda: lab.container_state(real_worker) != "running", timeout=60, interval=0.5,
                     what=f"{real_worker} shut down")
        # What the kubelet posted on its way down: the node not ready because it shuts down ...
        ready = ready_condition(lab, real_worker)
        assert (ready.status, ready.message) == ("False", "node is shutting down"), ready
        # ... and the pod stopped by the kubelet with SIGTERM: its trap ran (exit 0), not a kill.
        stopped = lab.core().read_namespaced_pod(name, lab.NAMESPACE)
        disruption = [c for c in stopped.status.conditions or [] if c.type == "DisruptionTarget"]
        assert disruption and disruption[0].reason == "TerminationByKubelet", stopped.status.conditions
        terminated = stopped.status.container_statuses[0].state.terminated
        assert terminated is not None and terminated.exit_code == 0, stopped.status.container_statuses

        lab.power_on(real_worker)
        lab.wait_for(lab.value_when(lambda: lab.core().read_node(real_worker).status.node_info.boot_id,
                                    lambda b: b != boot_id), timeout=180, what=f"{real_worker} booted again")
        lab.wait_for(lambda: lab.node_ready(real_worker), timeout=180, what=f"{real_worker} Ready after the shutdown")
    finally:
        lab.kubectl("delete", "pod", "-n", lab.NAMESPACE, name, "--ignore-not-found", "--wait=false", check=False)


def test_power_cycle_through_the_bmc_gives_a_new_boot_on_the_same_machine(lab, real_worker):
    before = lab.core().read_node(real_worker).status.node_info
    lab.power_off(real_worker)
    lab.wait_for(lambda: lab.container_state(real_worker) != "running", timeout=30, what=f"{real_worker} off")
    started = time.monotonic()
    lab.power_on(real_worker)
    info = lab.wait_for(
        lab.value_when(lambda: lab.core().read_node(real_worker).status.node_info, lambda i: i.boot_id != before.boot_id),
        timeout=180, interval=0.5, what=f"{real_worker} reporting a new bootID")
    lab.wait_for(lambda: lab.node_ready(real_worker), timeout=180, interval=0.5, what=f"{real_worker} Ready")
    print(f"\n{real_worker}: power-on to new bootID and Ready in {time.monotonic() - started:.1f}s")
    assert info.system_uuid == before.system_uuid and info.machine_id == before.machine_id
    assert lab.container_state(real_worker) == "running"
    assert node_exec(lab, real_worker, "systemctl", "is-active", "containerd", "kubelet").stdout.split() == ["active", "active"]
