"""Load-balancer failure drill (issue 13, seeds/003): the API server load balancer every kubelet uses
is blackholed for 60 s (packets dropped both ways in its own network namespace: no RST, no FIN), then
comes back. Recorded per run, from the API server directly (the host's admin.kubeconfig bypasses the
LB, as an operator's path or the controllers' own does):

- which nodes went NotReady and when (polled every 0.5 s), which taints appeared and who set them;
- node-outage (playbooks/node_outage.yml, the remediation ServiceAccount, the node's BMC from the
  inventory) started for one worker as soon as two nodes are NotReady: its refusal and reason;
- the controller-manager's disruption-mode log lines; every pod deletion (pod UIDs before/after,
  deletionTimestamp seen);
- after the LB returns: time until every node is Ready, per node the time until its Lease is renewed
  again (its heartbeats flow) and which of the kubelet stand-in's connections to the LB carried it
  (the same TCP connection as before the blackhole, or a new one).

Runs on a lab started with the load balancer, in its own private lab:

    NODEGUARD_LAB_LB=1 NODEGUARD_BENCH_NAME=nglb bench/isolated-lab.sh up
    NODEGUARD_BENCH_NAME=nglb bench/isolated-lab.sh run .venv/bin/python bench/lb_drill.py \
        --runs 5 --out /work/main/docs/benchmarks/raw/lb-drill.json
    NODEGUARD_BENCH_NAME=nglb bench/isolated-lab.sh down
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml
from kubernetes import client, config

REPO = Path(__file__).resolve().parents[1]
STATE = REPO / "lab" / ".state"
LB_SH = REPO / "lab" / "lb" / "lb.sh"
LB_ADDRESS = "10.89.77.5:6443"
CONTROL_PLANE = "ng-cp1"
NAMESPACE = "failover-lab"
LOCK_NAMESPACE = "nodeguard-system"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
RECORD = "failover.nodeguard.io/incident"
POLL = 0.5
# Issue 13's target: every node Ready within this long after the LB returns.
READY_TARGET_SECONDS = 60


def now() -> float:
    return time.time()


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check)


def ready(node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


class Observer:
    """Polls Nodes, node Leases and pods from the API server (direct, not through the LB)."""

    def __init__(self, core: client.CoreV1Api, coordination: client.CoordinationV1Api):
        self.core, self.coordination = core, coordination
        self.stop = threading.Event()
        self.ready: dict[str, bool] = {}
        self.transitions: list[dict] = []   # {"node", "ready", "at"}
        self.taints_added: list[dict] = []  # {"node", "key", "effect", "at"}
        self.taints_removed: list[dict] = []
        # node -> [(renewTime, when this poll first saw it)]: a renewTime is the kubelet's clock when it built
        # the request, which may be long before the request got through.
        self.renewals: dict[str, list[tuple[float, float]]] = {}
        self.pods: dict[str, str] = {}      # uid -> namespace/name, every pod ever seen
        self.terminating: dict[str, float] = {}  # uid -> when a deletionTimestamp was first seen
        self.records: dict[str, str] = {}   # node -> the collection's incident annotation, if any
        self.errors = 0
        self._taints: dict[str, set] = {}

    def poll_once(self) -> None:
        at = now()
        for node in self.core.list_node().items:
            name = node.metadata.name
            is_ready = ready(node)
            if self.ready.get(name) is not None and self.ready[name] != is_ready:
                self.transitions.append({"node": name, "ready": is_ready, "at": at})
            self.ready[name] = is_ready
            taints = {(t.key, t.effect) for t in node.spec.taints or []}
            if name in self._taints:
                for key, effect in sorted(taints - self._taints[name]):
                    self.taints_added.append({"node": name, "key": key, "effect": effect, "at": at})
                for key, effect in sorted(self._taints[name] - taints):
                    self.taints_removed.append({"node": name, "key": key, "effect": effect, "at": at})
            self._taints[name] = taints
            annotation = (node.metadata.annotations or {}).get(RECORD)
            if annotation:
                self.records[name] = annotation
        for lease in self.coordination.list_namespaced_lease("kube-node-lease").items:
            renewed = parse_time(lease.spec.renew_time)
            seen = self.renewals.setdefault(lease.metadata.name, [])
            if renewed is not None and (not seen or seen[-1][0] != renewed):
                seen.append((renewed, at))
        for pod in self.core.list_pod_for_all_namespaces().items:
            uid = pod.metadata.uid
            self.pods.setdefault(uid, f"{pod.metadata.namespace}/{pod.metadata.name}")
            if pod.metadata.deletion_timestamp and uid not in self.terminating:
                self.terminating[uid] = at

    def run(self) -> None:
        while not self.stop.is_set():
            started = now()
            try:
                self.poll_once()
            except Exception:  # noqa: BLE001 - an API hiccup must not end the drill; counted
                self.errors += 1
            self.stop.wait(max(0.0, POLL - (now() - started)))


def connections(node: str) -> list[dict]:
    """The node's TCP connections to the load balancer: local port, state, process."""
    return parse_ss(podman("exec", node, "ss", "-tnpH", "state", "all", "dst", LB_ADDRESS, check=False).stdout)


