"""The phase breakdown of one remediated run, kept whole (issue 23 item 2): what node-outage printed (its plan,
every proof's whole message, its outcome) and when each of its steps ran, in seconds after the power-off.

node-outage prints its plan and outcome with the repository's YAML callback (ansible.cfg), as in:

    TASK [nodeguard.failover.node_outage : Show the plan | ng-worker1] ***
    ok: [localhost] =>
        msg:
        - 'timing: not_ready_seconds=60 (stock), ...'
        - 'prove | done | lease-silent: OK (...); power-off: OK (...)'

A message can span several lines; the YAML block is parsed, so every message is kept whole (the benchmark
used to keep only the first line of the proofs).
"""

from __future__ import annotations

import re
from datetime import datetime

import yaml

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# The two tasks of the node_outage role whose messages a run keeps.
PLAN_TASK, OUTCOME_TASK = "Show the plan", "Show the outcome"


def task_messages(output: str, task: str) -> list[str]:
    """The msg list of the last run of `task` in an ansible-playbook (or ansible-rulebook) output; [] if absent."""
    lines = ANSI.sub("", output).splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("TASK [") and f": {task}" in line]
    if not starts:
        return []
    block = []
    for line in lines[starts[-1] + 2 :]:  # the TASK line, then "ok: [localhost] =>"
        if not line.startswith("    "):
            break
        block.append(line[4:])
    try:
        parsed = yaml.safe_load("\n".join(block)) or {}
    except yaml.YAMLError:
        return []
    messages = parsed.get("msg") if isinstance(parsed, dict) else None
    if isinstance(messages, str):
        return [messages]
    return [str(m) for m in messages] if isinstance(messages, list) else []


def proofs(plan: list[str]) -> list[str]:
    """The plan's proof line(s), whole: `prove | done | lease-silent: OK (...); power-off: OK (...)`."""
    return [line for line in plan if line.startswith("prove |")]


def _seconds_after(stamp: str, zero: datetime) -> float:
    """An RFC 3339 time node-outage wrote (Z or an offset), as seconds after `zero`."""
    return (datetime.fromisoformat(stamp.replace("Z", "+00:00")) - zero).total_seconds()


def step_seconds(steps: dict | None, power_off_at: str | None) -> dict:
    """The incident record's steps (wall-clock start/end, whole seconds, written by node-outage) as seconds after
    the power-off (the benchmark's wall clock at its power-off; the lab's containers share the host's clock). Only
    for reporting the phases: nothing is decided from this difference."""
    if not steps or not power_off_at:
        return {}
    zero = datetime.fromisoformat(power_off_at)
    out = {}
    for name, step in steps.items():
        entry = {"outcome": step.get("outcome")}
        for edge in ("start", "end"):
            stamp = step.get(edge)
            if stamp:
                entry[f"{edge}_s"] = round(_seconds_after(stamp, zero), 1)
        out[name] = entry
    return out


def reading_seconds(readings: list | None, power_off_at: str | None) -> list[dict]:
    """The incident record's proof-phase readings (node-outage's `readings`: each power reading, the moment each proof
    first held) as seconds after the power-off, for reporting only, like step_seconds."""
    if not readings or not power_off_at:
        return []
    zero = datetime.fromisoformat(power_off_at)
    return [{"at_s": round(_seconds_after(r["time"], zero), 2),
             "reading": r.get("reading"), "result": r.get("result", "")}
            for r in readings if r.get("time")]


def first_check_s(run: dict) -> float | None:
    """When node-outage's first proof check read the Lease and the BMC (its earliest reading), seconds after the
    power-off; None for a record without readings."""
    return min((r["at_s"] for r in run.get("readings_s") or []), default=None)


def proof_moments(readings_s: list[dict]) -> dict:
    """When each proof first held ({proof name: seconds}) and when power read Off (`off_readings`: seconds), from
    reading_seconds' list."""
    held = {}
    for r in readings_s:
        if r["reading"] != "power" and r["result"].startswith("holds") and r["reading"] not in held:
            held[r["reading"]] = r["at_s"]
    return {**held, "off_readings": [r["at_s"] for r in readings_s if r["reading"] == "power" and r["result"].startswith("OFF")]}


def breakdown(run: dict) -> dict:
    """One run's phases in order, seconds after the power-off (None: not seen): the trigger's event (the BMC's
    Off event, or NotReady for a heartbeat trigger), the rulebook's start-up (seconds it took, before the
    power-off), node-outage's start, its first proof check, the moment each proof held and the Off readings, the proof step, the taint, the
    deletes, the detach, the replacement Ready."""
    milestones = run.get("milestones", {})
    steps = run.get("steps_s") or {}
    event = milestones.get("event_received", milestones.get("not_ready"))
    return {
        "event_s": event,
        "rulebook_startup_s": run.get("rulebook_startup_seconds"),
        "run_start_s": milestones.get("playbook_started", (run.get("playbook_attempts") or [{}])[0].get("started_s")),
        "first_check_s": first_check_s(run),
        "proofs_held_s": proof_moments(run.get("readings_s") or []),
        "prove_end_s": steps.get("prove", {}).get("end_s"),
        "proofs": run.get("proofs_whole") or [],
        "taint_s": milestones.get("out_of_service_taint"),
        "deletes_s": steps.get("delete-pods", {}).get("end_s"),
        "detach_s": steps.get("detach-volumes", {}).get("end_s"),
        "replacement_ready_s": milestones.get("statefulset_replaced"),
    }
