"""node_outage.yml and node_recover.yml on the real lab, run as the least-privileged ServiceAccount.

One worker hosting a db pod (StatefulSet, RWO CSI volume) goes through, in order:
  healthy        -> refusals: node Ready, control-plane node, lock held, unknown node
  kubelet stopped (machine still on: a partition)
                 -> refusals: BMC says On, BMC unreachable, wrong credentials, storm; check mode plan
                 -> two outage runs at once: one fences (Redfish) and taints, the other is refused by the lock;
                    the winner is killed right after the taint; Redfish, IPMI and fence_redfish all read Off;
                    a rerun is refused by the dead run's lock, one that waits takes it over; its ansible-playbook
                    is killed -9, the module goes on and a third run is refused naming it; it completes;
                    one taint Event; db Ready elsewhere
  powered on     -> node-recover removes the taint and prints the timeline
Every refusal must leave the cluster exactly as it was: no taint, no record, no deleted pod, no lock.
One power-off for the whole suite keeps it short (about 3 minutes of waiting for the controllers).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
INVENTORY = REPO / "lab" / ".state" / "inventory.yml"
OOS = "node.kubernetes.io/out-of-service"
RECORD = "failover.nodeguard.io/incident"
NAMESPACE = "failover-lab"
LOCK_NAMESPACE = "nodeguard-system"
HISTORY_NAMESPACE = "nodeguard-history"  # the durable incident history (deploy/rbac/01-namespace-history.yaml)
# Short waits for the lab; production defaults are in the roles.
FAST = {
    "node_outage_not_ready_seconds": 5,
    "node_outage_lease_margin_seconds": 5,
    "node_outage_detach_timeout": 120,
    "node_outage_replacement_timeout": 180,
    "node_outage_poll_interval": 1,
    "node_recover_healthy_seconds": 5,
    "node_recover_retries": 30,
    "node_recover_delay": 3,
}

# --- fixtures -------------------------------------------------------------------------------------


def playbook(remediator, name, node, check=False, background=False, **extra):
    """Run playbooks/<name>.yml for one node as the ServiceAccount; extra vars go through a 0600 file."""
    variables = dict(FAST, **{k: v for k, v in remediator.items() if not k.startswith("_")})
    variables.update(extra, outage_nodes=[node])
    vars_file = remediator["_dir"] / f"vars-{time.monotonic_ns()}.json"
    vars_file.write_text(json.dumps(variables))
    vars_file.chmod(0o600)
    argv = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(INVENTORY), str(REPO / "playbooks" / f"{name}.yml"), "-e", f"@{vars_file}"]
    if check:
        argv.append("--check")
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    if background:
        return subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)


def kill_tree(pid: int) -> None:
    """SIGKILL a process and all its descendants, like a crashed job runner; only processes this test started."""
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    for member in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


def read_power(remediator, node, power) -> str:
    """Power state through nodeguard.failover.node_power (ad hoc, credentials in a 0600 vars file)."""
    vars_file = remediator["_dir"] / f"power-{time.monotonic_ns()}.json"
    vars_file.write_text(json.dumps({"power_under_test": power}))
    vars_file.chmod(0o600)
    argv = [
        str(REPO / ".venv" / "bin" / "ansible"),
        "localhost",
        "-m",
        "nodeguard.failover.node_power",
        "-a",
        json.dumps({"node": node, "power": "{{ power_under_test }}"}),
        "-e",
        f"@{vars_file}",
        "-o",
    ]
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.split("=>", 1)[1])["power"]


def node_obj(lab, name):
    return lab.core().read_node(name)


def has_taint(lab, name) -> bool:
    return any(t.key == OOS for t in node_obj(lab, name).spec.taints or [])


def record(lab, name):
    text = (node_obj(lab, name).metadata.annotations or {}).get(RECORD)
    return json.loads(text) if text else None


def state(lab, name):
    """What a refusal must not change."""
    node = node_obj(lab, name)
    pods = lab.core().list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}").items
    leases = lab.kubectl("get", "leases", "-n", LOCK_NAMESPACE, "-o", "name", check=False).stdout.split()
    return {
        # Only our taint: the node lifecycle controller adds and swaps not-ready/unreachable taints on its own.
        "out_of_service_taint": any(t.key == OOS for t in node.spec.taints or []),
        "annotations": sorted(k for k in node.metadata.annotations or {} if "nodeguard" in k),
        "pods": sorted(p.metadata.uid for p in pods if not p.metadata.deletion_timestamp),
        "leases": leases,
    }


def assert_refused_unchanged(lab, node, result, before, expected):
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    # the callback may wrap a long message anywhere between words: read it as one line too
    assert expected in output or " ".join(expected.split()) in " ".join(output.split()), output[-3000:]
    assert_unchanged(lab, node, before)


def assert_unchanged(lab, node, before):
    """Same taint, record and locks, and no pod gone (controllers may add pods meanwhile: that is not us)."""
    after = state(lab, node)
    assert {k: v for k, v in after.items() if k != "pods"} == {k: v for k, v in before.items() if k != "pods"}
    assert set(before["pods"]) <= set(after["pods"]), "a pod was deleted"


def lock_holder(lab, node):
    """The holder of the node's lock Lease (job, host, pid, run), or None when there is no Lease."""
    result = lab.kubectl("get", "lease", "-n", LOCK_NAMESPACE, f"nodeguard-failover-{node}", "-o", "json", check=False)
    if result.returncode != 0:
        return None
    return json.loads((json.loads(result.stdout)["metadata"].get("annotations") or {}).get("failover.nodeguard.io/holder") or "null")


