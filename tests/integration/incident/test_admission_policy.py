"""deploy/admission/ on the lab's real API server: who may add the out-of-service taint, and when.

While the policy is bound:
  - cluster-admin (the lab's admin kubeconfig) cannot add the taint to a Ready node, with or
    without an incident record, nor with `kubectl taint`;
  - the remediation ServiceAccount cannot add it to a Ready node, nor without a record, nor with
    a record naming another node;
  - the remediation ServiceAccount can add it, with its record, to a node that is not Ready
    (kubelet stopped), and anyone allowed to patch Nodes can remove it again (stored with the effect
    NoSchedule, which the policy treats alike, so that no pod of the lab is evicted);
  - the kubelets' own writes go on (every worker stays Ready while the policy is bound).
Afterwards the policy objects this test created are removed, the kubelet is started again and
`reset_lab` puts nodes and workloads back as they were.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import lablib
import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
RBAC = REPO / "deploy" / "rbac"
ADMISSION = REPO / "deploy" / "admission"
OOS = "node.kubernetes.io/out-of-service"
TAINT = {"key": OOS, "value": "nodeshutdown", "effect": "NoExecute"}
# The allowed writes that are really stored use this effect: the policy judges the key, whatever the
# effect, and NoSchedule evicts nothing, so the lab's workloads stay where they are.
KEEPS_PODS = dict(TAINT, effect="NoSchedule")
RECORD = "failover.nodeguard.io/incident"
POLICY = "nodeguard-out-of-service-taint"
# (kind, name) in the order they are removed: the binding first.
OBJECTS = [("validatingadmissionpolicybinding", POLICY), ("validatingadmissionpolicy", POLICY)]

pytestmark = pytest.mark.resets_lab


def kubectl_as(kubeconfig: str, *args: str) -> subprocess.CompletedProcess:
    binary = str(lablib.KUBECTL_CACHED) if lablib.KUBECTL_CACHED.exists() else "kubectl"
    return subprocess.run([binary, "--kubeconfig", kubeconfig, *args], capture_output=True, text=True, check=False)


def record(node: str, incident: str) -> str:
    """An incident record as node_outage writes it (record.py: compact, sorted JSON)."""
    body = {"version": 1, "id": f"{node}-{incident}", "node": node, "job": "admission-test", "phase": "taint", "steps": {}}
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def current_taints(lab, name: str) -> list:
    api = lab.api_client()
    return [api.sanitize_for_serialization(t) for t in lab.core().read_node(name).spec.taints or []]


def taint_patch(lab, node: str, with_record: str | None, taint: dict | None = None) -> str:
    """A merge patch adding the taint to the node's current ones (as node_outage does), optionally with a record."""
    patch: dict = {"spec": {"taints": [t for t in current_taints(lab, node) if t["key"] != OOS] + [taint or TAINT]}}
    if with_record is not None:
        patch["metadata"] = {"annotations": {RECORD: with_record}}
    return json.dumps(patch)


def exists(lab, kind: str, name: str) -> bool:
    return bool(lab.kubectl("get", kind, name, "--ignore-not-found", "-o", "name").stdout.strip())


def node_state(lab, name: str) -> tuple:
    node = lab.core().read_node(name)
    taints = [t.key for t in node.spec.taints or []]
    return OOS in taints, (node.metadata.annotations or {}).get(RECORD)


def without_out_of_service(lab, name: str) -> str:
    """node-recover's removal: the node's taints less the out-of-service one."""
    return json.dumps({"spec": {"taints": [t for t in current_taints(lab, name) if t["key"] != OOS]}})


def denied_by_policy(result: subprocess.CompletedProcess, words: str) -> bool:
    return result.returncode != 0 and f"ValidatingAdmissionPolicy '{POLICY}'" in result.stderr and words in result.stderr


@pytest.fixture(scope="module")
def admin(lab) -> str:
    return lab.kubeconfig()


@pytest.fixture(scope="module")
def remediator(lab, tmp_path_factory) -> str:
    """A kubeconfig that authenticates as the remediation ServiceAccount (deploy/rbac)."""
    lab.kubectl("apply", "-f", str(RBAC))
    token = lab.kubectl("create", "token", "nodeguard-remediator", "-n", "nodeguard-system", "--duration=1h").stdout.strip()
    cluster = yaml.safe_load(Path(lab.kubeconfig()).read_text())["clusters"][0]["cluster"]
    directory = tmp_path_factory.mktemp("admission")
    ca = directory / "ca.crt"
    ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    path = directory / "remediator.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "lab", "cluster": {"server": cluster["server"], "certificate-authority": str(ca)}}],
        "users": [{"name": "remediator", "user": {"token": token}}],
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "remediator"}}],
        "current-context": "lab",
    }))
    path.chmod(0o600)
    return str(path)