def parse_ss(text: str) -> list[dict]:
    """`ss -tnpH state all` lines: state, send queue, local address, process name."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        process = line.split('(("', 1)[1].split('"', 1)[0] if '(("' in line else ""
        found.append({"state": fields[0], "local": fields[3], "process": process, "send_q": int(fields[2])})
    return found


def start_sampling(node: str, seconds: int, log: str) -> None:
    """In the node itself, once a second: a timestamp line, then its connections to the LB (cheap: one exec).
    One log per run: a loop of the run before may still be writing to its own."""
    script = (f"for i in $(seq {seconds}); do echo \"@ $(date +%s.%N)\"; ss -tnpH state all dst {LB_ADDRESS}; "
              f"sleep 1; done > {log} 2>&1")
    podman("exec", "-d", node, "sh", "-c", script)


def read_sampling(node: str, log: str) -> list[tuple[float, list]]:
    """[(when, kwok's connections [local, state, send-q])] from start_sampling's log, in time order."""
    samples: list[tuple[float, list]] = []
    for line in podman("exec", node, "cat", log, check=False).stdout.splitlines():
        if line.startswith("@ "):
            samples.append((float(line[2:]), []))
        elif samples:
            samples[-1][1].extend([c["local"], c["state"], c["send_q"]] for c in parse_ss(line) if c["process"] == "kwok")
    return sorted(samples, key=lambda sample: sample[0])


def connection_times(samples: list, old: set, lb_down: float, lb_back: float) -> tuple:
    """When the old kwok connection was no longer ESTABLISHED (first 1-s sample after lb_down without it), and the
    first sample after lb_back with an established kwok connection again (absolute times, None if not seen)."""
    gone = next((when for when, sample in samples
                 if when >= lb_down and not old & {c[0] for c in sample if c[1] == "ESTAB"}), None)
    established = next((when for when, sample in samples if when > lb_back and any(c[1] == "ESTAB" for c in sample)), None)
    return gone, established


def remediator_vars(core: client.CoreV1Api, workdir: Path) -> dict:
    """Connection vars of the remediation ServiceAccount (deploy/rbac), as the incident lab tests use."""
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))
    token = core.create_namespaced_service_account_token("nodeguard-remediator", LOCK_NAMESPACE, request).status.token
    cluster = yaml.safe_load((STATE / "admin.kubeconfig").read_text())["clusters"][0]["cluster"]
    ca = workdir / "ca.crt"
    ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    return {"k8s_kubeconfig": "", "host": cluster["server"], "api_key": token, "ca_cert": str(ca)}


def run_node_outage(core: client.CoreV1Api, node: str, workdir: Path, result: dict) -> None:
    """playbooks/node_outage.yml for one node with the lab inventory (its BMC) and stock settings."""
    variables = dict(remediator_vars(core, workdir), outage_nodes=[node])
    vars_file = workdir / "vars.json"
    vars_file.write_text(json.dumps(variables))
    vars_file.chmod(0o600)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    result["started"] = now()
    done = subprocess.run([str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(STATE / "inventory.yml"),
                           str(REPO / "playbooks" / "node_outage.yml"), "-e", f"@{vars_file}"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    result["finished"] = now()
    output = done.stdout + done.stderr
    result["returncode"] = done.returncode
    result["refused_storm"] = "refused [storm]" in output
    result["refusal"] = next((line.strip() for line in output.splitlines() if "refused [" in line), "")[:600]
    # Otherwise why it stopped: the module's own failure lines (no variables are echoed by the play).
    result["failure"] = [line.strip()[:400] for line in output.splitlines()
                         if "Module failed" in line or "Missing proof" in line or line.startswith("fatal:")][:3]


def controller_manager_lines(since: float) -> list[str]:
    result = podman("exec", CONTROL_PLANE, "journalctl", "-u", "kube-controller-manager", "--since", f"@{int(since)}",
                    "-o", "short-iso-precise", "--no-pager", check=False)
    keys = ("disruption mode", "Initializing eviction metric", "Evicting", "TaintManager", "Controller detected")
    return [line for line in result.stdout.splitlines() if any(key in line for key in keys)][:40]


def wait_steady(core, coordination, timeout: float = 300) -> None:
    """Every node Ready, every workload pod Ready, every Lease renewed within the last 15 s."""
    deadline = now() + timeout
    while now() < deadline:
        nodes = core.list_node().items
        pods = core.list_namespaced_pod(NAMESPACE).items
        leases = coordination.list_namespaced_lease("kube-node-lease").items
        fresh = all(now() - (parse_time(lease.spec.renew_time) or 0) < 15 for lease in leases)
        pods_ready = pods and all(any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
                                  for p in pods if not p.metadata.deletion_timestamp)
        if nodes and all(ready(n) for n in nodes) and pods_ready and fresh:
            return
        time.sleep(2)
    raise SystemExit("lb_drill: the lab is not steady (nodes, workloads, Leases) after 300 s")


def drill(core, coordination, blackhole_seconds: float, target: str, workdir: Path) -> dict:
    wait_steady(core, coordination)
    nodes = sorted(n.metadata.name for n in core.list_node().items)
    observer = Observer(core, coordination)
    observer.poll_once()
    before_pods = dict(observer.pods)
    before = {node: connections(node) for node in nodes}
    thread = threading.Thread(target=observer.run, daemon=True)
    thread.start()

    outage: dict = {}
    outage_thread = None
    log = f"/run/nodeguard-lb-drill-{int(now())}.log"
    for node in nodes:
        start_sampling(node, int(blackhole_seconds) + 20, log)
    asked = now()
    subprocess.run([str(LB_SH), "blackhole", "on"], check=True, capture_output=True)
    lb_down = now()  # the rules are in place (the command took lb_down - asked)
    while now() < lb_down + blackhole_seconds:
        not_ready = [n for n, r in observer.ready.items() if not r]
        if outage_thread is None and len(not_ready) >= 2:
            outage_thread = threading.Thread(target=run_node_outage, args=(core, target, workdir, outage), daemon=True)
            outage_thread.start()
        time.sleep(0.2)
    subprocess.run([str(LB_SH), "blackhole", "off"], check=True, capture_output=True)
    lb_back = now()

    # Until every node is Ready and has renewed its Lease since the LB returned (at most 5 minutes).
    deadline = lb_back + 300
    while now() < deadline:
        renewed = all(any(renewal[1] > lb_back for renewal in observer.renewals.get(n, [])) for n in nodes)
        if renewed and all(observer.ready.get(n) for n in nodes):
            break
        time.sleep(0.5)
    after = {node: connections(node) for node in nodes}
    if outage_thread is not None:
        outage_thread.join(timeout=600)
    time.sleep(2)
    observer.stop.set()
    thread.join(timeout=10)

    per_node = {}
    for node in nodes:
        renewals = observer.renewals.get(node, [])
        last_before = max((renew for renew, seen in renewals if seen <= asked), default=None)
        first_after = min(((renew, seen) for renew, seen in renewals if seen > lb_back), key=lambda r: r[1], default=None)
        old = {c["local"] for c in before[node] if c["process"] == "kwok" and c["state"] == "ESTAB"}
        samples = [(when, sample) for when, sample in read_sampling(node, log) if when >= lb_down]
        gone, established = connection_times(samples, old, lb_down, lb_back)
        went = [t["at"] for t in observer.transitions if t["node"] == node and not t["ready"]]
        back = [t["at"] for t in observer.transitions if t["node"] == node and t["ready"] and t["at"] >= lb_back]
        kwok_before = {c["local"] for c in before[node] if c["process"] == "kwok" and c["state"] == "ESTAB"}
        kwok_after = {c["local"] for c in after[node] if c["process"] == "kwok" and c["state"] == "ESTAB"}
        per_node[node] = {
            "not_ready_at_s": round(went[0] - lb_down, 1) if went else None,
            "ready_after_lb_back_s": round(back[0] - lb_back, 1) if back else (0.0 if not went else None),
            "last_renew_time_before_s": round(last_before - lb_down, 1) if last_before else None,
            "renewals_seen_during_blackhole": sum(1 for renewal in renewals if lb_down < renewal[1] <= lb_back),
            # Heartbeats flow again: the first new renewTime the API server shows after the LB returned
            # (seen: poll time; its renewTime may be older, when the kubelet built the request).
            "heartbeat_after_lb_back_s": round(first_after[1] - lb_back, 1) if first_after else None,
            "heartbeat_renew_time_after_lb_back_s": round(first_after[0] - lb_back, 1) if first_after else None,
            # kwok's connection from before the blackhole: first 1-s sample where it was no longer ESTABLISHED;
            # then the first sample after the LB returned with an established kwok connection again.
            "old_connection_gone_by_s": round(gone - lb_down, 1) if gone else None,
            "new_connection_by_s_after_lb_back": round(established - lb_back, 1) if established else None,
            "connections_before": before[node],
            "kwok_samples": [{"at_s": round(when - lb_down, 1), "kwok": sample} for when, sample in samples],
            "connections_after": after[node],
            "kwok_connection_reused": bool(kwok_before & kwok_after),
        }
    deleted = sorted(before_pods[uid] for uid in before_pods if uid in observer.terminating
                     or uid not in {p.metadata.uid for p in core.list_pod_for_all_namespaces().items})
    ready_times = [v["ready_after_lb_back_s"] for v in per_node.values()]
    all_ready = None if any(t is None for t in ready_times) else max(ready_times)
    return {
        "lb_down": stamp(lb_down),
        "lb_back": stamp(lb_back),
        "blackhole_seconds": round(lb_back - lb_down, 1),
        "blackhole_command_s": round(lb_down - asked, 2),
        "nodes": len(nodes),
        "nodes_not_ready": sum(1 for v in per_node.values() if v["not_ready_at_s"] is not None),
        "first_not_ready_s": min((v["not_ready_at_s"] for v in per_node.values() if v["not_ready_at_s"] is not None), default=None),
        "all_ready_after_lb_back_s": all_ready,
        "ready_target_met": all_ready is not None and all_ready <= READY_TARGET_SECONDS,
        "taints_added": [{"node": t["node"], "key": t["key"], "effect": t["effect"], "at_s": round(t["at"] - lb_down, 1)}
                         for t in observer.taints_added],
        "taints_removed": [{"node": t["node"], "key": t["key"], "effect": t["effect"], "at_s": round(t["at"] - lb_down, 1)}
                           for t in observer.taints_removed],
        "collection_taints": sum(1 for t in observer.taints_added if t["key"] == OUT_OF_SERVICE),
        "collection_records": observer.records,
        "pods_deleted": deleted,
        "node_outage": {
            "node": target,
            "started_s": round(outage["started"] - lb_down, 1) if outage.get("started") else None,
            "finished_s": round(outage["finished"] - lb_down, 1) if outage.get("finished") else None,
            "returncode": outage.get("returncode"),
            "refused_storm": outage.get("refused_storm"),
            "refusal": outage.get("refusal"),
            "failure": outage.get("failure"),
        },
        "controller_manager": controller_manager_lines(lb_down - 2),
        "poll_errors": observer.errors,
        "per_node": per_node,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--blackhole-seconds", type=float, default=60)
    parser.add_argument("--node", default="ng-worker1", help="the worker node-outage is started for")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--note", default="stock heartbeat settings", help="what the lab runs (stored with the results)")
    args = parser.parse_args()
    if podman("container", "exists", "ng-lb", check=False).returncode != 0:
        raise SystemExit("lb_drill: no ng-lb: start the lab with NODEGUARD_LAB_LB=1")
    config.load_kube_config(str(STATE / "admin.kubeconfig"))
    core, coordination = client.CoreV1Api(), client.CoordinationV1Api()
    servers = {}
    for node in [CONTROL_PLANE, *[n.metadata.name for n in core.list_node().items if n.metadata.name != CONTROL_PLANE]]:
        text = podman("exec", node, "cat", "/etc/kubernetes/kubelet.conf").stdout
        servers[node] = yaml.safe_load(text)["clusters"][0]["cluster"]["server"]
    started = now()
    runs = []
    for index in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="lb-drill-") as workdir:
            run = drill(core, coordination, args.blackhole_seconds, args.node, Path(workdir))
        runs.append(run)
        print(json.dumps({k: v for k, v in run.items() if k not in ("per_node", "controller_manager")}), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "command": "NODEGUARD_BENCH_NAME=nglb bench/isolated-lab.sh run .venv/bin/python bench/lb_drill.py "
                       f"--runs {args.runs} --out {args.out} --note '{args.note}'",
            "note": args.note,
            "kubelet_servers": servers,
            "started": stamp(started),
            "runs_done": index + 1,
            "runs": runs,
        }, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