def taint_events(lab, node) -> list:
    return lab.core().list_namespaced_event("default", field_selector=f"involvedObject.name={node},reason=FailoverTainted").items


def alive(pid: int) -> bool:
    """The process runs (a zombie waiting to be reaped does not count)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def node_proven_dead(lab, name, seconds=10):
    """NotReady for a while and Lease stale (renewTime older than duration + 5s margin)."""
    node = node_obj(lab, name)
    ready = next(c for c in node.status.conditions if c.type == "Ready")
    if ready.status == "True" or time.time() - ready.last_transition_time.timestamp() < seconds:
        return False
    lease = lab.client.CoordinationV1Api(lab.api_client()).read_namespaced_lease(name, "kube-node-lease")
    return time.time() - lease.spec.renew_time.timestamp() > lease.spec.lease_duration_seconds + 6


# --- the scenario ---------------------------------------------------------------------------------


def test_refusals_while_the_node_is_healthy(lab, remediator, db_worker):
    before = state(lab, db_worker)
    result = playbook(remediator, "node_outage", db_worker)
    assert_refused_unchanged(lab, db_worker, result, before, "Missing proof(s): not-ready, lease-stale")

    # The lab's control-plane node (ng-cp1 has no BMC in the inventory: lend it a system of the workers' BMC;
    # the worker's own system would be refused as a second mapping of one device, before the rule under test).
    bmc = yaml.safe_load(INVENTORY.read_text())["all"]["children"]["workers"]["hosts"][db_worker]["bmc"]
    control_plane = state(lab, lab.CONTROL_PLANE)
    lent = dict(bmc, system_id=lab.CONTROL_PLANE)
    result = playbook(remediator, "node_outage", lab.CONTROL_PLANE, node_outage_power_by_node={lab.CONTROL_PLANE: lent})
    assert_refused_unchanged(lab, lab.CONTROL_PLANE, result, control_plane, "refused [control-plane]")

    lock = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": f"nodeguard-failover-{db_worker}", "namespace": LOCK_NAMESPACE},
        "spec": {"holderIdentity": "another-job", "leaseDurationSeconds": 600, "renewTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())},
    }
    lab.kubectl("apply", "-f", "-", stdin=json.dumps(lock))
    try:
        locked = state(lab, db_worker)
        result = playbook(remediator, "node_outage", db_worker)
        assert_refused_unchanged(lab, db_worker, result, locked, "locked by job 'another-job'")
    finally:
        lab.kubectl("delete", "lease", "-n", LOCK_NAMESPACE, f"nodeguard-failover-{db_worker}")

    result = playbook(remediator, "node_outage", "ng-worker99", node_outage_power_by_node={"ng-worker99": dict(bmc, system_id="ng-worker99")})
    assert_refused_unchanged(lab, db_worker, result, before, "'ng-worker99' does not exist")


def test_refusals_while_partitioned(lab, remediator, db_worker):
    """The kubelet is dead but the machine runs: the API proofs hold, the BMC says On."""
    lab.podman("exec", db_worker, "systemctl", "stop", "kubelet")
    lab.wait_for(lambda: node_proven_dead(lab, db_worker), timeout=150, interval=2, what=f"{db_worker} NotReady with a stale Lease")
    before = state(lab, db_worker)
    result = playbook(remediator, "node_outage", db_worker)
    assert_refused_unchanged(lab, db_worker, result, before, "power-off: redfish reads power ON")
    # Refused at once on the BMC's On: the Lease watch (renew interval + margin from the run's start) had no time.
    assert "Missing proof(s): lease-stale, power-off." in " ".join(result.stdout.split())

    # Started early by an alert, it waits for the proofs (here in vain: the BMC keeps saying On).
    result = playbook(remediator, "node_outage", db_worker, node_outage_proof_timeout=4)
    assert_refused_unchanged(lab, db_worker, result, before, "(proof_timeout 4s)")
    assert "power-off: redfish reads power ON" in result.stdout

    bmc = yaml.safe_load(INVENTORY.read_text())["all"]["children"]["workers"]["hosts"][db_worker]["bmc"]
    unreachable = dict(bmc, address="https://127.0.0.1:1")
    result = playbook(remediator, "node_outage", db_worker, node_outage_fence=True, node_outage_power_by_node={db_worker: unreachable})
    assert_refused_unchanged(lab, db_worker, result, before, "power state unreadable")

    wrong = dict(bmc, password="not-the-password")
    result = playbook(remediator, "node_outage", db_worker, node_outage_fence=True, node_outage_power_by_node={db_worker: wrong})
    assert_refused_unchanged(lab, db_worker, result, before, "credentials refused")
    assert "not-the-password" not in result.stdout + result.stderr

    result = playbook(remediator, "node_outage", db_worker, node_outage_fence=True, node_outage_max_unhealthy="0")
    assert_refused_unchanged(lab, db_worker, result, before, "refused [storm]")

    result = playbook(remediator, "node_outage", db_worker, check=True, node_outage_fence=True)
    assert result.returncode == 0, lab.playbook_failure(result.stdout)
    assert_unchanged(lab, db_worker, before)
    assert lab.container_state(db_worker) == "running"
    assert "fence | pending | power off via redfish (reads ON now)" in result.stdout
    assert "delete-pods | pending | force-delete (grace 0)" in result.stdout


def test_fenced_outage_killed_after_taint_completes_on_rerun(lab, remediator, db_worker, db_pod_on):
    """Two node-outage runs start at once from this host with the default job id: one fences and taints, the
    other is refused by the lock. The winner is killed right after the taint. A rerun is refused while the
    dead run's Lease stands; one that may wait takes the lock over once it saw the Lease unchanged for its TTL.
    That run loses its ansible-playbook to kill -9 and its module goes on (ansible-core detached it): a third
    run is refused naming that module's pid, and the orphan completes the outage alone."""
    old_db = db_pod_on(lab, db_worker)
    assert old_db is not None
    # The old db pod stays listed (Terminating) until this test lifts a finalizer: every run that force-deletes it
    # then waits in delete-pods, holding and renewing the lock, for as long as the test needs.
    pod_ref = ("pod", old_db.metadata.name, "-n", NAMESPACE)
    lab.kubectl("patch", *pod_ref, "--type", "merge", "-p", json.dumps({"metadata": {"finalizers": ["nodeguard.test/hold"]}}))
    started = time.time()
    # A short lock TTL: the takeover below waits 20 s, not the default 120 s.
    short_lock = {"node_outage_lock_ttl_seconds": 20, "node_outage_pod_delete_timeout": 240}
    runs = [
        playbook(remediator, "node_outage", db_worker, background=True, node_outage_fence=True, node_outage_fence_backoff_seconds=2, **short_lock)
        for _unused in range(2)
    ]
    try:
        # The run writes its FailoverTainted Event right after the taint: killed between the two, it would leave
        # no Event (a gap this test does not cover), so the kill comes once the Event is there.
        lab.wait_for(lambda: has_taint(lab, db_worker) and taint_events(lab, db_worker), timeout=180, interval=0.2,
                     what="the out-of-service taint and its FailoverTainted Event")
        lab.wait_for(lambda: any(run.poll() is not None for run in runs), timeout=120, interval=0.2, what="the run without the lock to end")
    finally:
        for run in runs:
            if run.poll() is None:
                kill_tree(run.pid)  # the whole job dies, module process included (it runs in its own session)
    outputs = [run.communicate()[0] for run in runs]
    refused = [output for output in outputs if "refused [lock-held]" in output]
    assert len(refused) == 1, "\n----\n".join(output[-3000:] for output in outputs)
    assert "locked by job " in refused[0] and "(pid " in refused[0]
    events = taint_events(lab, db_worker)
    assert len(events) == 1, f"{len(events)} taint Events for one incident"
    interrupted = record(lab, db_worker)
    assert interrupted is not None, "a taint without a record"
    assert interrupted["steps"]["taint"]["outcome"] == "tainted"
    assert interrupted["steps"]["fence"]["outcome"] == "powered-off"
    assert lab.container_state(db_worker) != "running"

    # The killed run's Lease stands: a rerun is refused at once, naming it; nothing changes.
    dead = lock_holder(lab, db_worker)
    assert dead is not None
    lab.wait_for(lambda: not alive(dead["pid"]), timeout=10, interval=0.2, what=f"the killed module (pid {dead['pid']}) to be gone")
    before = state(lab, db_worker)
    result = playbook(remediator, "node_outage", db_worker)
    assert_refused_unchanged(lab, db_worker, result, before, f"pid {dead['pid']}, run {dead['run']}")

    # Every out-of-band reader agrees, through the node_power module: Redfish, IPMI, the ClusterLabs agent.
    host = yaml.safe_load(INVENTORY.read_text())["all"]["children"]["workers"]["hosts"][db_worker]
    for power in (host["bmc"], host["bmc_ipmi"], dict(host["bmc"], type="fence_agent", agent="fence_redfish")):
        assert read_power(remediator, db_worker, power) == "off"

    # A rerun that may wait takes the lock over (it watched the Lease unchanged for 20 s) and resumes; it waits
    # in delete-pods for the held pod. Its ansible-playbook is killed with -9, and its module goes on.
    rerun = playbook(remediator, "node_outage", db_worker, background=True, node_outage_lock_wait_seconds=40, **short_lock)
    orphan = None
    try:
        lab.wait_for(lambda: (lock_holder(lab, db_worker) or {}).get("run") not in (None, dead["run"]), timeout=120, interval=0.5, what="the takeover")
        os.kill(rerun.pid, signal.SIGKILL)  # ansible-playbook only, as a crashed job runner or a closed terminal does
        rerun.wait()
        holder = lock_holder(lab, db_worker)
        orphan = holder["pid"]
        assert alive(orphan), "the module died with ansible-playbook; this test expects ansible-core to detach it"
        before = state(lab, db_worker)
        result = playbook(remediator, "node_outage", db_worker)
        assert_refused_unchanged(lab, db_worker, result, before, f"pid {orphan}, run {holder['run']}")
        lab.kubectl("patch", *pod_ref, "--type", "merge", "-p", json.dumps({"metadata": {"finalizers": None}}))
        lab.wait_for(lambda: lock_holder(lab, db_worker) is None, timeout=300, interval=2, what="the orphaned module to finish and release its lock")
    finally:
        lab.kubectl("patch", *pod_ref, "--type", "merge", "-p", json.dumps({"metadata": {"finalizers": None}}), check=False)
        if orphan is not None and alive(orphan):
            os.kill(orphan, signal.SIGKILL)  # the module this test started, by its pid
    done = record(lab, db_worker)
    assert done["phase"] == "outage-complete", done
    assert has_taint(lab, db_worker)
    assert len(taint_events(lab, db_worker)) == 1
    result = playbook(remediator, "node_outage", db_worker)
    assert result.returncode == 0 and "outage already complete" in result.stdout, lab.playbook_failure(result.stdout)

    replacement = lab.core().read_namespaced_pod(old_db.metadata.name, NAMESPACE)
    assert replacement.metadata.uid != old_db.metadata.uid
    assert replacement.spec.node_name != db_worker
    assert replacement.status.phase == "Running"
    assert any(c.type == "Ready" and c.status == "True" for c in replacement.status.conditions)
    replaced = {r["pod"]: r for r in done["replacements"]["replaced"]}
    assert replaced[f"{NAMESPACE}/{old_db.metadata.name}"]["seconds"] is not None
    attachments = lab.client.StorageV1Api(lab.api_client()).list_volume_attachment().items
    assert not [a for a in attachments if a.spec.node_name == db_worker]
    print(f"\noutage to db Ready elsewhere: {time.time() - started:.1f}s; replacements: {done['replacements']['replaced']}")


