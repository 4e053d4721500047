"""Issue 20 items 3 and 10 on the real lab, the node-outage playbook invoked directly.

1. No foreign clock (item 3): a live worker whose reported clock lags 60 s and a power source that says Off for it
   (a command hook reporting the worker's own SMBIOS UUID, so identity is shown): its renewTime always looks 60 s old,
   older than one renew interval plus the margin. The lag is played from the test (lagging_lease): right after each
   renewal by the worker's kubelet stand-in, and at least every renew interval, the Lease gets a renewTime 60 s
   behind, as a kubelet whose clock lags writes it. (Not in the stand-in itself: its files are part of the lab
   images' recipes, and the images cannot be rebuilt where the suite runs without Debian's mirror.) The power-event
   run watches the Lease on its own clock, sees it change, and refuses [lease-renewed]; nothing changes. (On 08a3975
   it was tainted: the renewTime was compared with our clock.)
   The same clock on the heartbeat path: a worker whose kubelet is stopped, its Node patched NotReady (status
   subresource, as a kubelet reporting a runtime fault writes it) and its Lease still renewed by the test, with a
   renewTime 60 s behind. The BMC (hook) says Off. node-outage on the heartbeat path, proof_timeout 0, watches the
   Lease on its own clock during its wait, sees it renewed, and refuses [lease-stale]; nothing changes. (On 6b81389
   the renewTime was compared with our clock, the run proceeded past the lease proof and tainted the worker.)
2. Power read at the point of action (item 10): a worker is powered off at its Redfish BMC and the power-event run
   starts. Its power source is a command hook that reads the worker's real BMC (PowerState and UUID) and, right after
   the proof's second Off reading, powers the machine back on (ResetType On). The run must not complete: the power
   re-read right before the taint (or, were it later, before the force-deletes) reads On and the run stops.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
import yaml
from test_incident_lab import HISTORY_NAMESPACE, INVENTORY, assert_refused_unchanged, playbook, record, state
from test_power_event_path import history_names, lease_renew_time, off_hook, rfc3339

pytestmark = pytest.mark.resets_lab

LAG = 60


@contextlib.contextmanager
def lagging_lease(lab, node: str, lag: float):
    """While inside: ``node``'s Lease carries a renewTime ``lag`` seconds behind, as written by a live kubelet whose
    clock lags: rewritten within 0.2 s of each renewal by the stand-in, and renewed so at least every renew interval."""
    coordination = lab.client.CoordinationV1Api(lab.api_client())
    stop = threading.Event()
    errors = []

    def loop():
        last_write = 0.0
        while not stop.is_set():
            try:
                lease = coordination.read_namespaced_lease(node, "kube-node-lease")
                behind = datetime.now(UTC) - timedelta(seconds=lag)
                renewed = lease.spec.renew_time
                fresh = renewed is not None and renewed > behind + timedelta(seconds=1)  # the stand-in's true clock
                if fresh or time.monotonic() - last_write >= lease.spec.lease_duration_seconds / 4:
                    body = {"spec": {"renewTime": behind.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}}
                    coordination.patch_namespaced_lease(node, "kube-node-lease", body)
                    last_write = time.monotonic()
            except Exception as error:  # noqa: BLE001 - shown if the test fails; keep lagging
                errors.append(str(error))
            stop.wait(0.2)

    thread = threading.Thread(target=loop, name=f"lagging-lease-{node}", daemon=True)
    thread.start()
    try:
        yield errors
    finally:
        stop.set()
        thread.join(timeout=5)


@pytest.fixture()
def lagging_worker(lab):
    """A healthy worker whose Lease renewTime lags LAG seconds (a live kubelet whose clock runs behind)."""
    lab.reset_lab()
    worker = lab.worker_names()[0]
    try:
        with lagging_lease(lab, worker, LAG) as errors:
            lab.wait_for(lambda: lease_renew_time(lab, worker) < time.time() - LAG + 5, timeout=30,
                         what=f"{worker}'s Lease renewTime {LAG}s behind")
            yield worker
            assert len(errors) < 5, errors[:5]
    finally:
        lab.kubectl("delete", "configmap", "-n", HISTORY_NAMESPACE, f"nodeguard-history-{worker}", "--ignore-not-found", check=False)


def test_a_live_worker_whose_clock_lags_60s_is_refused_on_the_power_event_path(lab, remediator, lagging_worker, tmp_path):
    worker = lagging_worker
    # The renewTime is 60 s old by our clock, and the kubelet keeps renewing (changing) the Lease. One read must show
    # both: a read right after the stand-in's renewal sees its true time until lagging_lease rewrites it (0.2 s later).
    first = lease_renew_time(lab, worker)

    def renewed_and_lagging() -> bool:
        renewed = lease_renew_time(lab, worker)
        return renewed != first and time.time() - renewed > LAG - 5

    lab.wait_for(renewed_and_lagging, timeout=30, what=f"{worker} renews its Lease, {LAG}s behind")
    before, histories = state(lab, worker), history_names(lab)
    result = playbook(remediator, "node_outage", worker, node_outage_power_event_time=rfc3339(time.time()),
                      node_outage_power_by_node={worker: off_hook(tmp_path, worker)}, node_outage_proof_timeout=30)
    assert_refused_unchanged(lab, worker, result, before, "refused [lease-renewed]")
    output = result.stdout + result.stderr
    # Usually seen changing while watched; a read that falls between a renewal and its rewrite sees a renewTime
    # after the event instead: refused too, by the same rule.
    assert "changed while this run watched it" in output or "after the power event" in output, output[-3000:]
    assert record(lab, worker) is None and history_names(lab) == histories
    assert lab.node_ready(worker)


def not_ready_status(since: datetime) -> str:
    """A strategic merge patch of the Node's status: Ready False since ``since``, as a kubelet with a dead runtime says."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready = {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "lastHeartbeatTime": now,
             "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
             "message": "container runtime network not ready: NetworkReady=false (lab test)"}
    return json.dumps({"status": {"conditions": [ready]}})


