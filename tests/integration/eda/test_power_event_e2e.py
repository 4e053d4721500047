"""Power-event-led failover end to end on the lab (issue 13), with stock heartbeat settings.

The chain is the shipped one, set up as docs/eda.md says (tests/integration/eda/power_event_chain.py): the lab's
Redfish BMC subscribed by playbooks/power_event_subscriptions.yml to a real ansible-rulebook running
extensions/eda/rulebooks/power-events.yml, which runs nodeguard.failover.node_outage with the event's time.

It runs once per vendor personality of the lab BMC (issue 21: DMTF ResourceEvent 1.3, OpenBMC DCPowerOff without a
payload Context, HPE iLO 6 ServerPoweredOff with a string OriginOfCondition, Dell iDRAC9 SYS1001 with a numeric
EventId and a -0800 offset), each BMC subscribed with its vendor's registry, its own path and its own token.

The worker holding db-0 (StatefulSet, RWO volume) is powered off through its BMC, and nothing else is done:
no alert, no playbook started by the test, no NotReady wait. db-0 must be Ready on another node, and the
out-of-service taint must have been added while the Node was still Ready in the API (with stock settings
the node lifecycle controller marks it NotReady only after its 40 s grace period).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client, watch
from power_event_chain import PERSONALITIES, REPO, PowerEventChain

NAMESPACE = "failover-lab"
OOS = "node.kubernetes.io/out-of-service"
INCIDENT = "failover.nodeguard.io/incident"
DB_POD = "db-0"
LOCK_NAMESPACE = "nodeguard-system"
# The heartbeat settings a profile changes (bench/lab_profile.py): none may be set for "stock".
TUNED_KUBELET_FIELDS = ("nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "nodeLeaseDurationSeconds")
TUNED_CONTROLLER_FLAGS = ("--node-monitor-period=", "--node-monitor-grace-period=")
FAILOVER_TIMEOUT = 180  # generous: the dev labs share 2 busy cores; the benchmark measures the time


def _ready(node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


class NodeHistory(threading.Thread):
    """Every version of one Node seen by a watch: (seconds since start, Ready, has the out-of-service taint)."""

    def __init__(self, lab, name: str) -> None:
        super().__init__(daemon=True)
        self.core = client.CoreV1Api(lab.api_client())
        self.name, self.versions, self.started = name, [], time.monotonic()
        self.stopping, self.synced = threading.Event(), threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                for event in watch.Watch().stream(self.core.list_node, field_selector=f"metadata.name={self.name}",
                                                  timeout_seconds=10):
                    node = event["object"]
                    tainted = any(t.key == OOS for t in node.spec.taints or [])
                    self.versions.append((round(time.monotonic() - self.started, 2), _ready(node), tainted))
                    self.synced.set()
            except Exception:  # noqa: BLE001 - a dropped watch is watched again
                time.sleep(0.5)

    def first(self, predicate):
        return next((v for v in self.versions if predicate(v)), None)


def stock_heartbeats(lab, worker: str) -> list[str]:
    """What in the lab differs from the stock heartbeat settings (empty: stock). A kubelet field set to zero
    ("0s", 0) is the kubelet's default, as if unset."""
    tuned = [f for f in lab.component_flags("kube-controller-manager") if f.startswith(TUNED_CONTROLLER_FLAGS)]
    kubelet = yaml.safe_load(lab.podman("exec", worker, "cat", "/var/lib/kubelet/config.yaml").stdout)
    return tuned + [f"{field}={kubelet[field]}" for field in TUNED_KUBELET_FIELDS
                    if kubelet.get(field) not in (None, 0, "0", "0s")]


def db_pod(lab):
    return lab.core().read_namespaced_pod(DB_POD, NAMESPACE)


@pytest.fixture(params=PERSONALITIES)
def chain(lab, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[PowerEventChain]:
    lab.reset_lab()
    # The lab's BMCs as this tree has them (with the EventService): lab.sh up's own idempotent step, which
    # restarts the Redfish service only when its code or configuration changed. Power is not touched.
    subprocess.run([str(REPO / "lab" / "bmc" / "bmc.sh"), "up", *lab.worker_names()], check=True,
                   capture_output=True, text=True)
    lab.kubectl("create", "namespace", LOCK_NAMESPACE, check=False)  # node-outage's lock Lease lives there
    started = PowerEventChain(tmp_path, lab.worker_names(), personality=request.param)
    yield started
    try:
        started.stop()
    finally:
        lab.reset_lab()


def test_power_off_alone_fails_db_0_over_while_the_node_is_still_ready(lab, chain: PowerEventChain) -> None:
    old = db_pod(lab)
    target = old.spec.node_name
    assert stock_heartbeats(lab, target) == [], "the lab must run the stock heartbeat settings for this test"
    history = NodeHistory(lab, target)
    history.start()
    assert history.synced.wait(30), f"no watch on Node {target}"
    chain.mark_run_start()

    lab.power_off(target)  # Redfish ForceOff through the lab BMC: the only action of the test
    off_at = time.monotonic() - history.started

    def replaced() -> bool:
        pod = db_pod(lab)
        return pod.metadata.uid != old.metadata.uid and pod.spec.node_name not in (None, target) \
            and pod.metadata.deletion_timestamp is None and _ready(pod)

    try:
        lab.wait_for(replaced, timeout=FAILOVER_TIMEOUT, interval=1, what=f"{DB_POD} Ready on another node")
    except TimeoutError:
        pytest.fail(f"{DB_POD} not Ready elsewhere within {FAILOVER_TIMEOUT}s of the power-off; node versions "
                    f"{history.versions}; ansible-rulebook log:\n{chain.run_log()[-8000:]}")
    failed_over_after = time.monotonic() - history.started - off_at
    history.stopping.set()

    tainted = history.first(lambda v: v[2])
    not_ready = history.first(lambda v: not v[1])
    assert tainted is not None, f"no Node version of {target} with the out-of-service taint: {history.versions}"
    assert tainted[1], f"the taint came after NotReady (a NotReady wait): {history.versions}"
    assert not_ready is None or not_ready[0] >= tainted[0]
    record = json.loads(lab.core().read_node(target).metadata.annotations[INCIDENT])
    assert record.get("trigger") == "power-event", record
    # node-outage's run goes on after the replacement is Ready (it verifies every replacement, then records)
    lab.wait_for(lambda: "PLAY RECAP" in chain.run_log(), timeout=FAILOVER_TIMEOUT, interval=1,
                 what="node-outage's run to end")
    report = chain.run_report(target)
    assert report["node_outage_ok"] and report["node_outage_runs"] == 1, chain.run_log()[-8000:]
    print(f"\n[{chain.personality}] power-off -> taint {tainted[0] - off_at:.1f}s (node Ready), -> {DB_POD} Ready on "
          f"{db_pod(lab).spec.node_name} {failed_over_after:.1f}s; NotReady "
          f"{'not yet' if not_ready is None else f'{not_ready[0] - off_at:.1f}s'}")
