"""Failover timelines on the lab: apply a profile, power a worker off, and watch (Kubernetes
watches, no polling of the API) for each milestone, timed from the moment the container is seen
stopped.

    .venv/bin/python bench/timeline.py --profiles fast --runs 5 --out docs/benchmarks/raw/timelines.json

Three kinds of run per heartbeat profile (--kinds), each recorded with its `trigger`:
- unremediated: nothing but Kubernetes. Records not_ready, unreachable_taint, endpoint_removed,
  deployment_replaced and statefulset_replaced_unremediated (given up after a cap).
- remediated (trigger node-watch.yml): the documented commands only. Before a preset's remediated runs,
  tune_failover.yml -e failover_preset=<preset> (it records the applied profile in the cluster); the reference
  profiles are never tuned. A real ansible-rulebook runs extensions/eda/rulebooks/node-watch.yml with its shipped
  variables file, the lab's kubeconfig and its workers allowed (bench/node_watch_chain.py, docs/eda.md "Node
  watch"); the benchmark powers the victim off and only observes: the source's node-down -> the rulebook ->
  node-outage, which takes its NotReady wait from the applied profile (the preset's
  remediation.not_ready_seconds), else the stock 60 s, and waits (nodeguard_node_watch_proof_timeout) until its
  proofs hold: that NotReady time, a stale Lease and the BMC reading Off. Every milestone is recorded, also
  deployment_replaced (node-outage deletes the Deployment's pod too).
- bench-watch (trigger bench-watch): a separate, labelled row for comparison: the benchmark's own watch starts
  playbooks/node_outage.yml -e outage_nodes=<node> the moment the node is NotReady (no rulebook), with
  node_outage_proof_timeout up to the cap. Records statefulset_replaced (and the detection milestones);
  deployment_replaced is left out there (taken from unremediated runs only).

Every remediated run keeps its phases whole (bench/phases.py): the event (NotReady, or the BMC's Off event), the
rulebook's start-up, node-outage's start, its plan with each proof's whole message, the taint, the deletes, the
detach and the replacement Ready.

The victim is any worker that holds a web and a db pod, or the one --victim names (e.g. ng-worker4, the
real-kubelet worker of a lab brought up with NODEGUARD_LAB_REAL_KUBELET=1): before each run the other
workers are cordoned and a db pod and a web pod are deleted as needed, so that their replacements start
there, as the real-kubelet lab tests place the db pod. Each run records which kind of kubelet its victim
ran (victim_kubelet: real or stand-in) and how old its last Lease renewal and last status heartbeat were
at the power-off (what the NotReady time counts down from), and the other workers' at the same read.

The event-led profiles (power-event) have one kind of run (trigger power-events.yml): the lab's Redfish BMC is
subscribed (EventService) to a real ansible-rulebook running extensions/eda/rulebooks/power-events.yml
(tests/integration/eda/power_event_chain.py), and the power-off alone starts the failover: the BMC's
ResourcePoweredOff event -> the rulebook -> node-outage with node_outage_power_event_time. Nothing is
started by the benchmark after the power-off. Every milestone is recorded from these runs, also
deployment_replaced (node-outage deletes the Deployment's pod too) and not_ready, which may come
after the replacement; plus out_of_service_taint and whether the node was still Ready in the API then.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from kubernetes import client, watch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "tests" / "integration" / "eda"))

import lab_profile  # noqa: E402
import lablib  # noqa: E402
import phases  # noqa: E402
import profiles  # noqa: E402
from results import BENCH_WATCH, NODE_WATCH, POWER_EVENTS, REAL_KUBELET, STAND_IN  # noqa: E402

OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
INCIDENT = "failover.nodeguard.io/incident"

UNREACHABLE = "node.kubernetes.io/unreachable"
DETECTION = ("not_ready", "unreachable_taint", "endpoint_removed")
UNREMEDIATED_GRACE = 30.0
# What a profile's runs are: Kubernetes alone; node-outage started by the shipped node-watch.yml (the remediated row);
# node-outage started by the benchmark's own watch at NotReady (a separate row, trigger bench-watch).
KINDS = ("unremediated", "remediated", "bench-watch")
# node_outage.yml keeps its lock Lease in this namespace; it does not create it.
LOCK_NAMESPACE = "nodeguard-system"


class Milestones:
    """First time (seconds after power-off) each milestone was seen; thread-safe."""

    def __init__(self) -> None:
        self.t0: float | None = None
        self.seen: dict[str, float] = {}
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)

    def mark(self, name: str) -> None:
        with self.lock:
            if self.t0 is not None and name not in self.seen:
                self.seen[name] = round(time.monotonic() - self.t0, 2)
                self.changed.notify_all()

    def wait(self, names: tuple[str, ...], deadline: float) -> None:
        with self.lock:
            while not all(n in self.seen for n in names) and time.monotonic() < deadline:
                self.changed.wait(timeout=0.5)


def _ready(conditions) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in conditions or [])


class Watcher(threading.Thread):
    """Runs one watch until stopped, re-listing after each server timeout, and hands every
    object it sees to check()."""

    def __init__(self, list_call, check, **kwargs) -> None:
        super().__init__(daemon=True)
        self.list_call, self.check, self.kwargs = list_call, check, kwargs
        self.stopping = threading.Event()
        self.synced = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            stream = watch.Watch()
            try:
                for event in stream.stream(self.list_call, timeout_seconds=10, **self.kwargs):
                    self.check(event["object"])
                    if self.stopping.is_set():
                        stream.stop()
                self.synced.set()
            except Exception:  # noqa: BLE001 - the apiserver may restart; watch again
                time.sleep(0.5)

    def stop(self) -> None:
        self.stopping.set()


def victim_and_baseline(core, candidates: list[str]) -> tuple[str, dict]:
    """The first of the candidate workers with a web pod and a db pod; the pods it holds now."""
    pods = core.list_namespaced_pod(lablib.NAMESPACE).items
    for worker in candidates:
        here = [p for p in pods if p.spec.node_name == worker and p.metadata.deletion_timestamp is None]
        web = [p for p in here if p.metadata.labels.get("app") == "web"]
        db = [p for p in here if p.metadata.labels.get("app") == "db"]
        if web and db:
            return worker, {
                "web_uids": {p.metadata.uid for p in pods if p.metadata.labels.get("app") == "web"},
                "web_on_victim": len(web),
                "db": {p.metadata.name: p.metadata.uid for p in db},
            }
    return "", {}


def spread_workloads(core) -> None:
    """Make some worker hold both a web and a db pod again: after a failover the returning node is
    empty; restarting the Deployment spreads it over all workers (topology spread)."""
    lablib.kubectl("-n", lablib.NAMESPACE, "rollout", "restart", "deployment/web")
    lablib.kubectl("-n", lablib.NAMESPACE, "rollout", "status", "deployment/web", "--timeout=180s")
    lablib.wait_for(lablib.workloads_ready, timeout=180, interval=2, what="workloads Ready")


def pods_to_move(pods: list[dict], victim: str) -> list[str]:
    """Which pods to delete, with every other worker cordoned, so that the victim holds a db pod and a web pod:
    a db pod (the first by name; the anti-affinity allows one per node) if it holds none, and a web pod from
    the worker that holds the most if it holds none. pods: {"name", "app", "node"} of the live pods."""
    moves = []
    for app in ("db", "web"):
        mine = [p for p in pods if p["app"] == app]
        if mine and not any(p["node"] == victim for p in mine):
            per_node = {node: sum(p["node"] == node for p in mine) for node in {p["node"] for p in mine}}
            moves.append(min(mine, key=lambda p: (-per_node[p["node"]], p["name"]))["name"])
    return moves


def live_pods(core) -> list[dict]:
    return [
        {"name": p.metadata.name, "app": (p.metadata.labels or {}).get("app"), "node": p.spec.node_name}
        for p in core.list_namespaced_pod(lablib.NAMESPACE).items
        if p.metadata.deletion_timestamp is None
    ]


def hold_web_and_db(core, victim: str) -> None:
    """Make the victim hold a web pod and a db pod: the other workers cordoned, the pods pods_to_move() names
    deleted, their replacements Ready on the victim (a db pod's volume is attached there), the others uncordoned."""
    moves = pods_to_move(live_pods(core), victim)
    if not moves:
        return
    others = [worker for worker in lablib.worker_names() if worker != victim]
    for worker in others:
        lablib.kubectl("cordon", worker)
    try:
        lablib.kubectl("delete", "pod", "-n", lablib.NAMESPACE, *moves, "--wait=false")
        lablib.wait_for(
            lambda: not pods_to_move(live_pods(core), victim) and lablib.workloads_ready(),
            timeout=300,
            interval=2,
            what=f"a web and a db pod Ready on {victim}",
        )
    finally:
        for worker in others:
            lablib.kubectl("uncordon", worker, check=False)
    print(f"timeline: moved {', '.join(moves)} to {victim}", flush=True)


def kubelet_kind(victim: str) -> str:
    return REAL_KUBELET if victim in lablib.real_kubelet_workers() else STAND_IN


def heartbeat_ages(core, victim: str, power_off_wall: float) -> dict:
    """How long before the power-off the victim's kubelet last renewed its Lease and last posted its status (the
    Ready condition's lastHeartbeatTime, whole seconds): the node lifecycle controller's grace period counts from
    the later of the two, so they explain much of a run's time to NotReady. The other workers' ages are taken at
    the moment of the read (their kubelets run on): samples of their rhythm beside the victim's. Read once the
    victim is off."""
    leases = client.CoordinationV1Api(lablib.api_client()).list_namespaced_lease("kube-node-lease").items
    nodes = core.list_node().items
    read_wall = time.time()
    renewed = {lease.metadata.name: lease.spec.renew_time for lease in leases}
    ages, workers = {}, set(lablib.worker_names())
    for node in nodes:
        name = node.metadata.name
        if name in workers:
            at = power_off_wall if name == victim else read_wall
            ready = next((c for c in node.status.conditions or [] if c.type == "Ready"), None)
            stamps = {"lease_s": renewed.get(name), "status_s": ready.last_heartbeat_time if ready else None}
            ages[name] = {field: None if stamp is None else round(at - stamp.timestamp(), 2) for field, stamp in stamps.items()}
    return {
        "lease_renewed_before_power_off": ages[victim]["lease_s"],
        "heartbeats_at_power_off": ages,
        "heartbeats_read_after_power_off_s": round(read_wall - power_off_wall, 2),
    }


def start_watchers(victim: str, baseline: dict, marks: Milestones, disturbed: list, taint_seen: dict) -> list[Watcher]:
    api = lablib.api_client()
    core, discovery = client.CoreV1Api(api), client.DiscoveryV1Api(api)
    others = set(lablib.worker_names()) - {victim}

    def on_node(node) -> None:
        name = node.metadata.name
        if name == victim:
            if not _ready(node.status.conditions):
                marks.mark("not_ready")
            if any(t.key == UNREACHABLE and t.effect == "NoExecute" for t in node.spec.taints or []):
                marks.mark("unreachable_taint")
            if marks.t0 is not None and "node_ready" not in taint_seen and any(t.key == OUT_OF_SERVICE for t in node.spec.taints or []):
                # The first version of the Node that carries the taint: was it still Ready then?
                taint_seen["node_ready"] = _ready(node.status.conditions)
                marks.mark("out_of_service_taint")
        elif name in others and not _ready(node.status.conditions) and marks.t0 is not None:
            disturbed.append(f"{name} NotReady during the run")

    def on_slice(endpoint_slice) -> None:
        mine = [e for e in endpoint_slice.endpoints or [] if e.node_name == victim]
        if marks.t0 is not None and not any(e.conditions and e.conditions.ready for e in mine):
            marks.mark("endpoint_removed")

    def on_pod(pod) -> None:
        app = (pod.metadata.labels or {}).get("app")
        ready = _ready(pod.status.conditions) and pod.metadata.deletion_timestamp is None
        if app == "web" and ready and pod.metadata.uid not in baseline["web_uids"] and pod.spec.node_name != victim:
            new_web.add(pod.metadata.uid)
            if len(new_web) >= baseline["web_on_victim"]:
                marks.mark("deployment_replaced")
        if app == "db" and ready and pod.metadata.name in baseline["db"] and pod.metadata.uid != baseline["db"][pod.metadata.name]:
            marks.mark("statefulset_replaced")

    new_web: set[str] = set()
    watchers = [
        Watcher(core.list_node, on_node),
        Watcher(discovery.list_namespaced_endpoint_slice, on_slice, namespace=lablib.NAMESPACE, label_selector="kubernetes.io/service-name=web"),
        Watcher(core.list_namespaced_pod, on_pod, namespace=lablib.NAMESPACE),
    ]
    for watcher in watchers:
        watcher.start()
    return watchers


def power_off_and_time(victim: str) -> float:
    """Power off through the lab BMC (as lablib does) and return the monotonic time the container
    is first seen stopped: heartbeats end there."""
    threading.Thread(target=lablib.power_off, args=(victim,), daemon=True).start()
    while lablib.container_state(victim) == "running":
        time.sleep(0.05)
    return time.monotonic()


def run_remediation(victim: str, not_ready_seconds: int, marks: Milestones, deadline: float, log: dict) -> None:
    """Start node_outage.yml when the node is NotReady; it waits for its proofs until the cap.
    Re-run if it still refuses (a proof that never held within the cap ends the run anyway)."""
    marks.wait(("not_ready",), deadline)
    attempts = []
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "PATH": f"{REPO}/.venv/bin:{os.environ['PATH']}"}
    log["not_ready_seconds"] = not_ready_seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        # No timing variable: the wait is the applied profile's, as for a user (the run prints its source).
        timings = {"outage_nodes": victim, "node_outage_proof_timeout": max(1, int(deadline - started))}
        result = subprocess.run(
            [
                str(REPO / ".venv" / "bin" / "ansible-playbook"),
                "-i",
                str(lablib.STATE / "inventory.yml"),
                str(REPO / "playbooks" / "node_outage.yml"),
                "-e",
                json.dumps(timings),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            check=False,
        )
        attempts.append({"started_s": round(started - marks.t0, 1), "seconds": round(time.monotonic() - started, 1), "rc": result.returncode})
        # node-outage's plan (its timing, every proof, each step) and outcome, every message whole
        log["plan"] = phases.task_messages(result.stdout, phases.PLAN_TASK)
        log["outcome"] = phases.task_messages(result.stdout, phases.OUTCOME_TASK)
        if result.returncode == 0:
            break
        log["last_refusal"] = [line for line in result.stdout.splitlines() if "msg" in line][-3:]
        time.sleep(1)
    log["playbook_attempts"] = attempts


def tune_like_a_user(preset: str) -> None:
    """ansible-playbook playbooks/tune_failover.yml -e failover_preset=<preset>, as the README says."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "PATH": f"{REPO}/.venv/bin:{os.environ['PATH']}"}
    lablib.reset_lab(timeout=300)  # every node on and Ready: the tune touches all of them
    result = subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "ansible-playbook"),
            "-i",
            str(lablib.STATE / "inventory.yml"),
            str(REPO / "playbooks" / "tune_failover.yml"),
            "-e",
            f"failover_preset={preset}",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"tune_failover.yml -e failover_preset={preset} failed:\n{result.stdout[-3000:]}")
    print(f"timeline: tune_failover.yml -e failover_preset={preset}: ok", flush=True)
    lablib.wait_for(lablib.lab_is_up, timeout=300, interval=2, what="kube-apiserver ready")


def one_run(profile: str, remediated: bool, cap_seconds: float, chains=None, victim: str | None = None) -> dict:
    """One power-off. chains (a rulebook-led run): gives the rulebook chain (power-events.yml or node-watch.yml) for
    the victim; the power-off alone must lead to the failover. remediated without chains: the benchmark's own
    watch starts node-outage at NotReady (trigger bench-watch). victim: this worker, made to hold a web and a db pod."""
    core = lablib.core()
    lablib.reset_lab(timeout=300)
    if victim:
        hold_web_and_db(core, victim)
        chosen, baseline = victim_and_baseline(core, [victim])
    else:
        chosen, baseline = victim_and_baseline(core, lablib.worker_names())
        if not chosen:
            spread_workloads(core)
            chosen, baseline = victim_and_baseline(core, lablib.worker_names())
    if not chosen:
        raise RuntimeError(f"no worker holds both a web and a db pod (asked for: {victim or 'any'})")
    victim = chosen
    chain = chains.for_victim(victim) if chains else None
    if remediated or chain:
        lablib.kubectl("create", "namespace", LOCK_NAMESPACE, check=False)
    marks, disturbed, log, taint_seen = Milestones(), [], {}, {}
    watchers = start_watchers(victim, baseline, marks, disturbed, taint_seen)
    for watcher in watchers:
        watcher.synced.wait(timeout=30)
    if chain:
        chain.mark_run_start()
    marks.t0 = power_off_and_time(victim)
    power_off_wall = time.time() - (time.monotonic() - marks.t0)
    if chain:
        chain.watch(victim, marks.mark)
    log.update(heartbeat_ages(core, victim, power_off_wall))
    deadline = marks.t0 + cap_seconds
    wanted = DETECTION + (("statefulset_replaced",) if remediated else ("deployment_replaced", "statefulset_replaced"))
    remediation = None
    if remediated and not chain:
        remediation = threading.Thread(target=run_remediation, daemon=True, args=(victim, remediation_not_ready_seconds(profile), marks, deadline, log))
        remediation.start()
    if chain:
        # Every milestone, in whatever order they come (not_ready may follow the replacement), and the end of
        # node-outage's run (it verifies the replacements after they are Ready), so its outcome and CPU count.
        marks.wait((*DETECTION, "deployment_replaced", "statefulset_replaced", "playbook_finished"), deadline)
        time.sleep(1)  # its process is reaped after it prints the recap
    elif remediated:
        marks.wait(wanted, deadline)
    else:
        # The StatefulSet pod is not replaced without remediation: once the Deployment's pod is,
        # give it UNREMEDIATED_GRACE more seconds (within the cap) to prove it stays that way.
        marks.wait((*DETECTION, "deployment_replaced"), deadline)
        if "deployment_replaced" in marks.seen:
            deadline = min(deadline, marks.t0 + marks.seen["deployment_replaced"] + UNREMEDIATED_GRACE)
            cap_seconds = round(deadline - marks.t0, 1)
        marks.wait(("statefulset_replaced",), deadline)
    if remediation:
        remediation.join(timeout=max(0.0, deadline - time.monotonic()) + 60)
    for watcher in watchers:
        watcher.stop()
    seen = dict(marks.seen)
    log.update(power_off_at=datetime.fromtimestamp(power_off_wall, UTC).isoformat(timespec="milliseconds"))
    if remediated or chain:
        # node-outage's incident record: its steps (prove, taint, delete-pods, detach-volumes, ...) with their times.
        # The Lease proof can hold renew interval + margin after the last renewal (lease_renewed_before_power_off),
        # so that phase explains much of a run's time to the taint.
        annotations = core.read_node(victim).metadata.annotations or {}
        record = json.loads(annotations.get(INCIDENT, "{}"))
        log.update(
            incident_record={key: record.get(key) for key in ("trigger", "power_event", "steps")},
            steps_s=phases.step_seconds(record.get("steps"), log["power_off_at"]),
            readings_s=phases.reading_seconds(record.get("readings"), log["power_off_at"]),
            taint_while_ready=taint_seen.get("node_ready"),
        )
    if chain:
        log.update(trigger=chains.trigger, rulebook_startup_seconds=chain.startup_seconds, **chain.run_report(victim))
        text = chain.run_log()
        log.update(plan=phases.task_messages(text, phases.PLAN_TASK), outcome=phases.task_messages(text, phases.OUTCOME_TASK))
        if getattr(chain, "idle_wait_seconds", None) is not None:
            log["rulebook_idle_wait_seconds"] = chain.idle_wait_seconds  # the last victim's node-recover, before power-off
    elif not remediated:
        seen["statefulset_replaced_unremediated"] = seen.pop("statefulset_replaced", None)
    else:
        log["trigger"] = BENCH_WATCH
        seen.pop("deployment_replaced", None)
    if remediated or chain:
        log["proofs_whole"] = phases.proofs(log.get("plan") or [])
    result = {
        "profile": profile,
        "remediated": remediated,
        "victim": victim,
        "victim_kubelet": kubelet_kind(victim),
        "cap_s": cap_seconds,
        "milestones": seen,
        "disturbed": sorted(set(disturbed)),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **log,
    }
    if remediated or chain:
        result["phases"] = phases.breakdown(result)
    kind = log.get("trigger", "unremediated")
    print(
        f"timeline: {profile} {kind} on {victim} ({result['victim_kubelet']} kubelet): {seen}"
        f"{' taint while Ready: ' + str(taint_seen.get('node_ready')) if chain else ''}"
        f"{' DISTURBED ' + str(disturbed) if disturbed else ''}",
        flush=True,
    )
    return result


def remediation_not_ready_seconds(profile: str) -> int:
    """What node_outage.yml is given: the model's recommendation for our presets; the role's
    default for the reference profiles (a user who did not adopt a preset keeps the defaults)."""
    if profile in profiles.REFERENCE_PROFILES:
        return profiles.node_outage_default("node_outage_not_ready_seconds")
    return profiles.model_prediction(profile, node_count=4)["remediation"]["not_ready_seconds"]


def cap_for(profile: str, remediated: bool) -> float:
    """How long to wait after power-off: twice the expected milestone, at least 90s."""
    prediction = profiles.model_prediction(profile, node_count=4)
    if prediction is None:  # seed-001: detection like fast, eviction at the default 300s
        prediction = profiles.model_prediction("kubernetes-default", node_count=4)
    timeline = prediction["timeline"]
    if profile in profiles.EVENT_LED_PROFILES:  # the last milestone expected is not_ready (stock settings)
        return max(90.0, 2 * timeline["not_ready"]["expected"])
    # Remediated: detection + the NotReady proof the playbook is given + its run (about 15s).
    remediated_expected = timeline["not_ready"]["expected"] + remediation_not_ready_seconds(profile) + 15
    expected = remediated_expected if remediated else timeline["deployment_replaced"]["expected"]
    return max(90.0, 2 * expected)


def power_event_chain(workdir: Path, workers: list[str], inventory_vars: dict):
    """power-events.yml, the lab BMCs subscribed (tests/integration/eda/power_event_chain.py)."""
    from power_event_chain import PowerEventChain

    return PowerEventChain(workdir, workers, inventory_vars=inventory_vars)


# Between runs only: when the victim is powered back on (the next run's reset), node-watch.yml runs node-recover,
# which untaints once the node has been Ready for node_recover_healthy_seconds; the next power-off waits for that run
# to end. 10 s instead of the stock 60 s shortens the time between runs; no measured milestone comes after it.
BETWEEN_RUNS_VARS = {"node_recover_healthy_seconds": 10}


def node_watch_chain(workdir: Path, workers: list[str], inventory_vars: dict):
    """node-watch.yml against the lab's apiserver (bench/node_watch_chain.py), node-recover shortened (BETWEEN_RUNS_VARS)."""
    from node_watch_chain import NodeWatchChain

    return NodeWatchChain(workdir, workers, inventory_vars={**BETWEEN_RUNS_VARS, **inventory_vars}, kubeconfig=lablib.kubeconfig())


# trigger (recorded in each run, results.json's `trigger`) -> how its chain is started
CHAIN_STARTERS = {POWER_EVENTS: power_event_chain, NODE_WATCH: node_watch_chain}


class Chains:
    """The rulebook chain of the rulebook-led runs (ansible-rulebook with a shipped rulebook, and for power-events.yml
    the BMCs' subscriptions). Both rulebooks act at most once per node in 30 minutes after a run that tainted it (their
    cool-down), so a victim the chain has already seen gets a fresh chain, as if the benchmark were 30 minutes later."""

    def __init__(self, workdir: Path, log_out: Path, trigger: str, node_outage_vars: dict | None = None) -> None:
        self.workdir, self.log_out, self.trigger = workdir, log_out, trigger
        self.start_chain, self.node_outage_vars = CHAIN_STARTERS[trigger], node_outage_vars or {}
        self.chain, self.seen, self.started = None, set(), 0

    def for_victim(self, victim: str):
        if self.chain is None or victim in self.seen:
            self.stop()
            self.started += 1
            workdir = self.workdir / f"chain-{self.started}"
            workdir.mkdir()
            self.chain = self.start_chain(workdir, lablib.worker_names(), self.node_outage_vars)
            self.seen = set()
        self.seen.add(victim)
        return self.chain

    def stop(self) -> None:
        if self.chain is not None:
            try:
                with self.log_out.open("a") as log:
                    log.write(self.chain.redacted_log())
            finally:
                self.chain.stop()
                self.chain = None


def rulebook_log_name(profile: str, trigger: str) -> str:
    """rulebook-power-event.log (as before), rulebook-fast-node-watch.log, ..."""
    stem = trigger.removesuffix(".yml")
    return f"rulebook-{profile}.log" if trigger == POWER_EVENTS else f"rulebook-{profile}-{stem}.log"


def rulebook_led_runs(profile: str, trigger: str, runs: int, results: list, out: Path, node_outage_vars: dict | None = None, victim: str | None = None) -> list:
    """runs rulebook-led runs (see Chains) with the rulebook named by trigger; the rulebook's log (token redacted) goes
    next to out. node_outage_vars: inventory variables for the rulebook's node-outage runs (a variant; recorded in each
    run). victim: as one_run's."""
    import tempfile

    log_out = out.parent / rulebook_log_name(profile, trigger)
    log_out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="ngrbl-") as workdir:
        chains = Chains(Path(workdir), log_out, trigger, node_outage_vars)
        try:
            for _run in range(runs):
                result = one_run(profile, True, cap_for(profile, True), chains=chains, victim=victim)
                if trigger == NODE_WATCH:
                    result["between_runs_vars"] = BETWEEN_RUNS_VARS
                results.append({**result, "node_outage_vars": node_outage_vars} if node_outage_vars else result)
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(json.dumps(results, indent=1) + "\n")
        finally:
            chains.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=list(profiles.ALL_PROFILES))
    parser.add_argument("--runs", type=int, default=5, help="unremediated and bench-watch runs per profile")
    parser.add_argument(
        "--rulebook-runs",
        type=int,
        default=None,
        help="rulebook-led runs per profile (remediated through node-watch.yml, power-event through power-events.yml); default: --runs",
    )
    parser.add_argument("--slow-runs", type=int, default=None, help="runs for profiles whose eviction waits the default 300s (kubernetes-default, seed-001)")
    parser.add_argument(
        "--kinds",
        nargs="+",
        default=list(KINDS),
        choices=KINDS,
        help="unremediated: Kubernetes alone; remediated: node-watch.yml starts node-outage (the shipped "
        "heartbeat trigger); bench-watch: the benchmark's own watch starts it at NotReady",
    )
    parser.add_argument(
        "--victim",
        help="power off this worker in every run (it is made to hold a web and a db pod "
        "first), e.g. ng-worker4, the real-kubelet worker; default: any worker that holds both",
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--node-outage-vars",
        type=json.loads,
        default=None,
        help="rulebook-led runs: inventory variables for node-outage, as JSON (a variant, e.g. "
        "'{\"node_outage_lease_margin_seconds\": 2}'); recorded in each run",
    )
    args = parser.parse_args()
    results = json.loads(args.out.read_text()) if args.out.exists() else []
    original = {c: lablib.read_manifest(c) for c in lab_profile.MANAGED_FLAGS}
    try:
        for profile in args.profiles:
            settings = profiles.profile_settings(profile, node_count=4)
            # An earlier invocation may have just restarted the apiserver; the last run's node may still be off.
            lablib.wait_for(lablib.lab_is_up, timeout=300, interval=2, what="kube-apiserver ready")
            lablib.reset_lab(timeout=300)
            applied = lab_profile.apply(settings)
            print(f"timeline: profile {profile} applied: {applied}", flush=True)
            slow = profile in profiles.REFERENCE_PROFILES
            runs = args.slow_runs if (slow and args.slow_runs is not None) else args.runs
            rulebook_runs = args.rulebook_runs if args.rulebook_runs is not None else runs
            if profile in profiles.EVENT_LED_PROFILES:
                results = rulebook_led_runs(profile, POWER_EVENTS, rulebook_runs, results, args.out, args.node_outage_vars, args.victim)
                continue
            tuned = False
            for kind in args.kinds:
                remediated = kind != "unremediated"
                if remediated and profile in profiles.PRESETS and not tuned:
                    tune_like_a_user(profile)
                    tuned = True
                if kind == "remediated":
                    results = rulebook_led_runs(profile, NODE_WATCH, rulebook_runs, results, args.out, args.node_outage_vars, args.victim)
                    continue
                for _run in range(runs):
                    results.append(one_run(profile, remediated, cap_for(profile, remediated), victim=args.victim))
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    args.out.write_text(json.dumps(results, indent=1) + "\n")
    finally:
        lablib.wait_for(lablib.lab_is_up, timeout=300, interval=2, what="kube-apiserver ready")
        lablib.reset_lab(timeout=300)
        default = profiles.profile_settings("kubernetes-default")
        lab_profile.apply(default)
        lablib.kubectl("delete", "configmap", "-n", LOCK_NAMESPACE, "nodeguard-applied-profile", "--ignore-not-found")
        lab_profile.restore_manifests(original)  # leave the manifests as they were found, the components serving
    return 0


if __name__ == "__main__":
    sys.exit(main())
