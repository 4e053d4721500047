"""The node watch on the lab: the source nodeguard.failover.node_watch against the real apiserver, and the shipped
node-watch.yml in a real ansible-rulebook process.

- (The relist on 410 Gone is tested with a fake watch stream in tests/unit/eda/test_node_watch.py: the lab's
  apiserver (1.35.4) kept serving a watch from resourceVersion 1, even after 11 minutes, so a 410 could not be forced
  here by a too-old version.)
- End to end: a worker that runs a db pod is powered off through its lab BMC; the source emits node-down when its
  Ready condition turns Unknown; the rulebook runs the real node-outage (by FQCN, as shipped), which waits for its
  proofs and fails the node over (out-of-service taint, db pod Ready elsewhere). After power-on the source emits
  node-up and the rulebook's node-recover removes the taint.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from rulebook_process import REPO, RulebookProcess
from test_rulebook_lab import LAB_INVENTORY, LAB_TIMINGS, NAMESPACE, db_pod_on, has_taint, pod_ready, wait_or_show_log

EDA = REPO / "extensions" / "eda"
READY_LINE = "node_watch: watching Nodes and Leases"


@pytest.fixture
def target(lab) -> Iterator[str]:
    lab.reset_lab()
    candidates = [n for n in lab.worker_names() if db_pod_on(lab, n)]
    assert candidates, "no worker runs a db pod; is the lab's StatefulSet up?"
    yield candidates[0]
    lab.reset_lab()


@pytest.fixture
def rulebook(lab, tmp_path: Path) -> Iterator[RulebookProcess]:
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    shutil.copy(LAB_INVENTORY, inventory / "10-lab.yml")
    local = {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}
    (inventory / "20-eda.yml").write_text(yaml.safe_dump({"all": {"vars": LAB_TIMINGS, "hosts": local}}))
    process = RulebookProcess(
        tmp_path,
        overrides={"nodeguard_node_watch_kubeconfig": lab.kubeconfig(), "nodeguard_allow_nodes": lab.worker_names()},
        inventory=inventory,
        rulebook=EDA / "rulebooks" / "node-watch.yml",
        default_vars=EDA / "vars" / "node-watch.yml",
        ready_line=READY_LINE,
    )
    yield process
    process.stop()


def test_a_powered_off_worker_is_failed_over_from_the_watch_and_recovered(lab, target: str, rulebook: RulebookProcess) -> None:
    old_db = db_pod_on(lab, target)
    wait_or_show_log(lab, rulebook, lambda: "node_watch: listed" in rulebook.log(), 120, "the source's first list")
    assert "node-down" not in rulebook.log()  # every node is Ready: nothing to report
    started = time.monotonic()
    lab.power_off(target)
    wait_or_show_log(lab, rulebook, lambda: f"node_watch: {target} is Ready=" in rulebook.log(), 300, f"node-down for {target}")
    print(f"\npower-off to node-down: {time.monotonic() - started:.1f}s")

    def replaced() -> bool:
        pods = lab.core().list_namespaced_pod(NAMESPACE, label_selector="app=db").items
        same = [p for p in pods if p.metadata.name == old_db.metadata.name]
        return bool(same) and same[0].metadata.uid != old_db.metadata.uid and same[0].spec.node_name != target and pod_ready(same[0])

    wait_or_show_log(lab, rulebook, replaced, 480, f"{old_db.metadata.name} Ready on another node")
    assert has_taint(lab, target)
    print(f"power-off to db Ready elsewhere: {time.monotonic() - started:.1f}s")

    lab.power_on(target)
    wait_or_show_log(lab, rulebook, lambda: f"node_watch: {target} is Ready again: node-up" in rulebook.log(), 300, f"node-up for {target}")
    wait_or_show_log(lab, rulebook, lambda: not has_taint(lab, target), 300, f"the taint removed from {target}")
    assert "refused [storm]" not in rulebook.log()
