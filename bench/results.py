"""Turn the raw measurements (docs/benchmarks/raw/*.json) into docs/benchmarks/results.json.

results.json (issue 5): kubernetes_version, machine, date,
  timelines: [{profile, trigger, metric, median_s, p50_s, p95_s, min_s, max_s, runs[, note][, kubelet]}] (kubelet
    "real": the row of the runs whose victim ran the real kubelet, never mixed with the stand-in row of the same
    profile; trigger: what started node-outage in the row's runs, see TRIGGERS; p50/p95: nearest rank over every
    run, a run that never reached the milestone counting as later than all others, see spread),
  cost: [{profile, nodes, seconds, write_rps, write_bytes_per_s, etcd_db_growth_bytes_per_min,
          achieved_heartbeat_rps, requested_heartbeat_rps, status_reports_per_node, saturated[, same_settings_as]}],
  incident: {pods, cluster_nodes, cluster_pods, own_seconds, api_requests},
  dead_connections: [{setting, metric, sysctls, predicted_s, median_s, min_s, max_s, difference_pct, runs,
                      errors[, note]}] (bench/deadconn.py: the model's prediction next to the kernel's time).
Only measured numbers go in; a milestone never reached within its cap is null with a note.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from pathlib import Path

import jsonschema

METRICS = ("not_ready", "unreachable_taint", "endpoint_removed", "deployment_replaced", "statefulset_replaced_unremediated", "statefulset_replaced")
# Which kind of run a metric is taken from (see bench/timeline.py).
FROM_UNREMEDIATED = {"deployment_replaced", "statefulset_replaced_unremediated"}
FROM_REMEDIATED = {"statefulset_replaced"}
# Rulebook-led runs (a shipped rulebook started node-outage): every metric but the unremediated one comes from
# them, and a run whose failover never came counts as "not reached".
FROM_RULEBOOK_LED = set(METRICS) - {"statefulset_replaced_unremediated"}

# What started node-outage in a run (results.json's `trigger`): the shipped rulebook by its file name, the
# benchmark's own watch at NotReady (bench-watch, a comparison row), or nothing (none: Kubernetes alone).
POWER_EVENTS, NODE_WATCH, BENCH_WATCH, NO_REMEDIATION = "power-events.yml", "node-watch.yml", "bench-watch", "none"
RULEBOOK_TRIGGERS = (POWER_EVENTS, NODE_WATCH)
TRIGGERS = (NO_REMEDIATION, NODE_WATCH, POWER_EVENTS, BENCH_WATCH)  # also the order of a profile's rows

# Which kubelet the victim of a run ran (bench/timeline.py records it as victim_kubelet); runs from before
# the real-kubelet worker existed have no such field: their victims were stand-ins.
REAL_KUBELET, STAND_IN = "real", "stand-in"

_NUMBER_OR_NULL = {"type": ["number", "null"]}
SCHEMA = {
    "type": "object",
    "required": ["kubernetes_version", "machine", "date", "timelines", "cost", "incident"],
    "properties": {
        "kubernetes_version": {"type": "string"},
        "machine": {"type": "object"},
        "date": {"type": "string"},
        "timelines": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["profile", "trigger", "metric", "median_s", "p50_s", "p95_s", "min_s", "max_s", "runs"],
                "properties": {
                    "profile": {"type": "string"},
                    "metric": {"enum": list(METRICS)},
                    "trigger": {"enum": list(TRIGGERS)},
                    "median_s": _NUMBER_OR_NULL,
                    "p50_s": _NUMBER_OR_NULL,
                    "p95_s": _NUMBER_OR_NULL,
                    "min_s": _NUMBER_OR_NULL,
                    "max_s": _NUMBER_OR_NULL,
                    "runs": {"type": "integer", "minimum": 0},
                    "note": {"type": "string"},
                    "kubelet": {"const": REAL_KUBELET},
                },
                "additionalProperties": False,
            },
        },
        "cost": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["profile", "nodes", "write_rps", "write_bytes_per_s"],
                "properties": {
                    "profile": {"type": "string"},
                    "nodes": {"type": "integer", "minimum": 1},
                    "write_rps": {"type": "number"},
                    "write_bytes_per_s": {"type": "number"},
                    "etcd_db_growth_bytes_per_min": {"type": "number"},
                    "seconds": {"type": "number"},
                    "achieved_heartbeat_rps": {"type": "number"},
                    "requested_heartbeat_rps": {"type": "number"},
                    "status_reports_per_node": {"type": "number"},
                    "saturated": {"type": "array", "items": {"type": "string"}},
                    "same_settings_as": {"type": "string"},
                },
                "additionalProperties": False,
            },
        },
        "incident": {
            "type": "object",
            "required": ["pods", "cluster_nodes", "cluster_pods", "own_seconds", "api_requests"],
            "properties": {
                "pods": {"type": "integer"},
                "cluster_nodes": {"type": "integer"},
                "cluster_pods": {"type": "integer"},
                "own_seconds": _NUMBER_OR_NULL,
                "api_requests": {"type": ["integer", "null"]},
                "note": {"type": "string"},
            },
            "additionalProperties": False,
        },
        "dead_connections": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["setting", "metric", "sysctls", "predicted_s", "median_s", "min_s", "max_s", "difference_pct", "runs", "errors"],
                "properties": {
                    "setting": {"type": "string"},
                    "metric": {"enum": ["dead_connection_data", "dead_connection_idle"]},
                    "sysctls": {"type": "object"},
                    "predicted_s": {"type": "number"},
                    "median_s": _NUMBER_OR_NULL,
                    "min_s": _NUMBER_OR_NULL,
                    "max_s": _NUMBER_OR_NULL,
                    "difference_pct": _NUMBER_OR_NULL,
                    "runs": {"type": "integer", "minimum": 0},
                    "errors": {"type": "array", "items": {"type": "string"}},
                    "note": {"type": "string"},
                },
                "additionalProperties": False,
            },
        },
    },
}


def percentile(observed: list[float], percent: float) -> float:
    """The nearest-rank percentile: the smallest observed value with at least `percent` % of the values at or below
    it, i.e. the value of rank ceil(percent/100 * n) in ascending order. Always an observed value, never interpolated.
    For small n it is the top of the sample: p95 of 1 to 19 runs is the maximum, of 20 runs the 19th smallest; p50 of
    an even n is the lower of the two middle values (the median averages them)."""
    if not observed:
        raise ValueError("percentile of no values")
    if not 0 < percent <= 100:
        raise ValueError(f"percent must be in (0, 100], not {percent}")
    ordered = sorted(observed)
    return ordered[math.ceil(percent / 100 * len(ordered)) - 1]


def spread(samples: list[float | None]) -> dict:
    """Median, min and max of the observed values (None = not observed within the cap), and p50 and p95 (nearest
    rank) of every run: a run that never reached the milestone is later than every other, so a percentile whose rank
    falls on one is None (not reached), never the value of a faster run."""
    observed = [s for s in samples if s is not None]
    if not observed:
        return {"median_s": None, "p50_s": None, "p95_s": None, "min_s": None, "max_s": None}

    every_run = [math.inf if s is None else s for s in samples]

    def of_every_run(percent: float) -> float | None:
        value = percentile(every_run, percent)
        return None if value == math.inf else round(value, 2)

    return {
        "median_s": round(statistics.median(observed), 2),
        "p50_s": of_every_run(50),
        "p95_s": of_every_run(95),
        "min_s": round(min(observed), 2),
        "max_s": round(max(observed), 2),
    }


def run_trigger(run: dict) -> str:
    """What started node-outage in a run. Runs recorded before `trigger` named the rulebook file: "power-event" is
    power-events.yml; a remediated run without a trigger was started by the benchmark's own watch."""
    trigger = run.get("trigger")
    if trigger == "power-event":
        return POWER_EVENTS
    if trigger:
        return trigger
    return BENCH_WATCH if run["remediated"] else NO_REMEDIATION


