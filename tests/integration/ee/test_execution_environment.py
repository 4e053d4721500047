"""node-outage and node-recover inside the execution environment, started by ansible-runner as AWX starts a job.

`make test-ee` builds the execution environment (scripts/build-ee.sh: deploy/ee/execution-environment.yml with
ansible-builder, air-gapped) and runs this module on a private lab that has the image loaded
(NODEGUARD_LAB_EE_IMAGE=1). ansible-runner runs the job the way AWX's receptor worker does: a private data
directory (project, inventory, extra vars), process isolation in the container image with podman, the job's
output and status read back from the artifacts. The project is a one-line playbook that imports the collection's
playbook by its FQCN: the collection, its dependencies (kubernetes.core, ansible.posix, community.general) and its
Python requirements (kubernetes, ruamel.yaml) all come from the image, nothing from the host's virtualenv.

One worker that runs a db pod (StatefulSet, RWO volume) is powered off through its BMC; node-outage in the image,
as the least-privileged ServiceAccount, proves it off and taints it; the db pod is Ready elsewhere; the worker is
powered on and node-recover in the image removes the taint. The image sees the lab's network (the private lab's
own namespace, --network=host) and the BMC CA from a read-only mount of the lab at its own path; the lab's
inventory is copied into the private data directory, as AWX writes a job's inventory there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "incident"))
from test_incident_lab import FAST, NAMESPACE, OOS  # the incident lab tests' short waits, workloads and taint

REPO = Path(__file__).resolve().parents[3]
INVENTORY = REPO / "lab" / ".state" / "inventory.yml"
RUNNER = REPO / ".venv" / "bin" / "ansible-runner"
IMAGE = "localhost/nodeguard-ee:latest"


def run_job(directory: Path, playbook: str, extravars: dict, ca_dir: Path) -> tuple[str, str]:
    """ansible-runner run in the execution environment; returns (status, stdout) from the job's artifacts."""
    project = directory / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "job.yml").write_text(
        f"---\n- name: The collection's playbook, as an AWX project imports it\n"
        f"  ansible.builtin.import_playbook: {playbook}\n"
    )
    inventory = directory / "inventory"  # the job's inventory, as AWX writes it into the private data directory
    inventory.mkdir(exist_ok=True)
    (inventory / "hosts.yml").write_text(INVENTORY.read_text())
    env = directory / "env"
    env.mkdir(exist_ok=True)
    (env / "extravars").write_text(json.dumps(extravars))
    (env / "extravars").chmod(0o600)
    argv = [
        str(RUNNER), "run", str(directory), "--playbook", "job.yml", "--ident", "job",
        "--process-isolation", "--process-isolation-executable", "podman", "--container-image", IMAGE,
        "--container-option=--network=host",
        # as the owner of the job's 0600 files, as AWX's rootless podman runs the job as its own user
        f"--container-option=--user={os.getuid()}:{os.getgid()}",
        f"--container-volume-mount={REPO}:{REPO}:ro",
        f"--container-volume-mount={ca_dir}:{ca_dir}:ro",
    ]
    subprocess.run(argv, cwd=directory, capture_output=True, text=True, timeout=900, check=False)
    artifacts = directory / "artifacts" / "job"
    status = (artifacts / "status").read_text().strip() if (artifacts / "status").exists() else "no status"
    stdout = (artifacts / "stdout").read_text(errors="replace") if (artifacts / "stdout").exists() else ""
    return status, stdout


def taints(lab, node: str) -> list[str]:
    return [t.key for t in (lab.core().read_node(node).spec.taints or [])]


@pytest.fixture(scope="module")
def db_worker(lab):
    lab.reset_lab()
    pods = lab.core().list_namespaced_pod(NAMESPACE, label_selector="app=db").items
    candidates = sorted({p.spec.node_name for p in pods if p.spec.node_name in lab.worker_names()})
    assert candidates, "no worker runs a db pod; is the lab's StatefulSet up?"
    yield candidates[0]
    lab.reset_lab()


def test_node_outage_and_recover_run_in_the_execution_environment(lab, remediator, db_worker, tmp_path):
    node = db_worker
    image = subprocess.run(["podman", "image", "exists", IMAGE], check=False)
    assert image.returncode == 0, f"{IMAGE} is not in this lab's storage: run `make test-ee` (scripts/build-ee.sh)"
    extravars = dict(FAST, **{k: v for k, v in remediator.items() if not k.startswith("_")}, outage_nodes=[node])

    lab.power_off(node)
    lab.wait_for(lambda: not lab.node_ready(node), timeout=180, what=f"{node} NotReady")
    status, stdout = run_job(tmp_path / "outage", "nodeguard.failover.node_outage", extravars, remediator["_dir"])
    assert status == "successful", f"node-outage in {IMAGE}: {status}\n{stdout[-4000:]}"
    assert "outage complete" in stdout, stdout[-4000:]
    assert OOS in taints(lab, node)
    pods = lab.core().list_namespaced_pod(NAMESPACE, label_selector="app=db").items
    moved = [p for p in pods if p.spec.node_name and p.spec.node_name != node
             and any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))]
    assert moved, f"no db pod Ready off {node} after node-outage in the image"

    lab.power_on(node)
    status, stdout = run_job(tmp_path / "recover", "nodeguard.failover.node_recover", extravars, remediator["_dir"])
    assert status == "successful", f"node-recover in {IMAGE}: {status}\n{stdout[-4000:]}"
    assert OOS not in taints(lab, node), stdout[-4000:]
