"""The node watch on the lab: the source nodeguard.failover.node_watch against the real apiserver, and the shipped
node-watch.yml in a real ansible-rulebook process.

- The relist on 410, as a user meets it: kube-apiserver restarts (here it is killed, as a crash does; an upgrade
  restarts it too) while the source holds a resourceVersion. The restarted apiserver's watch cache starts from a
  fresh list, and the Lease renewals in between moved the cluster's revision on, so the source's version is too
  old: the source is told 410, logs it, lists again, does not report again a node it already reported down, and a
  node that goes down afterwards starts exactly one run.
  The playbooks are recorders here (tests/integration/eda/playbooks); the failover itself is the next test.
- End to end: a worker that runs a db pod is powered off through its lab BMC; the source emits node-down when its
  Ready condition turns Unknown; the rulebook runs the real node-outage (by FQCN, as shipped), which waits for its
  proofs and fails the node over (out-of-service taint, db pod Ready elsewhere); its outcome (set_stats) comes back
  and arms the node's cool-down. After power-on the source emits node-up and the rulebook's node-recover removes the
  taint.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from rulebook_process import REPO, RulebookProcess
from test_rulebook_decisions import runs
from test_rulebook_lab import LAB_INVENTORY, LAB_TIMINGS, NAMESPACE, db_pod_on, has_taint, pod_ready, wait_or_show_log

EDA = REPO / "extensions" / "eda"
RECORDERS = Path(__file__).resolve().parent / "playbooks"
READY_LINE = "node_watch: watching Nodes and Leases"


@pytest.fixture
def target(lab) -> Iterator[str]:
    lab.reset_lab()
    candidates = [n for n in lab.worker_names() if db_pod_on(lab, n)]
    assert candidates, "no worker runs a db pod; is the lab's StatefulSet up?"
    yield candidates[0]
    lab.reset_lab()


def start_rulebook(lab, tmp_path: Path, overrides: dict | None = None, env: dict | None = None) -> RulebookProcess:
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    shutil.copy(LAB_INVENTORY, inventory / "10-lab.yml")
    local = {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}
    (inventory / "20-eda.yml").write_text(yaml.safe_dump({"all": {"vars": LAB_TIMINGS, "hosts": local}}))
    return RulebookProcess(
        tmp_path,
        overrides={"nodeguard_node_watch_kubeconfig": lab.kubeconfig(), "nodeguard_allow_nodes": lab.worker_names(), **(overrides or {})},
        inventory=inventory,
        rulebook=EDA / "rulebooks" / "node-watch.yml",
        default_vars=EDA / "vars" / "node-watch.yml",
        ready_line=READY_LINE,
        env=env,
    )


@pytest.fixture
def rulebook(lab, tmp_path: Path) -> Iterator[RulebookProcess]:
    process = start_rulebook(lab, tmp_path)
    yield process
    process.stop()


@pytest.fixture
def recording_rulebook(lab, tmp_path: Path) -> Iterator[tuple[RulebookProcess, Path]]:
    records = tmp_path / "records"
    records.mkdir()
    process = start_rulebook(
        lab,
        tmp_path,
        overrides={
            "nodeguard_outage_playbook": str(RECORDERS / "record-outage.yml"),
            "nodeguard_recover_playbook": str(RECORDERS / "record-recover.yml"),
            "node_outage_max_unhealthy": "2",  # two workers down is not a storm here
            # the recorders taint nothing: without this, a node still down would be reported again after 300 s
            "nodeguard_node_watch_rereport_interval": 3600,
        },
        env={"NODEGUARD_EDA_RECORD_DIR": str(records)},
    )
    yield process, records
    process.stop()


def restart_apiserver(lab) -> None:
    """Kill kube-apiserver, as a crash or an out-of-memory kill does; the static pod runner starts it again (systemd
    Restart=always), as the kubelet restarts its static pod."""
    old_pid = lab.component_pid("kube-apiserver")
    lab.cp_exec("kill", "-KILL", str(old_pid))
    lab.wait_for(lambda: (pid := lab.component_pid("kube-apiserver")) != old_pid and pid, timeout=60, what="kube-apiserver started again")
    lab.wait_for(lambda: lab.component_healthy("kube-apiserver"), timeout=120, what="kube-apiserver ready again")


@pytest.mark.resets_lab
def test_after_an_apiserver_restart_the_source_relists_without_losing_or_repeating_a_node_down(lab, recording_rulebook: tuple[RulebookProcess, Path]) -> None:
    rulebook, records = recording_rulebook
    first, second = lab.worker_names()[:2]
    wait_or_show_log(lab, rulebook, lambda: "node_watch: listed" in rulebook.log(), 120, "the source's first list")
    lab.power_off(first)
    wait_or_show_log(lab, rulebook, lambda: len(runs(records, "outage", first)) == 1, 300, f"the node-outage run for {first}")

    restart_apiserver(lab)
    wait_or_show_log(lab, rulebook, lambda: "is gone (410); listing again" in rulebook.log(), 300, "the source told 410 after the apiserver restart")
    gone = rulebook.log().index("is gone (410); listing again")
    wait_or_show_log(lab, rulebook, lambda: "node_watch: listed" in rulebook.log()[gone:], 120, "the list after the 410")
    print("\n" + "\n".join(line for line in rulebook.log().splitlines() if "410" in line or "node_watch: listed" in line))

    lab.power_off(second)
    wait_or_show_log(lab, rulebook, lambda: len(runs(records, "outage", second)) == 1, 300, f"the node-outage run for {second}, down after the relist")
    time.sleep(10)  # a second run would be started within seconds of the first: none is
    assert len(runs(records, "outage", second)) == 1
    assert len(runs(records, "outage", first)) == 1
    # the relist found the first node still down: the source reported it once, not again
    assert rulebook.log().count(f"node_watch: {first} is Ready=") == 1, rulebook.log()[-6000:]
    assert rulebook.log().count(f"node_watch: {second} is Ready=") == 1, rulebook.log()[-6000:]
    assert "refused [storm]" not in rulebook.log()


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
    # node-outage's outcome (set_stats) came back as an event and armed the node's cool-down: the run acted
    armed = f"nodeguard: the run left {target} tainted: cool-down 30 minutes"
    wait_or_show_log(lab, rulebook, lambda: armed in rulebook.log(), 120, "the cool-down armed by node-outage's outcome")
    print(f"power-off to db Ready elsewhere: {time.monotonic() - started:.1f}s")

    lab.power_on(target)
    wait_or_show_log(lab, rulebook, lambda: f"node_watch: {target} is Ready again: node-up" in rulebook.log(), 300, f"node-up for {target}")
    wait_or_show_log(lab, rulebook, lambda: not has_taint(lab, target), 300, f"the taint removed from {target}")
    assert "refused [storm]" not in rulebook.log()