def rulebook_led(run: dict) -> bool:
    return run_trigger(run) in RULEBOOK_TRIGGERS


def remediation_failed(run: dict) -> bool:
    """A bench-watch run whose node_outage.yml never succeeded measures the playbook, not failover.
    (A rulebook-led run is never left out: its chain starting nothing is what it measures.)"""
    attempts = run.get("playbook_attempts") or []
    return run["remediated"] and not rulebook_led(run) and not any(a["rc"] == 0 for a in attempts) and run["milestones"].get("statefulset_replaced") is None


def _counts(run: dict, metric: str) -> bool:
    if run.get("disturbed"):
        return False
    if rulebook_led(run):
        return metric in FROM_RULEBOOK_LED
    if metric in FROM_REMEDIATED and remediation_failed(run):
        return False
    if metric in FROM_UNREMEDIATED:
        return not run["remediated"]
    if metric in FROM_REMEDIATED:
        return run["remediated"]
    return True


def counted_runs(runs: list[dict], metric: str) -> list[dict]:
    """The runs a row's `metric` is computed from (a disturbed run never counts; see _counts)."""
    return [r for r in runs if _counts(r, metric)]


def victim_kubelet(run: dict) -> str:
    return run.get("victim_kubelet", STAND_IN)


def entry_kubelet(entry: dict) -> str:
    """A results.json timeline row's kubelet: the stand-in rows carry no field (issue 5's format)."""
    return entry.get("kubelet", STAND_IN)


