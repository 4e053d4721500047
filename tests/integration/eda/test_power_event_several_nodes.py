"""Several nodes down together on the power-event path (issue 38 item 4), with the shipped chain on the lab.

Two workers lose power at the same moment, as two nodes behind one PDU do. Their BMCs post their power-offs within
a second; ansible-rulebook runs power-events.yml's node-outage for one after the other (sequential). The first run
is slowed down (tests/integration/eda/playbooks/slow-first-node-outage.yml waits before the collection's
node-outage), so the second run starts long after its event: longer than node_outage_power_event_max_age_seconds
(60 s here, 300 s by default; the test uses less so it ends sooner). Before the fix node-outage measured the age
from its own start and refused the second node as "stale or replayed"; now the age is measured when the rulebook
received the event (meta.received_at), and the second node, still Off and untainted when its turn comes, is run
with its proofs (BMC Off twice, the Lease silent) and failed over too.

Both workers must end tainted with a power-event incident record, both runs must succeed, and nothing may be
refused as stale. Two of the lab's three workers down leaves one: the db StatefulSet's required anti-affinity keeps
one of its replicas Pending, so the runs do not wait for every replacement (node_outage_verify_replacements false);
the web Deployment (ScheduleAnyway) must be whole again on the remaining worker.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from power_event_chain import REPO, PowerEventChain

NAMESPACE = "failover-lab"
OOS = "node.kubernetes.io/out-of-service"
INCIDENT = "failover.nodeguard.io/incident"
LOCK_NAMESPACE = "nodeguard-system"
MAX_AGE = 60  # node_outage_power_event_max_age_seconds for this test
SLOW = MAX_AGE + 20  # how long the first run waits before node-outage: the second run starts after MAX_AGE
SLOW_PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "slow-first-node-outage.yml"
TIMEOUT = SLOW + 420  # generous: the dev labs share 2 busy cores


def tainted(lab, node: str) -> bool:
    return any(t.key == OOS for t in lab.core().read_node(node).spec.taints or [])


def record(lab, node: str) -> dict | None:
    text = (lab.core().read_node(node).metadata.annotations or {}).get(INCIDENT)
    return json.loads(text) if text else None


def web_available(lab) -> bool:
    from kubernetes import client

    web = client.AppsV1Api(lab.api_client()).read_namespaced_deployment("web", NAMESPACE)
    return (web.status.available_replicas or 0) >= (web.spec.replicas or 0)


@pytest.fixture
def chain(lab, tmp_path: Path) -> Iterator[PowerEventChain]:
    lab.reset_lab()
    # the lab's BMCs with the EventService, as test_power_event_e2e.py starts them (power is not touched)
    subprocess.run([str(REPO / "lab" / "bmc" / "bmc.sh"), "up", *lab.worker_names()], check=True, capture_output=True, text=True)
    lab.kubectl("create", "namespace", LOCK_NAMESPACE, check=False)
    started = PowerEventChain(
        tmp_path,
        lab.worker_names(),
        inventory_vars={
            "node_outage_max_unhealthy": "2",  # two workers down together is not a storm here
            "node_outage_power_event_max_age_seconds": MAX_AGE,
            "node_outage_verify_replacements": False,
            "nodeguard_test_slow_marker": str(tmp_path / "first-run"),
            "nodeguard_test_slow_seconds": SLOW,
        },
        overrides={"nodeguard_outage_playbook": str(SLOW_PLAYBOOK)},
    )
    yield started
    try:
        started.stop()
    finally:
        lab.reset_lab()


@pytest.mark.resets_lab
def test_two_workers_powered_off_together_are_both_failed_over_while_the_first_run_is_slow(lab, chain: PowerEventChain) -> None:
    db_node = lab.core().read_namespaced_pod("db-0", NAMESPACE).spec.node_name
    victims = [db_node, next(n for n in lab.worker_names() if n != db_node)]
    chain.mark_run_start()
    off_at = time.monotonic()
    for node in victims:  # one PDU: both lose power within a second or two (each call waits for its container to stop)
        lab.power_off(node)

    def both_done() -> bool:
        return chain.run_log().count("PLAY RECAP") >= 2 and all(tainted(lab, n) for n in victims)

    try:
        lab.wait_for(both_done, timeout=TIMEOUT, interval=2, what="both node-outage runs ended and both workers tainted")
    except TimeoutError:
        pytest.fail(f"not both failed over within {TIMEOUT}s; ansible-rulebook log:\n{chain.run_log()[-12000:]}")
    both_after = time.monotonic() - off_at
    log = chain.run_log()
    first = json.loads((Path(chain.workdir) / "first-run").read_text())
    report = chain.run_report(victims[0])
    assert report["node_outage_runs"] == 2 and report["node_outage_ok"], log[-12000:]
    assert "older than power_event_max_age_seconds" not in log and "power-event-time" not in log, log[-12000:]
    assert both_after > MAX_AGE, "the second run did not start later than the maximum age: the test proved nothing"
    for node in victims:
        rec = record(lab, node)
        assert rec is not None and rec["trigger"] == "power-event" and rec["phase"] == "outage-complete", rec
        assert [p["name"] for p in rec["proofs"]] == ["lease-silent", "power-off"], rec["proofs"]
    lab.wait_for(lambda: web_available(lab), timeout=180, interval=2, what="web whole again on the remaining worker")
    print(f"\nfirst run for {first} slowed {SLOW}s; both {victims} tainted and their runs ended {both_after:.0f}s after the power-off")
