"""The rulebook end to end on the lab: a real ansible-rulebook process, real Alertmanager payloads,
the real node-outage and node-recover playbooks (by FQCN, as shipped), real power-off through the lab's BMC.

A worker that runs a db pod (StatefulSet, RWO CSI volume) is powered off. Once it is NotReady with a
stale Lease (what Prometheus would see before NodeguardNodeDown fires), the alert is posted: the
rulebook must fail the node over (out-of-service taint, db pod Ready elsewhere). After power-on the
resolved alert must make node-recover remove the taint.

An alert whose node label is a template (the injection of issue 11) must run nothing: the payload
would create a marker file, which must not exist, no playbook starts for it, and the refusal is logged.
A node that is allowed and has a power mapping of its own but does not exist in the cluster gets
node-outage's "unknown-node" refusal, and the cluster is left as it was.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from rulebook_process import REPO, RulebookProcess, alert, webhook_payload

LAB_INVENTORY = REPO / "lab" / ".state" / "inventory.yml"
OOS = "node.kubernetes.io/out-of-service"
INCIDENT = "failover.nodeguard.io/incident"
GHOST = "ng-ghost"  # allowed, mapped to a harmless command hook, but no such Node
NAMESPACE = "failover-lab"
# Shorter waits than production for the lab (the same ones tests/integration/incident uses).
LAB_TIMINGS = {
    "node_outage_not_ready_seconds": 10,
    "node_outage_lease_margin_seconds": 5,
    "node_outage_detach_timeout": 120,
    "node_outage_replacement_timeout": 180,
    "node_outage_poll_interval": 1,
    "node_recover_healthy_seconds": 5,
    "node_recover_retries": 30,
    "node_recover_delay": 3,
}


def has_taint(lab, node: str) -> bool:
    return any(t.key == OOS for t in lab.core().read_node(node).spec.taints or [])


def db_pod_on(lab, node: str):
    pods = lab.core().list_namespaced_pod(NAMESPACE, label_selector="app=db").items
    return next((p for p in pods if p.spec.node_name == node and not p.metadata.deletion_timestamp), None)


def pod_ready(pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def proven_dead(lab, node: str, seconds: float) -> bool:
    """NotReady for `seconds` and its Lease stale: when NodeguardNodeDown would have fired."""
    found = lab.core().read_node(node)
    ready = next(c for c in found.status.conditions if c.type == "Ready")
    if ready.status == "True" or time.time() - ready.last_transition_time.timestamp() < seconds:
        return False
    lease = lab.client.CoordinationV1Api(lab.api_client()).read_namespaced_lease(node, "kube-node-lease")
    return time.time() - lease.spec.renew_time.timestamp() > lease.spec.lease_duration_seconds + 6


def wait_or_show_log(lab, rulebook: RulebookProcess, predicate, timeout: float, what: str) -> None:
    try:
        lab.wait_for(predicate, timeout=timeout, interval=2, what=what)
    except TimeoutError:
        pytest.fail(f"{what}: not within {timeout}s; ansible-rulebook log:\n{rulebook.log()[-6000:]}")


@pytest.fixture
def target(lab) -> Iterator[str]:
    lab.reset_lab()
    candidates = [n for n in lab.worker_names() if db_pod_on(lab, n)]
    assert candidates, "no worker runs a db pod; is the lab's StatefulSet up?"
    yield candidates[0]
    lab.reset_lab()


@pytest.fixture
def rulebook(lab, tmp_path: Path) -> Iterator[RulebookProcess]:
    # An inventory directory: the lab's inventory (nodes, BMCs, kubeconfig) plus the lab timings.
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    shutil.copy(LAB_INVENTORY, inventory / "10-lab.yml")
    # The playbooks run on localhost; ansible-rulebook limits runs to the ruleset's hosts (localhost),
    # so the inventory must name it (docs/eda.md).
    local = {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}
    ghost_power = {"node_outage_power_by_node": {GHOST: {"type": "command", "command": ["/bin/false"]}}}
    (inventory / "20-eda.yml").write_text(yaml.safe_dump({"all": {"vars": {**LAB_TIMINGS, **ghost_power}, "hosts": local}}))
    process = RulebookProcess(
        tmp_path,
        # the shipped defaults: nodeguard.failover.node_outage / node_recover by FQCN;
        # the allow-list names the lab's workers (each has its own BMC in the lab inventory) and the ghost
        overrides={"nodeguard_storm_max_nodes": 1, "nodeguard_allow_nodes": [*lab.worker_names(), GHOST]},
        inventory=inventory,
    )
    yield process
    process.stop()


def test_node_down_alert_fails_the_node_over_and_resolved_recovers_it(lab, target: str, rulebook: RulebookProcess) -> None:
    old_db = db_pod_on(lab, target)
    lab.power_off(target)
    lab.wait_for(lambda: proven_dead(lab, target, LAB_TIMINGS["node_outage_not_ready_seconds"] + 2),
                 timeout=300, interval=2, what=f"{target} NotReady with a stale Lease")

    started = time.monotonic()
    assert rulebook.post(webhook_payload([alert(target)])) == 200
    assert rulebook.post(webhook_payload([alert(target)])) == 200  # Alertmanager's re-send: must not matter

    def replaced() -> bool:
        pods = lab.core().list_namespaced_pod(NAMESPACE, label_selector="app=db").items
        same = [p for p in pods if p.metadata.name == old_db.metadata.name]
        return bool(same) and same[0].metadata.uid != old_db.metadata.uid and same[0].spec.node_name != target \
            and pod_ready(same[0])

    wait_or_show_log(lab, rulebook, replaced, 420, f"{old_db.metadata.name} Ready on another node")
    assert has_taint(lab, target)
    print(f"\nalert to db Ready elsewhere: {time.monotonic() - started:.1f}s")

    lab.power_on(target)
    lab.wait_for(lambda: lab.node_ready(target), timeout=180, interval=2, what=f"{target} Ready again")
    assert rulebook.post(webhook_payload([alert(target, status="resolved")])) == 200
    wait_or_show_log(lab, rulebook, lambda: not has_taint(lab, target), 300, f"the taint removed from {target}")


def cluster_state(lab) -> dict:
    """Per node: its taints and its incident record (what a remediation would change)."""
    return {
        n.metadata.name: (sorted(t.key for t in n.spec.taints or []), (n.metadata.annotations or {}).get(INCIDENT))
        for n in lab.core().list_node().items
    }


def test_injection_alert_runs_nothing_and_the_refusal_is_logged(lab, rulebook: RulebookProcess, tmp_path: Path) -> None:
    marker = tmp_path / "injected"
    before = cluster_state(lab)
    injection = f"{{{{ lookup('pipe', 'touch {marker}') }}}}w9"
    assert rulebook.post(webhook_payload([alert(injection)])) == 200
    # Then an allowed node with a power mapping that does not exist: its run is the only one that may start,
    # and once it has been refused, the injection alert before it has been decided (events are handled in order).
    assert rulebook.post(webhook_payload([alert(GHOST)])) == 200
    wait_or_show_log(lab, rulebook, lambda: "unknown-node" in rulebook.log(), 300, f"node-outage refusing {GHOST}")

    log = rulebook.log()
    assert not marker.exists(), "the alert's payload ran a command"
    assert "nodeguard REFUSED: alert refused, nothing runs for it: label node:" in log
    assert "\\x7b\\x7b" in log  # the refused value is logged escaped
    # Every per-node task of every node-outage run (ansible-rulebook prints a failed run's output twice) is GHOST's.
    run_for = set(re.findall(r"TASK \[nodeguard\.failover\.node_outage : [^\]\n]*\| ([^\]\n]*)\]", log))
    assert run_for == {GHOST}, f"node-outage ran for {run_for}, not only for {GHOST}:\n{log[-6000:]}"
    assert "refused [unknown-node]: node " in log and GHOST in log  # (the callback may quote or fold the message)
    assert cluster_state(lab) == before