def timeline_entries(runs: list[dict], profile_order: list[str]) -> list[dict]:
    """One row per profile and metric from the stand-in runs, then the same from the real-kubelet runs."""
    entries = []
    for kubelet in (STAND_IN, REAL_KUBELET):
        mine = [r for r in runs if victim_kubelet(r) == kubelet]
        rows = _profile_entries(mine, profile_order)
        entries.extend(rows if kubelet == STAND_IN else [{**row, "kubelet": kubelet} for row in rows])
    return entries


def _profile_entries(runs: list[dict], profile_order: list[str]) -> list[dict]:
    """Per profile, one row per trigger and metric, from the runs of that trigger only."""
    entries = []
    for profile in profile_order:
        for trigger in TRIGGERS:
            mine = [r for r in runs if r["profile"] == profile and run_trigger(r) == trigger]
            entries.extend(_trigger_entries(mine, profile, trigger))
    return entries


def _trigger_entries(mine: list[dict], profile: str, trigger: str) -> list[dict]:
    entries = []
    for metric in METRICS:
        used = counted_runs(mine, metric)
        failed = [r for r in mine if metric in FROM_REMEDIATED and remediation_failed(r)]
        if not used and not failed:
            continue
        samples = [r["milestones"].get(metric) for r in used]
        entry = {"profile": profile, "trigger": trigger, "metric": metric, **spread(samples), "runs": len(used)}
        missing = [r for r, s in zip(used, samples, strict=True) if s is None]
        if missing:
            caps = sorted({int(r["cap_s"]) for r in missing})
            cap = f"{caps[0]}s" if len(caps) == 1 else f"{caps[0]}-{caps[-1]}s"
            what = "never happened" if len(missing) == len(used) else f"not reached in {len(missing)} of {len(used)} runs"
            entry["note"] = f"{what} within the cap of {cap} after power-off"
        if failed:
            note = f"{len(failed)} run(s) left out: node_outage.yml never succeeded in them (see raw/timelines.json)"
            entry["note"] = f"{entry['note']}; {note}" if "note" in entry else note
        entries.append(entry)
    return entries


COST_FIELDS = ("profile", "nodes", "seconds", "write_rps", "write_bytes_per_s", "etcd_db_growth_bytes_per_min",
               "achieved_heartbeat_rps", "requested_heartbeat_rps", "status_reports_per_node", "saturated",
               "same_settings_as")


def cost_entries(raw: list[dict]) -> list[dict]:
    """The issue's fields (and etcd growth, which it also asks for) of every measured window, with what its
    heartbeats got against what they asked for and whether it saturated the lab."""
    return [{key: r[key] for key in COST_FIELDS if key in r} for r in raw if not r.get("refused")]


def machine() -> dict:
    memory_kib = 0
    with open("/proc/meminfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                memory_kib = int(line.split()[1])
    cpu_model = ""
    with open("/proc/cpuinfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_gib": round(memory_kib / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "shared": "CPU shared with other jobs; per-measurement load averages are in raw/*.json",
    }


def timeline_runs(raw_dir: Path) -> list[dict]:
    """Every run of raw/timelines*.json (bench/run.sh writes one file per private lab)."""
    runs = []
    for path in sorted(raw_dir.glob("timelines*.json")):
        runs.extend(json.loads(path.read_text()))
    return runs


def build(raw_dir: Path, profile_order: list[str], kubernetes_version: str) -> dict:
    def load(name: str, default):
        path = raw_dir / name
        return json.loads(path.read_text()) if path.exists() else default

    incident_raw = load("incident.json", None)
    if incident_raw:
        incident = {key: incident_raw[key] for key in ("pods", "cluster_nodes", "cluster_pods", "own_seconds", "api_requests")}
        if incident_raw.get("note"):
            incident["note"] = incident_raw["note"]
    else:
        incident = {"pods": 110, "cluster_nodes": 1000, "cluster_pods": 30000, "own_seconds": None, "api_requests": None, "note": "not measured"}
    results = {
        "kubernetes_version": kubernetes_version,
        "machine": machine(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "timelines": timeline_entries(timeline_runs(raw_dir), profile_order),
        "cost": cost_entries(load("cost.json", [])),
        "incident": incident,
    }
    dead_connections = load("dead-connections.json", None)
    if dead_connections:
        results["dead_connections"] = dead_connections["summary"]
    jsonschema.validate(results, SCHEMA)
    return results
