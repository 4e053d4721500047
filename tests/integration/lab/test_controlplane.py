"""The lab's control plane is real: the built v1.35.4 binaries, driven by kubeadm static pod manifests.

What the tune-failover role relies on is proven here: editing a manifest changes the flags of
the running process, and a bad flag keeps the component unhealthy (so a rollback is needed).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import requests
import yaml

KCM = "kube-controller-manager"


def edited_manifest(text: str, add: list[str] = (), drop_prefix: str | None = None) -> str:
    """The manifest with flags added to (or removed from) the first container's command."""
    pod = yaml.safe_load(text)
    command = pod["spec"]["containers"][0]["command"]
    if drop_prefix:
        command[:] = [arg for arg in command if not arg.startswith(drop_prefix)]
    command.extend(add)
    return yaml.safe_dump(pod, sort_keys=False)


def manifest_command(lab, component: str) -> list[str]:
    return yaml.safe_load(lab.read_manifest(component))["spec"]["containers"][0]["command"]


def test_apiserver_reports_the_pinned_version(lab):
    version = json.loads(lab.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"] == lab.K8S_VERSION
    assert version["clientVersion"]["gitVersion"] == lab.K8S_VERSION


def test_admin_kubeconfig_verifies_the_apiserver_certificate(lab):
    config = yaml.safe_load(Path(lab.kubeconfig()).read_text())
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:16443"
    assert "insecure-skip-tls-verify" not in cluster
    ca_file = lab.STATE / "pki" / "kubernetes" / "pki" / "ca.crt"
    assert requests.get("https://127.0.0.1:16443/readyz", verify=str(ca_file), timeout=5).text == "ok"
    with pytest.raises(requests.exceptions.SSLError):
        requests.get("https://127.0.0.1:16443/readyz", timeout=5)  # system CAs do not trust the lab CA


@pytest.mark.parametrize("component", ["etcd", "kube-apiserver", KCM, "kube-scheduler"])
def test_each_component_runs_its_manifest_command(lab, component):
    assert lab.component_healthy(component)
    assert lab.component_flags(component) == manifest_command(lab, component)


def test_kubeadm_configmaps_exist_as_kubeadm_writes_them(lab):
    cluster = lab.core().read_namespaced_config_map("kubeadm-config", "kube-system").data["ClusterConfiguration"]
    cluster = yaml.safe_load(cluster)
    assert cluster["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    assert cluster["kubernetesVersion"] == lab.K8S_VERSION
    kubelet = yaml.safe_load(lab.core().read_namespaced_config_map("kubelet-config", "kube-system").data["kubelet"])
    assert kubelet["kind"] == "KubeletConfiguration"


def test_default_toleration_seconds_admission_is_on(lab):
    name = f"toleration-probe-{int(time.time())}"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "registry.invalid/none"}]}}
    created = lab.core().create_namespaced_pod("default", pod, dry_run="All")
    tolerations = {(t.key, t.effect): t.toleration_seconds for t in created.spec.tolerations}
    assert tolerations[("node.kubernetes.io/not-ready", "NoExecute")] == 300
    assert tolerations[("node.kubernetes.io/unreachable", "NoExecute")] == 300


def test_node_restriction_admission_is_on(lab):
    """A kubelet identity (system:node:ng-worker1) cannot modify another node's object."""
    name = f"ng-restriction-probe-{int(time.time())}"
    lab.kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}))
    try:
        worker = str(lab.STATE / "pki" / "nodes" / "ng-worker1.conf")
        result = lab.kubectl("--kubeconfig", worker, "--server", "https://127.0.0.1:16443",
                             "label", "node", name, "probe=1", check=False)
        assert result.returncode != 0
        assert "forbidden" in result.stderr.lower()
    finally:
        lab.kubectl("delete", "node", name, "--wait=false")


@pytest.mark.changes_control_plane
def test_manifest_change_restarts_controller_manager_with_new_flags(lab):
    old_pid = lab.component_pid(KCM)
    old_holder = lab.wait_for(lambda: lab.lease_holder(KCM), timeout=60, what="a KCM leader")
    flag = "--node-monitor-grace-period=37s"

    lab.write_manifest(KCM, edited_manifest(lab.read_manifest(KCM), add=[flag], drop_prefix="--node-monitor-grace-period"))

    lab.wait_for(lambda: flag in lab.component_flags(KCM), timeout=60, what=f"{KCM} running with {flag}")
    assert lab.component_pid(KCM) != old_pid
    lab.wait_for(lambda: lab.component_healthy(KCM), timeout=60, what=f"{KCM} healthy")
    # The new process, not a leftover, runs the controllers: it takes over the leader lease.
    new_holder = lab.wait_for(lambda: (h := lab.lease_holder(KCM)) != old_holder and h, timeout=90,
                              what="the restarted KCM holding the leader lease")
    assert new_holder.startswith("ng-cp1_")


@pytest.mark.changes_control_plane
def test_broken_flag_keeps_controller_manager_unhealthy_until_rolled_back(lab):
    good = lab.read_manifest(KCM)
    lab.write_manifest(KCM, edited_manifest(good, add=["--no-such-flag-for-the-lab=1"]))

    lab.wait_for(lambda: "unknown flag: --no-such-flag-for-the-lab" in lab.cp_exec(
        "journalctl", "-u", f"{KCM}.service", "--no-pager", "-n", "50").stdout, timeout=60,
        what="the KCM failing on the unknown flag")
    for _unused in range(10):
        assert not lab.component_healthy(KCM), "a KCM with an unknown flag must never report healthy"
        time.sleep(1)

    lab.write_manifest(KCM, good)  # what the tune role's rollback does
    lab.wait_for(lambda: lab.component_healthy(KCM), timeout=90, what=f"{KCM} healthy after the rollback")
    assert lab.component_flags(KCM) == manifest_command(lab, KCM)


@pytest.mark.changes_control_plane
def test_removing_a_manifest_stops_its_component(lab):
    manifest = lab.manifest_path("kube-scheduler")
    parked = "/etc/kubernetes/kube-scheduler.yaml.parked"
    lab.cp_exec("mv", manifest, parked)
    try:
        lab.wait_for(lambda: lab.component_pid("kube-scheduler") == 0, timeout=30, what="kube-scheduler stopped")
        assert not lab.component_healthy("kube-scheduler")
    finally:
        lab.cp_exec("mv", parked, manifest)
    lab.wait_for(lambda: lab.component_healthy("kube-scheduler"), timeout=60, what="kube-scheduler back")


def test_a_crashed_component_is_started_again(lab):
    old_pid = lab.component_pid("kube-scheduler")
    lab.cp_exec("kill", "-KILL", str(old_pid))
    new_pid = lab.wait_for(lambda: (pid := lab.component_pid("kube-scheduler")) != old_pid and pid, timeout=30,
                           what="kube-scheduler restarted")
    assert new_pid
    lab.wait_for(lambda: lab.component_healthy("kube-scheduler"), timeout=60, what="kube-scheduler healthy")


def test_control_plane_node_is_registered_as_kubeadm_marks_it(lab):
    node = lab.core().read_node(lab.CONTROL_PLANE)
    assert "node-role.kubernetes.io/control-plane" in node.metadata.labels
    assert any(t.key == "node-role.kubernetes.io/control-plane" and t.effect == "NoSchedule"
               for t in node.spec.taints or [])
    assert lab.cp_exec("test", "-s", "/var/lib/kubelet/config.yaml", check=False).returncode == 0
