"""Control-plane cost of each profile in scale mode (lab/scale): write requests/s, write bytes/s
and etcd growth, measured from /metrics over a bounded window at each node count.

    .venv/bin/python bench/cost.py --nodes 100 1000 --window 300 --out docs/benchmarks/raw/cost.json

Each window is recorded with what the heartbeats got beside what the profile asked for, how many full
status reports per node it held, and whether the profile saturated the lab (SATURATED_BELOW).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "lab" / "scale"))
sys.path.insert(0, str(REPO / "bench"))

import metrics  # noqa: E402
import profiles  # noqa: E402
import scale  # noqa: E402
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError  # noqa: E402  (path set by profiles)

SCALE_SH = REPO / "lab" / "scale" / "scale.sh"
# Wait after a switch before measuring: status reports and lease renewals reach their steady
# rhythm, and the controller manager has looked at every node a few times.
SETTLE_SECONDS = 15
# The default window: the kubelet's stock nodeStatusReportFrequency (5 min), so that a window holds each node's
# periodic full status report, not only its Lease renewals.
FULL_WINDOW_SECONDS = 300
# A window in which the heartbeats got less than this share of what the profile asked for (the lab's kwok stages
# add up to 4 % jitter, about 2 % fewer writes on average), or that ends with a node NotReady, saturated the lab:
# its numbers are what this control plane could take, not what the profile costs.
SATURATED_BELOW = 0.9


def requested_heartbeat_rps(profile: str, nodes: int) -> float:
    """What the profile asks the kubelets to write: lease renewals plus full Node status reports."""
    kubelet = scale.kubelet_settings(profiles.profile_settings(profile, node_count=nodes))
    return nodes / kubelet.lease_renew_seconds + nodes / kubelet.status_report_seconds


STATUS_WRITES = ("PATCH nodes/status", "PUT nodes/status")


def heartbeat_writes(window: dict) -> int:
    per = window["writes_per_resource"]
    return sum(v for k, v in per.items() if k == "PUT leases" or k in STATUS_WRITES)


def status_reports_per_node(window: dict, nodes: int) -> float:
    """Node status writes in the window per node: at least about 1 when the window held the periodic full reports."""
    per = window["writes_per_resource"]
    return round(sum(v for k, v in per.items() if k in STATUS_WRITES) / nodes, 2)


def saturation(result: dict) -> list[str]:
    """Why this window saturated the lab, in words; empty when it did not."""
    reasons = []
    asked, got = result["requested_heartbeat_rps"], result["achieved_heartbeat_rps"]
    if asked and got < SATURATED_BELOW * asked:
        reasons.append(f"heartbeats got {got:g} of {asked:g} writes/s asked ({got / asked:.0%})")
    if result["not_ready_nodes_at_end"]:
        reasons.append(f"{result['not_ready_nodes_at_end']} node(s) NotReady at the end")
    return reasons


def not_ready_nodes() -> int:
    core = scale.api()
    nodes = core.list_node(label_selector=f"{scale.NODE_LABEL}=true").items
    return sum(1 for n in nodes for c in (n.status.conditions or []) if c.type == "Ready" and c.status != "True")


def refusal(profile: str, nodes: int) -> str | None:
    """The model's reason to refuse this profile at this node count (aggressive at 1000 nodes
    breaks the heartbeat budget), or None. A refused profile is recorded, not measured."""
    try:
        profiles.profile_settings(profile, node_count=nodes)
    except ProfileError as error:
        return str(error)
    return None


def measure(profile: str, nodes: int, window_seconds: float) -> dict:
    subprocess.run([str(SCALE_SH), "profile", profile], check=True)
    time.sleep(SETTLE_SECONDS)
    kubectl = str(scale.K8S_BIN / "kubectl")
    load_before = os.getloadavg()[0]
    before = metrics.scrape(kubectl, scale.kubeconfig(), scale.ETCD_METRICS + "/metrics")
    started = time.monotonic()
    time.sleep(window_seconds)
    after = metrics.scrape(kubectl, scale.kubeconfig(), scale.ETCD_METRICS + "/metrics")
    elapsed = time.monotonic() - started
    result = metrics.window(before, after, elapsed)
    requested = requested_heartbeat_rps(profile, nodes)
    result.update({
        "profile": profile,
        "nodes": nodes,
        "requested_heartbeat_rps": round(requested, 2),
        "achieved_heartbeat_rps": round(heartbeat_writes(result) / elapsed, 2),
        "status_reports_per_node": status_reports_per_node(result, nodes),
        "not_ready_nodes_at_end": not_ready_nodes(),
        "load_average_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    })
    result["saturated"] = saturation(result)
    print(f"cost: {profile} at {nodes} nodes: {result['write_rps']} writes/s "
          f"(heartbeats {result['achieved_heartbeat_rps']}/s of {result['requested_heartbeat_rps']}/s requested), "
          f"{result['write_bytes_per_s']} B/s, etcd +{result['etcd_db_growth_bytes_per_min']} B/min, "
          f"load {result['load_average_1m']}"
          + (f"; SATURATED: {'; '.join(result['saturated'])}" if result["saturated"] else ""), flush=True)
    return result


def same_settings_key(profile: str, nodes: int) -> str:
    """Profiles with equal settings cost the same (power-event runs with kubernetes-default's heartbeats)."""
    return json.dumps(profiles.profile_settings(profile, node_count=nodes), sort_keys=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--profiles", nargs="+", default=list(profiles.ALL_PROFILES))
    parser.add_argument("--window", type=float, default=FULL_WINDOW_SECONDS,
                        help=f"seconds per window (default {FULL_WINDOW_SECONDS}: holds the 5-minute full status reports)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    results = json.loads(args.out.read_text()) if args.out.exists() else []
    try:
        for nodes in args.nodes:
            subprocess.run([str(SCALE_SH), "up", str(nodes), "--profile", args.profiles[0]], check=True)
            measured: dict[str, dict] = {}  # same_settings_key -> this node count's window with those settings
            for profile in args.profiles:
                reason = refusal(profile, nodes)
                key = None if reason else same_settings_key(profile, nodes)
                if reason:
                    print(f"cost: {profile} at {nodes} nodes: not measured, the model refuses it: {reason}", flush=True)
                    entry = {"profile": profile, "nodes": nodes, "refused": reason}
                elif key in measured:
                    twin = measured[key]
                    print(f"cost: {profile} at {nodes} nodes: the same settings as {twin['profile']}, its window", flush=True)
                    entry = {**twin, "profile": profile, "same_settings_as": twin["profile"]}
                else:
                    entry = measured[key] = measure(profile, nodes, args.window)
                results = [r for r in results if (r["profile"], r["nodes"]) != (profile, nodes)] + [entry]
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(results, indent=1) + "\n")
            subprocess.run([str(SCALE_SH), "down"], check=True)
    finally:
        subprocess.run([str(SCALE_SH), "down"], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