@pytest.fixture()
def not_ready_lagging_worker(lab):
    """A worker whose kubelet is stopped, NotReady in the API for 30 s, and whose Lease is still renewed every
    renew interval with a renewTime LAG seconds behind. Its kubelet is started again afterwards."""
    lab.reset_lab()
    worker = lab.worker_names()[0]
    try:
        lab.podman("exec", worker, "systemctl", "stop", "kubelet")
        with lagging_lease(lab, worker, LAG) as errors:
            since = datetime.now(UTC) - timedelta(seconds=30)
            lab.kubectl("patch", "node", worker, "--subresource=status", "-p", not_ready_status(since))
            lab.wait_for(lambda: not lab.node_ready(worker), timeout=30, what=f"{worker} NotReady")
            lab.wait_for(lambda: lease_renew_time(lab, worker) < time.time() - LAG + 5, timeout=30,
                         what=f"{worker}'s Lease renewTime {LAG}s behind")
            yield worker
            assert len(errors) < 5, errors[:5]
    finally:
        lab.podman("exec", worker, "systemctl", "start", "kubelet", check=False)
        lab.wait_for(lambda: lab.node_ready(worker), timeout=120, what=f"{worker} Ready again")
        lab.kubectl("delete", "configmap", "-n", HISTORY_NAMESPACE, f"nodeguard-history-{worker}", "--ignore-not-found", check=False)


