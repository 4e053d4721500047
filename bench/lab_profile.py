"""Apply a benchmark profile to the running lab, through the same files a kubeadm node has:
the static pod manifests in ng-cp1 and /var/lib/kubelet/config.yaml on every worker.

Only the flags and fields that some profile sets are touched (MANAGED_*); a profile that does
not set one removes it, so the component falls back to its default. Files are rewritten only
when they change, because every rewrite restarts a component.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

import lablib  # noqa: E402  (tests/integration/lablib.py: the lab's helpers)

MANAGED_FLAGS = {
    "kube-controller-manager": ("node-monitor-period", "node-monitor-grace-period"),
    "kube-apiserver": ("default-not-ready-toleration-seconds", "default-unreachable-toleration-seconds"),
}
MANAGED_KUBELET_FIELDS = ("nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "nodeLeaseDurationSeconds")
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"


def with_flags(manifest_text: str, component: str, wanted: dict) -> str:
    """The manifest with the managed flags of this component set to wanted (absent = removed)."""
    manifest = yaml.safe_load(manifest_text)
    container = manifest["spec"]["containers"][0]
    managed = MANAGED_FLAGS[component]
    command = [arg for arg in container["command"]
               if not any(arg.startswith(f"--{flag}=") for flag in managed)]
    command += [f"--{flag}={wanted[flag]}" for flag in managed if flag in wanted]
    container["command"] = command
    return yaml.safe_dump(manifest, sort_keys=False)


def with_kubelet_fields(config_text: str, wanted: dict) -> str:
    config = yaml.safe_load(config_text)
    for field in MANAGED_KUBELET_FIELDS:
        config.pop(field, None)
        if field in wanted:
            config[field] = wanted[field]
    return yaml.safe_dump(config, sort_keys=False)


def _flags_live(component: str, wanted: dict) -> bool:
    live = set(lablib.component_flags(component))
    managed = MANAGED_FLAGS[component]
    expected = {f"--{flag}={wanted[flag]}" for flag in managed if flag in wanted}
    present = {arg for arg in live if any(arg.startswith(f"--{flag}=") for flag in managed)}
    return bool(live) and present == expected


def apply_control_plane(settings: dict) -> list[str]:
    """Write the manifests that differ; wait until the components run with the new flags."""
    changed = []
    for component, key in (("kube-apiserver", "kube_apiserver"), ("kube-controller-manager", "kube_controller_manager")):
        wanted = {flag: str(value) for flag, value in settings[key].items()}
        current = lablib.read_manifest(component)
        updated = with_flags(current, component, wanted)
        if yaml.safe_load(updated) != yaml.safe_load(current):
            lablib.write_manifest(component, updated)
            changed.append(component)
        lablib.wait_for(lambda c=component, w=wanted: _flags_live(c, w), timeout=180, interval=1,
                        what=f"{component} running with {wanted}")
    _wait_control_plane_serving()
    return changed


def _wait_control_plane_serving() -> None:
    lablib.wait_for(lablib.lab_is_up, timeout=180, interval=1, what="kube-apiserver ready")
    lablib.wait_for(lambda: lablib.component_healthy("kube-controller-manager"), timeout=120, interval=1,
                    what="kube-controller-manager healthy")


def restore_manifests(original: dict) -> list[str]:
    """Write back each control-plane manifest whose bytes differ from `original` ({component: text}, read before
    the first profile) and wait until its component has restarted and serves. The static pod runner restarts a
    component on any change of its manifest's bytes, a moment after the write: without this wait the next
    invocation found the apiserver ready, then gone at its first request (make bench of 2026-11-26)."""
    restored = []
    for component, text in original.items():
        if lablib.read_manifest(component) == text:
            continue
        before = lablib.component_pid(component)
        lablib.write_manifest(component, text)
        lablib.wait_for(lambda c=component, old=before: lablib.component_pid(c) not in (0, old), timeout=180, interval=1,
                        what=f"{component} restarted with its restored manifest")
        restored.append(component)
    if restored:
        _wait_control_plane_serving()
    return restored


def apply_workers(settings: dict, workers: list[str]) -> list[str]:
    """Rewrite each worker's kubelet config where it differs and restart its kubelet stand-in."""
    wanted = settings["kubelet"]
    changed = []
    for worker in workers:
        current = lablib.podman("exec", worker, "cat", KUBELET_CONFIG).stdout
        updated = with_kubelet_fields(current, wanted)
        if yaml.safe_load(updated) == yaml.safe_load(current):
            continue
        subprocess.run(["podman", "exec", "-i", worker, "sh", "-c",
                        f"cat > {KUBELET_CONFIG}.tmp && mv {KUBELET_CONFIG}.tmp {KUBELET_CONFIG} "
                        "&& systemctl restart kubelet"], input=updated, text=True, check=True)
        changed.append(worker)
    for worker in workers:
        lablib.wait_for(lambda w=worker: lablib.node_ready(w), timeout=120, what=f"{worker} Ready")
    return changed


def _unreachable_toleration(pod) -> int | None:
    for toleration in pod.spec.tolerations or []:
        if toleration.key == "node.kubernetes.io/unreachable":
            return toleration.toleration_seconds
    return None


def refresh_workloads(settings: dict) -> bool:
    """Default tolerations are written into pods at creation: recreate the workloads' pods when
    theirs differ from the profile's, so the measured eviction uses the profile's value."""
    wanted = int(settings["kube_apiserver"].get("default-unreachable-toleration-seconds", 300))
    pods = lablib.core().list_namespaced_pod(lablib.NAMESPACE).items
    stale = [p for p in pods if p.metadata.labels.get("app") in ("web", "db") and _unreachable_toleration(p) != wanted]
    if not stale:
        return False
    for workload in ("deployment/web", "statefulset/db"):
        lablib.kubectl("-n", lablib.NAMESPACE, "rollout", "restart", workload)
    for workload in ("deployment/web", "statefulset/db"):
        lablib.kubectl("-n", lablib.NAMESPACE, "rollout", "status", workload, "--timeout=300s")
    lablib.wait_for(lablib.workloads_ready, timeout=300, interval=2, what="workloads Ready")
    return True


def apply(settings: dict) -> dict:
    started = time.monotonic()
    workers = lablib.worker_names()
    changed = apply_control_plane(settings) + apply_workers(settings, workers)
    refreshed = refresh_workloads(settings)
    return {"changed": changed, "workloads_recreated": refreshed, "seconds": round(time.monotonic() - started, 1)}