@pytest.fixture(scope="module")
def policy(lab, admin):
    """Bind deploy/admission/ for this module; remove afterwards what was not there before."""
    before = {obj: exists(lab, *obj) for obj in OBJECTS}
    ready = [n for n in lab.worker_names() if lab.node_ready(n)]
    assert ready, "the lab has no Ready worker"
    probe = ("patch", "node", ready[0], "--dry-run=server", "--type=merge", "-p", taint_patch(lab, ready[0], None))
    lab.kubectl("apply", "-f", str(ADMISSION))
    try:
        # The API server loads a new policy within seconds; a server-side dry run shows when (it changes nothing).
        lab.wait_for(lambda: denied_by_policy(kubectl_as(admin, *probe), "incident record"), timeout=60,
                     what="the admission policy in force")
        yield
    finally:
        for obj in OBJECTS:
            if not before[obj]:
                lab.kubectl("delete", *obj, "--ignore-not-found")
        if not before[OBJECTS[0]]:
            lab.wait_for(lambda: kubectl_as(admin, *probe).returncode == 0, timeout=60, what="the admission policy gone")


def test_cluster_admin_cannot_add_the_taint_to_a_ready_node(lab, policy, admin):
    node = next(n for n in lab.worker_names() if lab.node_ready(n))
    before = node_state(lab, node)
    assert before[0] is False

    with_record = kubectl_as(admin, "patch", "node", node, "--type=merge", "-p", taint_patch(lab, node, record(node, "admin")))
    assert denied_by_policy(with_record, "may not add the out-of-service taint"), with_record.stderr
    without_record = kubectl_as(admin, "patch", "node", node, "--type=merge", "-p", taint_patch(lab, node, None))
    assert denied_by_policy(without_record, "same write as a new incident record"), without_record.stderr
    by_hand = kubectl_as(admin, "taint", "nodes", node, f"{OOS}=nodeshutdown:NoExecute")
    assert denied_by_policy(by_hand, "same write as a new incident record"), by_hand.stderr

    assert node_state(lab, node) == before
    # Other Node writes by the same user are not matched: labelling the node still works.
    assert kubectl_as(admin, "label", "node", node, "nodeguard-admission-test=1").returncode == 0
    assert kubectl_as(admin, "label", "node", node, "nodeguard-admission-test-").returncode == 0


def test_remediator_cannot_add_the_taint_to_a_ready_node(lab, policy, remediator):
    node = next(n for n in lab.worker_names() if lab.node_ready(n))
    before = node_state(lab, node)
    result = kubectl_as(remediator, "patch", "node", node, "--type=merge", "-p", taint_patch(lab, node, record(node, "ready")))
    assert denied_by_policy(result, f"node {node} is Ready"), result.stderr
    assert node_state(lab, node) == before


def test_remediator_taints_a_node_that_is_not_ready_and_the_taint_can_be_removed(lab, policy, admin, remediator):
    node = lab.worker_names()[-1]
    other = lab.worker_names()[0]
    lab.podman("exec", node, "systemctl", "stop", "kubelet")
    try:
        lab.wait_for(lambda: not lab.node_ready(node), timeout=150, interval=2, what=f"{node} not Ready")
        # The other kubelets kept writing their status through that wait (nodes/status is not matched).
        assert all(lab.node_ready(n) for n in lab.worker_names() if n != node)

        no_record = kubectl_as(remediator, "patch", "node", node, "--type=merge", "-p", taint_patch(lab, node, None))
        assert denied_by_policy(no_record, "same write as a new incident record"), no_record.stderr
        foreign = kubectl_as(remediator, "patch", "node", node, "--type=merge", "-p", taint_patch(lab, node, record(other, "x")))
        assert denied_by_policy(foreign, f"does not name node {node}"), foreign.stderr
        by_admin = kubectl_as(admin, "patch", "node", node, "--type=merge", "-p", taint_patch(lab, node, record(node, "admin")))
        assert denied_by_policy(by_admin, "may not add the out-of-service taint"), by_admin.stderr
        assert node_state(lab, node)[0] is False

        # The write node_outage makes passes admission (a server-side dry run runs the policy, stores nothing)...
        first = record(node, "first")
        dry = kubectl_as(remediator, "patch", "node", node, "--dry-run=server", "--type=merge", "-p", taint_patch(lab, node, first))
        assert dry.returncode == 0, dry.stderr
        # ...and is stored for real with an effect that evicts nothing.
        allowed = kubectl_as(remediator, "patch", "node", node, "--type=merge", "-p", taint_patch(lab, node, first, KEEPS_PODS))
        assert allowed.returncode == 0, allowed.stderr
        assert node_state(lab, node) == (True, first)

        # A human removes it (kubectl taint ... -): removal is never matched.
        removed = kubectl_as(admin, "taint", "nodes", node, f"{OOS}-")
        assert removed.returncode == 0, removed.stderr
        assert node_state(lab, node)[0] is False

        # The same record again is not a new incident: refused; a new one is allowed; node-recover's removal too.
        again = kubectl_as(remediator, "patch", "node", node, "--type=merge", "-p", taint_patch(lab, node, first, KEEPS_PODS))
        assert denied_by_policy(again, "same write as a new incident record"), again.stderr
        second = record(node, "second")
        allowed = kubectl_as(remediator, "patch", "node", node, "--type=merge", "-p", taint_patch(lab, node, second, KEEPS_PODS))
        assert allowed.returncode == 0, allowed.stderr
        untaint = kubectl_as(remediator, "patch", "node", node, "--type=merge", "-p", without_out_of_service(lab, node))
        assert untaint.returncode == 0, untaint.stderr
        assert node_state(lab, node) == (False, second)
    finally:
        lab.podman("exec", node, "systemctl", "start", "kubelet", check=False)
