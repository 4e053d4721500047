"""Overhead of playbooks/node_outage.yml itself, in scale mode: one node with many pods in a big
cluster. The playbook runs with its own audited identity, so the apiserver's audit log holds
exactly its requests; its own time is its wall time minus the steps that wait for Kubernetes
(delete-pods, detach-volumes, verify-replacements, from the incident record it returns). The bytes it
reads and writes are counted on the wire by a pass-through on 127.0.0.1 between it and the apiserver
(ByteCounter; api_bytes_received, api_bytes_sent beside api_requests).

    .venv/bin/python bench/incident.py --nodes 1000 --pods 30000 --on-node 110 --out docs/benchmarks/raw/incident.json

--power-event measures the event-led path instead (the power-event profile's own load): the playbook
is started right at the "power-off" with node_outage_power_event_time, as the rulebook starts it, and
waits inside for its Lease proof; the result goes to --out under "power_event_runs", apart from the
heartbeat path's runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "lab" / "scale"))
sys.path.insert(0, str(REPO / "bench"))

import profiles  # noqa: E402
import scale  # noqa: E402
import yaml  # noqa: E402

SCALE_SH = REPO / "lab" / "scale" / "scale.sh"
WAIT_STEPS = ("delete-pods", "detach-volumes", "verify-replacements")
# Quick detection, so the node's proofs (NotReady, stale Lease) hold soon. On a busy 2-core
# machine 1000 nodes cannot keep 0.75s Lease renewals up: use --profile kubernetes-default there.
DEFAULT_PROFILE = "fast"


def power_off(node: str) -> None:
    """In scale mode a node is 'off' when kwok stops managing it: no more Lease or status writes."""
    scale.api().patch_node(node, {"metadata": {"labels": {scale.NODE_LABEL: None}}})


class ByteCounter:
    """A TCP pass-through on 127.0.0.1 between the playbook and the apiserver that counts the bytes each way.

    It forwards bytes as they are (the TLS session stays end to end: the apiserver's certificate names 127.0.0.1,
    whatever the port), so ``received`` is what the client really reads off the wire, compression included:
    the bytes of every answer, headers and TLS records with them. ``sent`` is what the client sends."""

    def __init__(self, upstream_port: int, host: str = "127.0.0.1"):
        self.upstream = (host, upstream_port)
        self.listener = socket.create_server((host, 0))
        self.port = self.listener.getsockname()[1]
        self.received = self.sent = self.connections = 0
        self._lock = threading.Lock()
        self._closing = False
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._closing = True
        self.listener.close()
        self._thread.join(timeout=5)

    def counts(self) -> dict:
        with self._lock:
            return {"bytes_received": self.received, "bytes_sent": self.sent, "connections": self.connections}

    def _accept(self):
        while not self._closing:
            try:
                client, _address = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self.connections += 1
            done = threading.Semaphore(0)  # both directions ended: close both ends
            threading.Thread(target=self._pump, args=(server, client, "received", done), daemon=True).start()
            threading.Thread(target=self._pump, args=(client, server, "sent", done), daemon=True).start()
            threading.Thread(target=self._close_when_done, args=(client, server, done), daemon=True).start()

    def _pump(self, source, destination, direction: str, done):
        """Copy one direction until its end closes it, then pass the half-close on (the other way may go on)."""
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                destination.sendall(chunk)
                with self._lock:
                    setattr(self, direction, getattr(self, direction) + len(chunk))
            destination.shutdown(socket.SHUT_WR)
        except OSError:  # reset: end both directions
            for end in (source, destination):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
        finally:
            done.release()

    @staticmethod
    def _close_when_done(client, server, done):
        done.acquire()
        done.acquire()
        client.close()
        server.close()


def counted_kubeconfig(kubeconfig: str, port: int) -> str:
    """A copy of ``kubeconfig`` whose clusters point at the counter's port on 127.0.0.1 (the CA stays)."""
    config = yaml.safe_load(Path(kubeconfig).read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path = Path(kubeconfig).with_name("incident-counted.kubeconfig")
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return str(path)


# Full Node list reads of one node-outage run: its first decision, the same again under the node's lock, and the
# fresh read right before the taint (plugins/module_utils/incident/node_list.py); a power reading reads none.
OUTAGE_FULL_NODE_READS = 3
MODEL_NODES = (1000, 5000)


def node_list_bytes(nodes: int) -> dict:
    """One full Node list as the apiserver sends it: plain JSON and gzip (what the incident's client asks for)."""
    core = scale.api()
    sizes = {}
    for name, encoding in (("json", "identity"), ("gzip", "gzip")):
        response = core.list_node(_preload_content=False, _headers={"Accept-Encoding": encoding})
        sizes[name] = len(response.read(decode_content=False))
    return {**sizes, "gzip_per_node": round(sizes["gzip"] / nodes, 1), "json_per_node": round(sizes["json"] / nodes, 1)}


def bytes_model(received: int, nodes: int, per_node: float, full_reads: int = OUTAGE_FULL_NODE_READS) -> dict:
    """What one incident receives at other cluster sizes: a fixed part (the target's pods, its Lease, the locks, the
    records; it grows with the pods on the node, not with the cluster) plus ``full_reads`` full Node lists of
    ``per_node`` bytes per Node, the fixed part taken from one run that received ``received`` bytes at ``nodes``.
    A model, not a measurement: the Node objects of another cluster compress differently (these carry the same
    40 images on every Node, lab/scale/scale.py)."""
    fixed = received - full_reads * per_node * nodes
    return {
        "per_node_bytes": per_node,
        "full_node_reads": full_reads,
        "fixed_bytes": round(fixed),
        **{f"at_{size}_nodes": round(fixed + full_reads * per_node * size) for size in MODEL_NODES},
    }


def wait_pods_running(node: str, count: int, timeout: float = 900) -> None:
    core = scale.api()
    deadline = time.monotonic() + timeout
    while True:
        pods = core.list_namespaced_pod(scale.NAMESPACE, field_selector=f"spec.nodeName={node}").items
        running = sum(1 for p in pods if p.status.phase == "Running")
        if running >= count or time.monotonic() > deadline:
            print(f"incident: {running}/{count} pods Running on {node}", flush=True)
            return
        time.sleep(5)


def wait_not_ready(node: str, timeout: float = 120) -> float:
    core = scale.api()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conditions = core.read_node(node).status.conditions or []
        if any(c.type == "Ready" and c.status != "True" for c in conditions):
            return time.monotonic()
        time.sleep(1)
    raise SystemExit(f"incident: {node} did not turn NotReady within {timeout:.0f}s")


def audit_events(since_line: int, path: Path | None = None):
    """The completed requests the audit log holds after line since_line."""
    with open(path or scale.STATE / "audit.log", encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if number >= since_line:
                event = json.loads(line)
                if event.get("stage") == "ResponseComplete":
                    yield event


def audit_requests(since_line: int, path: Path | None = None) -> Counter:
    """Requests of the audited identity logged after line since_line, by verb."""
    return Counter(e["verb"] for e in audit_events(since_line, path) if e.get("user", {}).get("username") == scale.AUDITED_USER)


def pod_deletes(since_line: int, path: Path | None = None) -> dict:
    """Pods deleted after line since_line, by who deleted them: {user: {"force": n, "graceful": n}}, the audited
    identity named node-outage. Only deletes the apiserver carried out count (2xx; a 404 or a refused UID
    precondition removed nothing). A force-delete asks for gracePeriodSeconds 0 (in its DeleteOptions or its query);
    a graceful one, as the taint eviction sends, only marks the pod terminating."""
    deletes: dict = {}
    for event in audit_events(since_line, path):
        reference = event.get("objectRef") or {}
        if event.get("verb") != "delete" or reference.get("resource") != "pods" or reference.get("subresource"):
            continue
        if not 200 <= (event.get("responseStatus") or {}).get("code", 0) < 300:
            continue
        options = event.get("requestObject") or {}
        force = options.get("gracePeriodSeconds") == 0 or "gracePeriodSeconds=0" in event.get("requestURI", "")
        username = event.get("user", {}).get("username", "?")
        user = deletes.setdefault("node-outage" if username == scale.AUDITED_USER else username, {"force": 0, "graceful": 0})
        user["force" if force else "graceful"] += 1
    return deletes


def audit_lines() -> int:
    path = scale.STATE / "audit.log"
    if not path.exists():
        return 0
    with path.open(encoding="utf-8") as handle:
        return sum(1 for _line in handle)


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def wait_seconds(record: dict) -> dict:
    """Duration of each waiting step in the incident record the module returned (its times are
    ISO timestamps, whole seconds)."""
    steps = record.get("steps") or {}
    waits = {}
    for step in WAIT_STEPS:
        entry = steps.get(step) or {}
        if entry.get("start") and entry.get("end"):
            waits[step] = round(_seconds(entry["end"]) - _seconds(entry["start"]), 2)
    return waits


def _stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# Scale-mode nodes have no BMC. The power-event path reads power (twice, off_confirm_seconds apart) as a
# BMC would be read: a command hook that reports Off, with the identity opt-out a hook without a UUID needs.
OFF_HOOK = "#!/bin/sh\necho '{\"power\": \"off\", \"detail\": \"scale-mode node: kwok stopped managing it\"}'\n"


def off_hook() -> str:
    path = scale.STATE / "bench-off-hook.sh"
    path.write_text(OFF_HOOK)
    path.chmod(0o755)
    return str(path)


def run_playbook(node: str, power_event_time: str | None = None, kubeconfig: str | None = None) -> tuple[float, dict, str]:
    extra = {
        "outage_nodes": [node],
        "ansible_python_interpreter": str(REPO / ".venv" / "bin" / "python"),
        # The playbooks read the connection from failover_kubeconfig (docs/runbooks/node-outage.md, Permissions).
        "failover_kubeconfig": kubeconfig or scale.audited_kubeconfig(),
        "node_outage_allow_manual_attestation": True,
        # Scale-mode nodes have no BMC (and no systemUUID): an attestation for this node and this run only.
        "node_outage_power_by_node": {node: {"type": "manual", "attestation": {
            "node": node, "state": "off", "not_before": _stamp(time.time() - 60), "expires": _stamp(time.time() + 3600),
            "operator": "bench/incident.py", "reason": "scale-mode node: kwok stopped managing it"}}},
    }
    if power_event_time:
        extra.update({
            "node_outage_power_event_time": power_event_time,
            "node_outage_proof_timeout": 120,
            "node_outage_power_by_node": {node: {"type": "command", "command": [off_hook()],
                                                 "identity_unverifiable_reason": "scale-mode node: no BMC, no systemUUID"}},
        })
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
           "PATH": f"{REPO}/.venv/bin:{os.environ['PATH']}"}
    started = time.monotonic()
    result = subprocess.run([str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,",
                             str(REPO / "playbooks" / "node_outage.yml"), "-e", json.dumps(extra)],
                            capture_output=True, text=True, cwd=REPO, env=env, check=False)
    wall = time.monotonic() - started
    record: dict = {}
    try:
        output = json.loads(result.stdout)
        for play in output.get("plays", []):
            for task in play.get("tasks", []):
                for host_result in task.get("hosts", {}).values():
                    if isinstance(host_result, dict) and "record" in host_result and host_result.get("record"):
                        record = host_result["record"]
    except json.JSONDecodeError:
        pass
    if result.returncode != 0:
        print(result.stdout[-3000:], result.stderr[-2000:], file=sys.stderr)
    return wall, record, "ok" if result.returncode == 0 else f"rc={result.returncode}"


def measure(nodes: int, pods: int, on_node: int, profile: str, power_event: bool = False) -> dict:
    victim = scale.node_names(nodes)[0]
    subprocess.run([str(SCALE_SH), "up", str(nodes), "--profile", profile], check=True)
    subprocess.run([str(SCALE_SH), "pods", str(pods), "--node", victim, "--on-node", str(on_node)], check=True)
    wait_pods_running(victim, on_node)
    # node_outage.yml keeps its lock Lease there and does not create the namespace itself.
    subprocess.run([str(scale.K8S_BIN / "kubectl"), f"--kubeconfig={scale.kubeconfig()}", "create", "namespace",
                    "nodeguard-system"], check=False)
    before = audit_lines()
    power_off(victim)
    counter = ByteCounter(scale.API_PORT)
    kubeconfig = counted_kubeconfig(scale.audited_kubeconfig(), counter.port)
    if power_event:
        # Started at once, as the rulebook starts it on the BMC's event: it waits inside for the Lease proof.
        with counter:
            wall, record, outcome = run_playbook(victim, power_event_time=_stamp(time.time()), kubeconfig=kubeconfig)
    else:
        not_ready_at = wait_not_ready(victim, timeout=180)
        proof_seconds = profiles.node_outage_default("node_outage_not_ready_seconds")
        time.sleep(max(0.0, not_ready_at + proof_seconds + 2 - time.monotonic()))
        before = audit_lines()
        with counter:
            wall, record, outcome = run_playbook(victim, kubeconfig=kubeconfig)
    wire = counter.counts()
    node_list = node_list_bytes(nodes)
    time.sleep(2)  # the audit backend writes in batches
    verbs = audit_requests(before)
    deletes = pod_deletes(before)
    waits = wait_seconds(record)
    entry = {
        "pods": on_node, "cluster_nodes": nodes, "cluster_pods": pods, "profile": profile,
        "own_seconds": round(wall - sum(waits.values()), 2) if outcome == "ok" else None,
        "api_requests": sum(verbs.values()) if outcome == "ok" else None,
        # What the playbook's API client received and sent on the wire (ByteCounter: TLS records, compression
        # included), and over how many connections.
        "api_bytes_received": wire["bytes_received"] if outcome == "ok" else None,
        "api_bytes_sent": wire["bytes_sent"] if outcome == "ok" else None,
        "api_connections": wire["connections"],
        # One full Node list as sent (plain JSON, gzip), and the bytes the model gives for larger clusters.
        "node_list_bytes": node_list,
        "bytes_model": bytes_model(wire["bytes_received"], nodes, node_list["gzip_per_node"]) if outcome == "ok" else None,
        "wall_seconds": round(wall, 2), "wait_seconds": waits, "record_steps": record.get("steps"), "requests_by_verb": dict(verbs),
        # Who removed the victim's pods: node-outage (the audited identity) or the controller manager, whose PodGC
        # force-deletes the terminating pods of an out-of-service node and can take some before node-outage does.
        "pod_deletes_by_user": deletes,
        "outcome": outcome, "load_average_1m": round(os.getloadavg()[0], 2),
        "trigger": "power-event" if power_event else "heartbeat",
    }
    print(f"incident: {json.dumps(entry)}", flush=True)
    return entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=30000)
    parser.add_argument("--on-node", type=int, default=110)
    parser.add_argument("--profile", default=DEFAULT_PROFILE)
    parser.add_argument("--power-event", action="store_true", help="the event-led path (node_outage_power_event_time)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    current = json.loads(args.out.read_text()) if args.out.exists() else {}
    try:
        entry = measure(args.nodes, args.pods, args.on_node, args.profile, power_event=args.power_event)
    finally:
        subprocess.run([str(SCALE_SH), "down"], check=False)
    if args.power_event:
        events = [r for r in current.get("power_event_runs", []) if (r["cluster_nodes"], r["cluster_pods"], r["pods"]) !=
                  (args.nodes, args.pods, args.on_node)] + [entry]
        args.out.write_text(json.dumps({**current, "power_event_runs": events}, indent=1) + "\n")
        return 0
    runs = current.get("runs", [])
    runs = [r for r in runs if (r["cluster_nodes"], r["cluster_pods"], r["pods"]) !=
            (args.nodes, args.pods, args.on_node)] + [entry]
    # The headline entry is the largest cluster measured; all runs stay for the comparison.
    headline = max(runs, key=lambda r: (r["cluster_nodes"], r["pods"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    power_event_runs = {"power_event_runs": current["power_event_runs"]} if current.get("power_event_runs") else {}
    args.out.write_text(json.dumps({**headline, "runs": runs, **power_event_runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