def test_recover_removes_the_taint_once_the_node_is_back(lab, remediator, db_worker):
    result = playbook(remediator, "node_recover", db_worker, node_recover_retries=0)
    assert result.returncode != 0 and "not recovered yet" in result.stdout
    assert has_taint(lab, db_worker)

    lab.power_on(db_worker)
    lab.wait_for(lambda: lab.node_ready(db_worker), timeout=120, interval=2, what=f"{db_worker} Ready")
    result = playbook(remediator, "node_recover", db_worker)
    assert result.returncode == 0, lab.playbook_failure(result.stdout)
    assert not has_taint(lab, db_worker)
    closed = record(lab, db_worker)
    assert closed["phase"] == "recovered"
    assert closed["identity"]["boot_id"] != node_obj(lab, db_worker).status.node_info.boot_id, "recovered without a restart"
    # The incident is kept in the durable history too, closed, whatever happens to the Events.
    kept = lab.kubectl("get", "configmap", "-n", HISTORY_NAMESPACE, f"nodeguard-history-{db_worker}", "-o", "json").stdout
    assert json.loads(json.loads(kept)["data"][closed["id"]])["phase"] == "recovered"
    assert "taint removed" in result.stdout and "node NotReady (first seen)" in result.stdout
    # No secret anywhere the incident left a trace: the run's output, the Node and its record, the
    # Events about it, the durable history and the lock Leases.
    password = yaml.safe_load(INVENTORY.read_text())["all"]["children"]["workers"]["hosts"][db_worker]["bmc"]["password"]
    traces = {
        "node-recover output": result.stdout + result.stderr,
        "node": lab.kubectl("get", "node", db_worker, "-o", "json").stdout,
        "events": lab.kubectl("get", "events", "-A", "--field-selector", f"involvedObject.name={db_worker}", "-o", "json").stdout,
        "history": kept,
        "leases": lab.kubectl("get", "leases", "-n", LOCK_NAMESPACE, "-o", "json").stdout,
    }
    assert password and "Failover" in traces["events"]
    assert not [where for where, text in traces.items() if password in text], "the BMC password is in an incident trace"
    print("\n" + "\n".join(line for line in result.stdout.splitlines() if "+seconds" in line or "Z  " in line))
