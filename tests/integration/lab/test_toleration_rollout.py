"""failover_toleration_rollout on the lab's real apiserver and controllers (issue 34 item 7).

A Deployment of the test's own, in a namespace of its own, runs pods admitted with the lab's stock 300 s
tolerations. Told that the cluster now adds 20 s, the module lists its pods with their owner (the ReplicaSet followed
to the Deployment) and the restart command; --check rolls nothing; with roll=true it restarts the Deployment as
`kubectl rollout restart` does and returns once the real controller-manager has replaced every pod. The lab stays
untuned, so the new pods get 300 s again: the test proves the roll, not a tune.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
NAMESPACE = "nodeguard-rollout-test"
DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "stale", "namespace": NAMESPACE},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "stale"}},
             "template": {"metadata": {"labels": {"app": "stale"}},
                          "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}]}}},
}


def run_module(lab, *args: str, check: bool = False) -> dict:
    """The module through ansible, as a play would call it, with the lab's kubeconfig; its JSON result."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="json", K8S_AUTH_KUBECONFIG=lab.kubeconfig(),
               PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    argv = [str(REPO / ".venv" / "bin" / "ansible"), "localhost", "-c", "local", "-m",
            "nodeguard.failover.failover_toleration_rollout", "-a",
            " ".join(["not_ready_toleration_seconds=20", "unreachable_toleration_seconds=20", f"namespaces={NAMESPACE}",
                      "interval=1", "timeout=180", *args])]
    result = subprocess.run(argv + (["--check"] if check else []), cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def pods(lab) -> list[dict]:
    return json.loads(lab.kubectl("get", "pods", "-n", NAMESPACE, "-l", "app=stale", "-o", "json").stdout)["items"]


def settled(lab):
    """The Deployment's pods once there are exactly two and both are Ready; None before."""
    found = [p for p in pods(lab) if not p["metadata"].get("deletionTimestamp")]
    ready = [p for p in found if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))]
    return found if len(found) == 2 and len(ready) == 2 else None


@pytest.fixture
def stale_deployment(lab):
    lab.kubectl("create", "namespace", NAMESPACE)
    try:
        lab.kubectl("apply", "-f", "-", stdin=json.dumps(DEPLOYMENT))
        yield lab.wait_for(lambda: settled(lab), timeout=120, what=f"{NAMESPACE}/stale Ready")
    finally:
        lab.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def ours(result: dict) -> list[dict]:
    return [p for p in result["pods"] if p["namespace"] == NAMESPACE]


def test_the_running_pods_are_listed_and_their_deployment_rolled_by_the_real_controllers(lab, stale_deployment):
    before = {p["metadata"]["name"] for p in stale_deployment}

    listed = run_module(lab)
    assert {p["name"] for p in ours(listed)} == before
    assert all(p["owner"] == {"kind": "Deployment", "namespace": NAMESPACE, "name": "stale"} and p["rollable"] for p in ours(listed))
    assert f"kubectl -n {NAMESPACE} rollout restart deployment/stale" in listed["commands"]
    assert listed["changed"] is False

    checked = run_module(lab, "roll=true", check=True)
    assert checked["changed"] is True and checked["rolled"] == []
    assert {p["metadata"]["name"] for p in pods(lab)} == before  # nothing restarted

    rolled = run_module(lab, "roll=true")
    assert {"kind": "Deployment", "namespace": NAMESPACE, "name": "stale"} in [
        {key: w[key] for key in ("kind", "namespace", "name")} for w in rolled["rolled"]]
    deployment = json.loads(lab.kubectl("get", "deployment", "-n", NAMESPACE, "stale", "-o", "json").stdout)
    assert "kubectl.kubernetes.io/restartedAt" in deployment["spec"]["template"]["metadata"]["annotations"]
    # The module returned only once the rollout was done: two new Ready pods, none of the old ones.
    after = lab.wait_for(lambda: settled(lab), timeout=30, what="the rolled pods")
    assert {p["metadata"]["name"] for p in after}.isdisjoint(before)