def test_a_not_ready_worker_whose_lagging_kubelet_still_renews_is_refused_on_the_heartbeat_path(
        lab, remediator, not_ready_lagging_worker, tmp_path):
    worker = not_ready_lagging_worker
    assert time.time() - lease_renew_time(lab, worker) > LAG - 5  # older than 40 s + 5 s by our clock
    before, histories = state(lab, worker), history_names(lab)
    started = time.monotonic()
    result = playbook(remediator, "node_outage", worker, node_outage_power_by_node={worker: off_hook(tmp_path, worker)})
    output = result.stdout + result.stderr
    assert_refused_unchanged(lab, worker, result, before, "Missing proof(s): lease-stale.")  # NotReady and power held
    # Usually seen changing by the watch; a renewal between the proof's read and the next one is seen as "renewed its
    # Lease ... after this incident started" instead: refused too, by the same rule.
    assert "its kubelet lives" in output, output[-3000:]
    assert "Lease renewed while watched" in output or "renewed its Lease" in output, output[-3000:]
    assert record(lab, worker) is None and history_names(lab) == histories
    print(f"\nrefused after {time.monotonic() - started:.1f}s: "
          f"{[line for line in output.splitlines() if 'Missing proof' in line][:1]}")


PROXY_HOOK = """#!{python}
# A command power hook for the lab test: reads the node's real Redfish BMC; right after its {on_after}th call
# (the proof's second Off reading: identify + status per reading) it powers the machine back on.
import json, pathlib, sys
import requests
request = json.load(sys.stdin)
options = request["options"]
url = request["address"] + "/redfish/v1/Systems/" + request["system_id"]
auth = (request["username"], request["password"])
system = requests.get(url, auth=auth, verify=options["ca_cert"], timeout=20).json()
counter = pathlib.Path(options["counter"])
calls = (int(counter.read_text()) if counter.exists() else 0) + 1
counter.write_text(str(calls))
counter.with_suffix(".log").open("a").write(f"{{calls}} {{system['PowerState']}}\\n")
print(json.dumps({{"power": system["PowerState"].lower(), "system_uuid": system["UUID"],
                   "detail": f"lab BMC PowerState {{system['PowerState']}} (proxy hook call {{calls}})"}}))
sys.stdout.flush()
if calls == {on_after} and system["PowerState"] == "Off":
    requests.post(url + "/Actions/ComputerSystem.Reset", json={{"ResetType": "On"}}, auth=auth,
                  verify=options["ca_cert"], timeout=30).raise_for_status()
"""


def test_a_power_on_just_after_the_second_off_reading_ends_in_a_stopped_run_not_a_completed_one(lab, remediator, tmp_path):
    lab.reset_lab()
    target = lab.worker_names()[-1]
    bmc = yaml.safe_load(INVENTORY.read_text())["all"]["children"]["workers"]["hosts"][target]["bmc"]
    hook = tmp_path / "power-on-after-second-off.py"
    # Power-event path with a 30 s poll: one Off reading at once, the second once the Lease is silent (13 s), so
    # the second Off reading is the hook's 3rd and 4th calls.
    hook.write_text(PROXY_HOOK.format(python=sys.executable, on_after=4))
    hook.chmod(0o700)
    counter = tmp_path / "calls"
    power = {"type": "command", "command": [str(hook)], "address": bmc["address"], "system_id": bmc["system_id"],
             "username": bmc["username"], "password": bmc["password"], "off_confirm_seconds": 1,
             "agent_options": {"ca_cert": bmc["ca_cert"], "counter": str(counter)}}
    try:
        lab.power_off(target)
        result = playbook(remediator, "node_outage", target, node_outage_power_event_time=rfc3339(time.time()),
                          node_outage_power_by_node={target: power}, node_outage_proof_timeout=60,
                          node_outage_poll_interval=30)
        output = result.stdout + result.stderr
        readings = counter.with_suffix(".log").read_text()
        assert result.returncode != 0, output[-4000:]
        assert "outage complete" not in output, output[-4000:]
        assert "power reads ON right before" in output or "came back" in output, output[-4000:]
        rec = record(lab, target)
        assert rec is None or rec["phase"] == "interrupted", rec
        assert lab.container_state(target) == "running"
        print(f"\nhook readings:\n{readings}record: {json.dumps(rec)[:400] if rec else None}; "
              f"message: {[line for line in output.splitlines() if 'power reads ON' in line or 'came back' in line][:1]}")
    finally:
        lab.kubectl("delete", "configmap", "-n", HISTORY_NAMESPACE, f"nodeguard-history-{target}", "--ignore-not-found", check=False)
