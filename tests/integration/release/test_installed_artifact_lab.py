"""The built artifact, installed into a clean collections path, runs its playbooks by FQCN against the lab.

scripts/release-test.sh builds the artifact and installs it as the README says (`ansible-galaxy collection install
-r requirements.yml -p <empty dir>`, the requirements file naming the tarball, a stock configuration), and checks
docs and syntax; with --keep it leaves that directory. From there, with the stock configuration (ANSIBLE_CONFIG an
empty file) and the installed copy as the only collections path, in check mode:
  - nodeguard.failover.tune_failover plans the lab's tuning and changes nothing;
  - nodeguard.failover.node_outage prints the full plan for a powered-off worker and changes nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
LAB_INVENTORY = REPO / "lab" / ".state" / "inventory.yml"
OOS = "node.kubernetes.io/out-of-service"


@pytest.fixture(scope="module")
def installed() -> Iterator[Path]:
    """The release-test work dir: collections/ holds the installed artifact, empty.cfg is the stock configuration."""
    result = subprocess.run([str(REPO / "scripts" / "release-test.sh"), "--keep"],
                            capture_output=True, text=True, check=False, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    work = Path(re.search(r"release-test: kept (\S+)", result.stdout).group(1))
    yield work
    shutil.rmtree(work, ignore_errors=True)


def run_fqcn(installed: Path, playbook: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ANSIBLE_CONFIG=str(installed / "empty.cfg"), ANSIBLE_COLLECTIONS_PATH=str(installed / "collections"),
               PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    env.pop("ANSIBLE_COLLECTIONS_PATHS", None)
    assert (installed / "empty.cfg").read_text() == "" and (installed / "run" / "requirements.yml").exists()
    return subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(LAB_INVENTORY), f"nodeguard.failover.{playbook}", "--check", *args],
        cwd=installed / "run", env=env, capture_output=True, text=True, check=False, timeout=900,
    )


def cluster_state(lab) -> dict:
    """What check mode must leave alone: control-plane manifests, kubelet configs, taints, nodeguard annotations."""
    nodes = lab.core().list_node().items
    return {
        "manifests": {c: lab.read_manifest(c) for c in lab.HEALTH_URLS},
        "kubelet": {n: lab.podman("exec", n, "cat", "/var/lib/kubelet/config.yaml").stdout for n in lab.worker_names()
                    if lab.container_state(n) == "running"},
        "taints": {n.metadata.name: sorted(t.key for t in n.spec.taints or []) for n in nodes},
        "annotations": {n.metadata.name: sorted(k for k in n.metadata.annotations or {} if "nodeguard" in k) for n in nodes},
    }


def test_tune_failover_by_fqcn_in_check_mode(lab, installed: Path) -> None:
    before = cluster_state(lab)
    result = run_fqcn(installed, "tune_failover", "-e", "failover_preset=fast")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert cluster_state(lab) == before


@pytest.mark.resets_lab
def test_node_outage_by_fqcn_in_check_mode_plans_and_changes_nothing(lab, installed: Path) -> None:
    lab.reset_lab()
    node = lab.worker_names()[-1]
    lab.power_off(node)

    def dead() -> bool:
        found = lab.core().read_node(node)
        ready = next(c for c in found.status.conditions if c.type == "Ready")
        lease = lab.client.CoordinationV1Api(lab.api_client()).read_namespaced_lease(node, "kube-node-lease")
        return ready.status != "True" and time.time() - ready.last_transition_time.timestamp() > 12 \
            and time.time() - lease.spec.renew_time.timestamp() > lease.spec.lease_duration_seconds + 6

    lab.wait_for(dead, timeout=180, interval=2, what=f"{node} NotReady with a stale Lease")
    before = cluster_state(lab)
    timings = installed / "timings.yml"
    timings.write_text(yaml.safe_dump({"node_outage_not_ready_seconds": 10, "node_outage_lease_margin_seconds": 5}))
    result = run_fqcn(installed, "node_outage", "-e", f"outage_nodes={node}", "-e", f"@{timings}")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "taint" in output and node in output  # the plan names the step and the node
    after = cluster_state(lab)
    assert after["taints"] == before["taints"] and OOS not in after["taints"][node]
    assert after["annotations"] == before["annotations"]
