"""Write docs/benchmarks/results.json, the plots and docs/benchmarks/README.md from the raw
measurements in docs/benchmarks/raw/ (with --summary, also the summary section of docs/benchmarks/summary.md).

    .venv/bin/python bench/report.py --out docs/benchmarks

The page's tables are generated; the hand-written analysis between the FINDINGS markers of an
existing README.md is kept as it is.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import deadconn  # noqa: E402
import phases  # noqa: E402
import plots  # noqa: E402
import profiles  # noqa: E402
import results as results_module  # noqa: E402
import run_record  # noqa: E402

FINDINGS_START = "<!-- findings:start -->"
FINDINGS_END = "<!-- findings:end -->"


def _s(value) -> str:
    return "—" if value is None else f"{value:g}"


def trigger_rank(entry: dict) -> int:
    """Which row stands for a profile's metric when several triggers measured it: a shipped rulebook's first, then
    Kubernetes alone, the benchmark's own watch (bench-watch) last. Rows from before `trigger` rank as Kubernetes alone."""
    trigger = entry.get("trigger", results_module.NO_REMEDIATION)
    return 0 if trigger in results_module.RULEBOOK_TRIGGERS else 2 if trigger == results_module.BENCH_WATCH else 1


def timeline_lookup(results: dict, kubelet: str = results_module.STAND_IN) -> dict:
    """{(profile, metric): row} of one kind of victim (the stand-in rows unless asked otherwise); of several triggers'
    rows, the one trigger_rank puts first."""
    rows = sorted((e for e in results["timelines"] if results_module.entry_kubelet(e) == kubelet), key=trigger_rank)
    lookup: dict = {}
    for entry in rows:
        lookup.setdefault((entry["profile"], entry["metric"]), entry)
    return dict(sorted(lookup.items(), key=lambda item: rows.index(item[1])))


def timeline_cell(entry: dict | None) -> str:
    if entry is None:
        return "not measured"
    if entry["median_s"] is None:
        return f"never (n={entry['runs']})" if entry["runs"] else "not measured (see note)"
    p95 = f"p95 {_s(entry['p95_s'])}, " if entry.get("p95_s") is not None else ("p95 not reached, " if "p95_s" in entry else "")
    return f"{_s(entry['median_s'])} ({p95}{_s(entry['min_s'])}-{_s(entry['max_s'])}, n={entry['runs']})"


def timeline_columns(results: dict, kubelet: str = results_module.STAND_IN) -> dict:
    """{(profile, trigger): {metric: row}} in results.json's order: a column per profile and trigger."""
    columns: dict = {}
    for e in results["timelines"]:
        if results_module.entry_kubelet(e) == kubelet:
            key = (e["profile"], e.get("trigger", results_module.NO_REMEDIATION))
            columns.setdefault(key, {})[e["metric"]] = e
    return columns


def column_label(profile: str, trigger: str) -> str:
    return profile if trigger == results_module.NO_REMEDIATION else f"{profile} · {trigger}"


def timeline_table(results: dict) -> list[str]:
    """The stand-in rows, a column per profile and trigger (the real-kubelet rows have their own section)."""
    columns = timeline_columns(results)
    labels = [column_label(*key) for key in columns]
    lines = ["| metric | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for metric in results_module.METRICS:
        cells = [timeline_cell(rows.get(metric)) for rows in columns.values()]
        lines.append(f"| `{metric}` | " + " | ".join(cells) + " |")
    return lines


def _window_cell(window: dict) -> str:
    return f"{_s(window['expected'])} ({_s(window['min'])}-{_s(window['max'])})"


def measured_trigger(entry: dict) -> str:
    """What started node-outage in the measured runs: the row's own `trigger` when results.json has one, else the
    power-event chain's rulebook or, for the heartbeat rows, the benchmark's own watch at NotReady."""
    if entry.get("trigger"):
        return entry["trigger"]
    return "power-events.yml" if entry["profile"] in profiles.EVENT_LED_PROFILES else "bench-watch"


def remediated_prediction_lines(results: dict, order: str, predict=None, runs: list[dict] | tuple = ()) -> list[str]:
    """Every measured remediated row (`statefulset_replaced`, the stand-in victim) next to the model's prediction
    (plugins/module_utils/model/remediated.py) for the code that measured it (`order`, profiles.measured_proof_order),
    with the difference, the difference of each run from its own start (run_differences) and what the taint
    follows. Rows measured with the proofs in order (commit 75c96f0) also show the prediction for node-outage today."""
    predict = predict or profiles.remediated_prediction
    lookup = timeline_lookup(results)
    in_order = order == profiles.IN_ORDER
    lines = [
        "| row | started by (measured) | model trigger | NotReady wait | "
        + ("predicted, proofs in order (75c96f0): expected (min-max)" if in_order else "predicted: expected (min-max)")
        + " | measured: median (p95, min-max, n) | measured minus predicted | "
        + "each run from its own NotReady and first check: measured minus predicted, median (min-max, n) | "
        + ("predicted, node-outage today (proofs overlapped) | " if in_order else "")
        + "the taint follows (model) |",
        "|---|---|---|---|---|---|---|---|" + ("---|" if in_order else "") + "---|",
    ]
    for profile in dict.fromkeys(p for p, m in lookup):
        entry = lookup.get((profile, "statefulset_replaced"))
        if entry is None or entry["median_s"] is None:
            continue
        prediction = predict(profile)
        measured_code, today = prediction[order], prediction[profiles.OVERLAPPED]
        wait = "—" if today["not_ready_seconds"] is None else f"{today['not_ready_seconds']} s"
        delta = round(entry["median_s"] - measured_code["statefulset_replaced"]["expected"], 2)
        lines.append(
            f"| {profile} | {measured_trigger(entry)} | {today['trigger']} | {wait} "
            f"| {_window_cell(measured_code['statefulset_replaced'])} | {timeline_cell(entry)} | {delta:+g} s "
            f"| {_differences_cell(run_differences(runs, profile, measured_trigger(entry), order, predict))} "
            + (f"| {_window_cell(today['statefulset_replaced'])} " if in_order else "")
            + f"| {today['binds']} |"
        )
    return lines


def row_runs(runs, profile: str, trigger: str) -> list[dict]:
    """The runs a stand-in row of `statefulset_replaced` is computed from (results.counted_runs: the profile's runs
    with that trigger, a disturbed run left out)."""
    return results_module.counted_runs(
        [r for r in runs if r["profile"] == profile and results_module.run_trigger(r) == trigger
         and results_module.victim_kubelet(r) == results_module.STAND_IN], "statefulset_replaced")


def run_differences(runs, profile: str, trigger: str, order: str, predict) -> list[float]:
    """Each run's StatefulSet pod Ready minus the model's prediction from that run's own moments: its first proof
    check (phases.first_check_s) and, on a heartbeat trigger, its NotReady. The model's start-up constants are a quiet
    machine's; this sets the proofs' order and waits against each run however long its start-up took. A run without
    readings (before the proofs were recorded) or never Ready is left out."""
    differences = []
    for run in row_runs(runs, profile, trigger):
        first, ready = phases.first_check_s(run), run["milestones"].get("statefulset_replaced")
        if first is None or ready is None:
            continue
        observed = {"first_check": first}
        if profile not in profiles.EVENT_LED_PROFILES:
            observed["not_ready"] = run["milestones"]["not_ready"]
        predicted = predict(profile, observed=observed)[order]["statefulset_replaced"]["expected"]
        differences.append(round(ready - predicted, 2))
    return differences


def _differences_cell(differences: list[float]) -> str:
    if not differences:
        return "—"
    return f"{statistics.median(differences):+.2f} s ({min(differences):+g} to {max(differences):+g}, n={len(differences)})"


# What the prediction section says about the code that measured the rows, per proof order.
MEASURED_CODE = {
    profiles.IN_ORDER: (
        "The measured rows predate node-outage's current proofs: they ran commit 75c96f0, where on the heartbeat rows "
        "the two BMC Off readings 5 s apart followed the NotReady wait and the Lease proofs read the kubelet's "
        "renewTime. `predicted, proofs in order` models that code, so the difference checks the model against what was "
        "measured. `predicted, node-outage today` models the code now (not measured yet): its first check starts a "
        "Lease watch on the run's own clock (a quarter of leaseDurationSeconds plus lease_margin_seconds, 3 s on the "
        "power-event path) and takes the first Off reading; the taint follows the latest of the NotReady wait, the "
        "watch and the first reading + 5 s. On the power-event row the watch now binds (it starts at the run, not at "
        "the last renewal before the power-off), so today's prediction is later than the measured one. The heartbeat "
        "rows were started by the benchmark's own watch at NotReady (`bench-watch`), not by a rulebook; their NotReady "
        "wait is longer than any start-up, so the difference does not show in these numbers."
    ),
    profiles.OVERLAPPED: (
        "The measured rows ran node-outage's current proofs: its first check starts a Lease watch on the run's own "
        "clock (a quarter of leaseDurationSeconds plus lease_margin_seconds, 3 s on the power-event path) and takes the "
        "first BMC Off reading; the second reading follows at least 5 s later, and the taint follows the latest of the "
        "NotReady wait, the watch and the first reading + 5 s, never their sum. The prediction models that code, so the "
        "difference checks the model against what was measured; `the taint follows` names the wait that binds. The "
        "model's start-up (the event or NotReady to the run's first check) is a quiet machine's; on a busy one it takes "
        "longer, and the power-event row, whose Lease watch starts at that check, moves with it. So the next column "
        "predicts each run from its own NotReady and first check (model/remediated.py, `observed`): it checks the "
        "proofs' order and waits however long the start-up took."
    ),
}


def remediated_prediction_section(results: dict, order: str, predict=None, runs: list[dict] | tuple = ()) -> list[str]:
    table = remediated_prediction_lines(results, order, predict, runs)
    if len(table) == 2:
        return []
    return [
        "## Remediated rows: the model's prediction against the measurement",
        "",
        "Seconds after power-off to the StatefulSet's pod Ready elsewhere (`statefulset_replaced`). The prediction is "
        "plugins/module_utils/model/remediated.py, explained in [docs/settings.md](../settings.md#remediated-timelines). "
        + MEASURED_CODE[order]
        + " The presets are applied with tune-failover (wait: their `remediation.not_ready_seconds`); "
        "kubernetes-default and seed-001 are never tuned (node-outage's stock 60 s). The model's start-up, taint and "
        "replacement constants are this lab's own medians (stand-in workers, instant attacher), so the agreement checks "
        "the order and sum of the waits, not those constants.",
        "",
        *table,
        "",
        *alert_prediction_lines(predict),
    ]


def alert_prediction_lines(predict=None) -> list[str]:
    """The shipped alert path (not measured): the model's figure for the heartbeat presets users follow."""
    predict = predict or profiles.remediated_prediction
    cells = []
    for profile in ("fast", "kubernetes-default"):
        prediction = predict(profile, "alert")
        today = prediction[profiles.OVERLAPPED]
        cells.append(
            f"{profile} {_window_cell(today['statefulset_replaced'])} s ({today['binds']} binds; "
            f"{_s(prediction[profiles.IN_ORDER]['statefulset_replaced']['expected'])} s with the proofs in order)"
        )
    return [
        "Not measured: the shipped alert path (extensions/prometheus/nodeguard-alerts.yml, `for: 60s`, with "
        "kube-state-metrics scraped and rules evaluated every 30 s and Alertmanager's `group_wait: 30s` of "
        "docs/eda.md). The model predicts " + " and ".join(cells) + ": the alert, not the NotReady wait, makes "
        "the run late, and the Lease watch it starts then still takes its whole time.",
        "",
    ]


def real_kubelet_label(profile: str) -> str:
    return f"{profile} (real kubelet)"


def difference(stand_in: dict | None, real: dict | None) -> dict | None:
    """Real kubelet minus stand-in: the medians' difference (seconds, percent of the stand-in's) and whether
    the min-max ranges overlap; apart = every run of one kind came later than every run of the other."""
    if not (stand_in and real) or stand_in["median_s"] is None or real["median_s"] is None:
        return None
    delta = round(real["median_s"] - stand_in["median_s"], 2)
    percent = round(100 * delta / stand_in["median_s"]) if stand_in["median_s"] else None
    apart = real["min_s"] > stand_in["max_s"] or real["max_s"] < stand_in["min_s"]
    return {"seconds": delta, "percent": percent, "apart": apart}


def _difference_cell(diff: dict | None) -> str:
    if diff is None:
        return "—"
    percent = "" if diff["percent"] is None else f" ({diff['percent']:+d} %)"
    return f"{diff['seconds']:+g} s{percent}, ranges {'apart' if diff['apart'] else 'overlap'}"


def _median_range(values: list[float]) -> str:
    if not values:
        return "—"
    spread = results_module.spread(values)
    return f"{_s(spread['median_s'])} ({_s(spread['min_s'])}-{_s(spread['max_s'])}, n={len(values)})"


def heartbeat_lines(runs: list[dict], profile: str) -> list[str]:
    """How long before each power-off the kubelets had last renewed their Lease / posted their status: the real
    kubelet (the victim, at its power-off) and the stand-ins (the lab's other workers, at the read just after it)."""
    mine = [r for r in runs if r["profile"] == profile and r.get("heartbeats_at_power_off")]
    if not mine:
        return []
    ages: dict[str, dict[str, list[float]]] = {}
    for run in mine:
        for node, age in run["heartbeats_at_power_off"].items():
            kind = results_module.REAL_KUBELET if node == run["victim"] else results_module.STAND_IN
            for field in ("lease_s", "status_s"):
                if age.get(field) is not None:
                    ages.setdefault(kind, {}).setdefault(field, []).append(age[field])
    lines = ["| kubelet | last Lease renewal before power-off (s) | last status heartbeat before power-off (s) |", "|---|---|---|"]
    for kind, label in ((results_module.REAL_KUBELET, "real (the victim)"), (results_module.STAND_IN, "stand-in (the other workers, at the same read)")):
        if kind in ages:
            lines.append(f"| {label} | {_median_range(ages[kind].get('lease_s', []))} | {_median_range(ages[kind].get('status_s', []))} |")
    return lines


def kubelet_comparison_lines(results: dict, runs: list[dict]) -> list[str]:
    """The real-kubelet rows next to the stand-in rows of the same profile, the difference, where they differ,
    and the heartbeat ages at the power-off that explain the detection milestones."""
    real, stand_in = timeline_lookup(results, results_module.REAL_KUBELET), timeline_lookup(results)
    profiles_measured = list(dict.fromkeys(profile for profile, metric in real))
    if not profiles_measured:
        return ["Not measured (bench/run.sh's lab ngbkubelet writes raw/timelines-ngbkubelet.json)."]
    real_runs = [r for r in runs if results_module.victim_kubelet(r) == results_module.REAL_KUBELET]
    lines = []
    for profile in profiles_measured:
        loads = [r["load_average_1m"] for r in real_runs if r["profile"] == profile and "load_average_1m" in r]
        dates = sorted(r["date"] for r in real_runs if r["profile"] == profile and r.get("date"))
        lines += [
            f"### {profile}",
            "",
            f"Real-kubelet runs {dates[0]} to {dates[-1]}, load average (1 min) {_median_range(loads)}." if dates else "",
            "",
            "| metric | stand-in | real kubelet | real minus stand-in (medians) |",
            "|---|---|---|---|",
        ]
        apart = []
        for metric in results_module.METRICS:
            ours, theirs = real.get((profile, metric)), stand_in.get((profile, metric))
            if ours is None and theirs is None:
                continue
            diff = difference(theirs, ours)
            lines.append(f"| `{metric}` | {timeline_cell(theirs)} | {timeline_cell(ours)} | {_difference_cell(diff)} |")
            if diff and diff["apart"]:
                apart.append(f"`{metric}` ({'later' if diff['seconds'] > 0 else 'earlier'} on the real kubelet by {abs(diff['seconds']):g} s)")
        lines += ["", "Ranges apart (every run of one kind beyond every run of the other): " + ("; ".join(apart) if apart else "none") + ".", ""]
        heartbeats = heartbeat_lines(real_runs, profile)
        if heartbeats:
            lines += ["Heartbeat ages at the power-off (median (min-max, n)):", "", *heartbeats, ""]
    return lines


def cost_table(raw_cost: list[dict]) -> list[str]:
    lines = [
        "| profile | nodes | window | write req/s | heartbeat writes/s got / asked | full status reports per node "
        "| request bodies B/s | apiserver→etcd B/s | etcd DB growth /min | nodes NotReady at end | load (1m) | saturated |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(raw_cost, key=lambda r: (r["nodes"], profiles.ALL_PROFILES.index(r["profile"]))):
        if r.get("refused"):
            lines.append(f"| {r['profile']} | {r['nodes']} | not measured: the model refuses it ({r['refused']}) | | | | | | | | | |")
            continue
        window = f"{r['seconds']:g} s" + (f" (the same settings as {r['same_settings_as']}: its window)" if r.get("same_settings_as") else "")
        saturated = "**yes**: " + "; ".join(r["saturated"]) if r.get("saturated") else ("no" if "saturated" in r else "not judged")
        lines.append(
            f"| {r['profile']} | {r['nodes']} | {window} | {r['write_rps']:g} | {r['achieved_heartbeat_rps']:g} / "
            f"{r['requested_heartbeat_rps']:g} | {r.get('status_reports_per_node', '—')} | {r['write_bytes_per_s']:,.0f} "
            f"| {r['etcd_received_bytes_per_s']:,.0f} | {r['etcd_db_growth_bytes_per_min'] / 1024:,.0f} KiB "
            f"| {r['not_ready_nodes_at_end']} | {r['load_average_1m'][0]:g}-{r['load_average_1m'][1]:g} | {saturated} |"
        )
    return lines


def pod_deletes_cell(deletes: dict | None) -> str:
    """Who removed the victim's pods (bench/incident.py's pod_deletes_by_user)."""
    if deletes is None:
        return "not recorded"
    return "; ".join(f"{user}: {counts['force']} force, {counts['graceful']} graceful"
                     for user, counts in sorted(deletes.items())) or "none"


def incident_table(raw: dict | None) -> list[str]:
    if not raw:
        return ["Not measured."]
    lines = [
        "| pods on the node | cluster nodes | cluster pods | own seconds | API requests | by verb | bytes received "
        "(one full Node list, gzip) | pod deletes by who | wall seconds | waits (s) | outcome |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in raw.get("runs", [raw]):
        lines.append(
            f"| {r['pods']} | {r['cluster_nodes']} | {r['cluster_pods']} | {_s(r['own_seconds'])} "
            f"| {r['api_requests'] if r['api_requests'] is not None else '—'} "
            f"| {json.dumps(r.get('requests_by_verb', {}))} | {bytes_cell(r)} | {pod_deletes_cell(r.get('pod_deletes_by_user'))} "
            f"| {_s(r.get('wall_seconds'))} | {json.dumps(r.get('wait_seconds', {}))} | {r.get('outcome', '')} |"
        )
    return lines


def bytes_cell(run: dict) -> str:
    if run.get("api_bytes_received") is None:
        return "not measured"
    node_list = run.get("node_list_bytes") or {}
    full = f" ({node_list['gzip']:,} B)" if node_list.get("gzip") is not None else ""
    return f"{run['api_bytes_received']:,} B{full}"


INCIDENT_BYTES_TARGET = 1_000_000  # issue 23 item 5: what one incident reads at 1000 nodes


def incident_bytes_target_line(raw: dict | None) -> str:
    """Issue 23 item 5: one heartbeat-path incident at 1000 nodes reads <= 1 MB (measured on the wire), with the
    model's figure for 5000 nodes, and what binds it when missed."""
    head = "- One incident at 1000 nodes reads ≤ 1 MB: "
    run = next((r for r in (raw or {}).get("runs", []) if r["cluster_nodes"] == 1000 and r.get("api_bytes_received")), None)
    if run is None:
        return head + "not measured"
    received, model = run["api_bytes_received"], run.get("bytes_model") or {}
    verdict = ("**met**" if received <= INCIDENT_BYTES_TARGET
               else f"**missed** ({received / 1e6:.2f} MB; the full Node list, three reads of "
                    f"{run['node_list_bytes']['gzip'] / 1e6:.2f} MB each, is bound by the storm and one-control-plane "
                    "rules, which read every Node's taints, and the identity rule, which reads every systemUUID: "
                    "docs/runbooks/node-outage.md, 'What one incident reads')")
    at_5000 = f"; the model gives {model['at_5000_nodes'] / 1e6:.1f} MB at 5000 nodes" if model.get("at_5000_nodes") else ""
    return head + f"{verdict}, measured: {received:,} B received, {run['api_requests']} requests{at_5000} (modelled)"


def target_lines(results: dict, raw_cost: list[dict], runs: list[dict] | tuple = (), order: str = profiles.OVERLAPPED) -> list[str]:
    lookup = timeline_lookup(results)

    def median(profile: str, metric: str):
        entry = lookup.get((profile, metric))
        return None if entry is None else entry["median_s"]

    def verdict(value, limit: float) -> str:
        if value is None:
            return "not measured / never"
        if value <= limit:
            return f"**met** ({value:g}s ≤ {limit:g}s)"
        return f"**missed** by {value - limit:.1f}s ({value:g}s > {limit:g}s)"

    default_unremediated = lookup.get(("kubernetes-default", "statefulset_replaced_unremediated"))
    if default_unremediated is None:
        never_replaced = "not measured"
    elif default_unremediated["median_s"] is None:
        never_replaced = f"confirmed ({default_unremediated['runs']} run(s))"
    else:
        never_replaced = "not confirmed: it was replaced"
    lines = [
        f"- Fast preset `not_ready` ≤ 5 s: {verdict(median('fast', 'not_ready'), 5)}",
        f"- `deployment_replaced` ≤ 40 s: fast {verdict(median('fast', 'deployment_replaced'), 40)}; "
        f"aggressive {verdict(median('aggressive', 'deployment_replaced'), 40)}; "
        f"balanced {verdict(median('balanced', 'deployment_replaced'), 40)}",
        "- `statefulset_replaced` with node_outage.yml ≤ 60 s: "
        + "; ".join(f"{p} {verdict(median(p, 'statefulset_replaced'), 60)}" for p in profiles.ALL_PROFILES),
        "- With defaults and no remediation the StatefulSet pod is never replaced: " + never_replaced,
    ]
    lines.extend(rulebook_target_lines(results, runs, order))
    by_cost = cost_by_profile(raw_cost)
    lines.append(cost_target_line(by_cost))
    lines.extend(power_event_target_lines(median, verdict, by_cost))
    return lines


# Issue 23's targets for the StatefulSet RWO pod Ready after power-off, through the shipped triggers:
# (profile, trigger, p50 limit s, p95 limit s or None), each from 20 runs.
RULEBOOK_TARGETS = (
    ("power-event", results_module.POWER_EVENTS, 8, 12),
    ("fast", results_module.NODE_WATCH, 20, 25),
    ("kubernetes-default", results_module.NODE_WATCH, 75, None),
)
TARGET_RUNS = 20  # also how many runs bench/run.sh asks of each targeted row


def rulebook_target_lines(results: dict, runs: list[dict] | tuple = (), order: str = profiles.OVERLAPPED, predict=None) -> list[str]:
    """One line per target of RULEBOOK_TARGETS, judged on the row's nearest-rank percentiles over every run (a run that
    never reached Ready counts as the slowest). A missed target names what binds: the model's binding wait (a proof,
    or the NotReady wait, a policy) in the code that measured the row (``order``, profiles.measured_proof_order) and
    the measured median of each phase of the row's runs."""
    predict = predict or profiles.remediated_prediction
    rows = {(e["profile"], e["trigger"], e["metric"]): e for e in results["timelines"]
            if results_module.entry_kubelet(e) == results_module.STAND_IN}

    def judged(name: str, value, limit: float) -> str:
        if value is None:
            return f"{name} **missed**: its rank falls on a run that never reached Ready"
        if value <= limit:
            return f"{name} **met** ({value:g} s ≤ {limit:g} s)"
        return f"{name} **missed** by {value - limit:.1f} s ({value:g} s > {limit:g} s)"

    lines = []
    for profile, trigger, p50, p95 in RULEBOOK_TARGETS:
        head = f"- `{profile}` through `{trigger}`, StatefulSet RWO pod Ready after power-off: "
        row = rows.get((profile, trigger, "statefulset_replaced"))
        if row is None:
            lines.append(head + "not measured")
            continue
        verdicts = [judged("p50", row["p50_s"], p50)] + ([judged("p95", row["p95_s"], p95)] if p95 is not None else [])
        runs_text = f"n={row['runs']}" + ("" if row["runs"] >= TARGET_RUNS else f", fewer than the {TARGET_RUNS} runs the target asks for")
        line = head + "; ".join(verdicts) + f" ({runs_text})"
        if any("**missed**" in verdict for verdict in verdicts):
            line += ". " + binding_text(profile, trigger, runs, order, predict)
        lines.append(line)
    return lines


# The phases a binding text gives the median of, in order: (phases.breakdown key, label).
BINDING_PHASES = (("event_s", "event"), ("run_start_s", "node-outage started"), ("first_check_s", "first check"), ("prove_end_s", "proofs held"),
                  ("taint_s", "taint"), ("replacement_ready_s", "Ready"))


# The model's moments a binding text gives: (model/remediated.py phase name, label).
MODEL_MOMENTS = (("lease_watch_over", "Lease watch over"), ("off_confirmed", "second Off reading"), ("out_of_service_taint", "taint"))


def binding_text(profile: str, trigger: str, runs, order: str, predict) -> str:
    """What binds a missed target: the model's binding wait for the code that measured it, with its numbers, and the
    measured median of each phase over the runs the row is computed from (results.counted_runs: the stand-in runs
    of the profile and trigger, a disturbed run left out), seconds after power-off."""
    today = predict(profile)[order]
    wait = (f"NotReady wait {today['not_ready_seconds']} s, a policy; " if today["not_ready_seconds"] is not None else "")
    at = {phase["name"]: phase["at"]["expected"] for phase in today["phases"]}
    moments = ", ".join(f"{label} at {at[name]:g} s" for name, label in MODEL_MOMENTS if name in at)
    model = f"What binds (model): {today['binds']} ({wait}{moments})"
    mine = [recorded_phases(r) for r in row_runs(runs, profile, trigger) if r.get("phases")]
    medians = []
    for key, label in BINDING_PHASES:
        values = [p[key] for p in mine if p.get(key) is not None]
        if values:
            medians.append(f"{label} {statistics.median(values):g} s")
    measured = f"; measured medians over {len(mine)} runs: " + ", ".join(medians) if medians else ""
    return model + measured


def power_event_target_lines(median, verdict, by_cost: dict) -> list[str]:
    """Issue 13's targets for the power-event profile: both replacements <= 15 s after power-off, and its
    heartbeat writes at 1000 nodes <= 1/5 of seed-001's, judged on the writes measured, not those asked for."""
    lines = [
        f"- power-event (stock heartbeats, failover led by the BMC's power event) ≤ 15 s after power-off: "
        f"`statefulset_replaced` {verdict(median('power-event', 'statefulset_replaced'), 15)}; "
        f"`deployment_replaced` {verdict(median('power-event', 'deployment_replaced'), 15)}"
    ]
    against_seed = versus_seed_001(by_cost, "power-event")
    lines.append(
        "- power-event heartbeat writes at 1000 nodes ≤ 1/5 of seed-001's: "
        + (against_seed + " (the event path adds no heartbeat: its own load is in the section on it)" if against_seed else "not measured")
    )
    return lines


def cost_by_profile(raw_cost: list[dict]) -> dict:
    """{(profile, nodes): window} of the cost windows measured (the model refused the others)."""
    return {(r["profile"], r["nodes"]): r for r in raw_cost if not r.get("refused")}


def versus_seed_001(by_cost: dict, profile: str) -> str | None:
    """`profile`'s heartbeat cost at 1000 nodes against seed-001's (heartbeat_ratio_text); None when either is not
    measured."""
    ours, seed = by_cost.get((profile, 1000)), by_cost.get(("seed-001", 1000))
    return heartbeat_ratio_text(ours, seed) if ours and seed else None


def heartbeat_ratio_text(ours: dict, seed: dict) -> str:
    """The verdicts on the heartbeat writes and the bytes to etcd measured (got) at 1000 nodes, then the modelled
    ratio (writes asked for).

    When seed-001 saturated the lab it got less than it asked for, so a measured ratio overstates ours: a ratio met
    on it is met; one missed on it is missed on this lab only, which the text says."""
    on_this_lab = " on this lab" if seed.get("saturated") else ""

    def judged(what: str, ratio: float) -> str:
        if ratio <= 0.2:
            return f"by {what} **met** (ratio {ratio:.2f} ≤ 0.2)"
        return f"by {what} **missed{on_this_lab}** (ratio {ratio:.2f} > 0.2)"

    writes = ours["achieved_heartbeat_rps"] / seed["achieved_heartbeat_rps"]
    stored = ours["etcd_received_bytes_per_s"] / seed["etcd_received_bytes_per_s"]
    modelled = ours["requested_heartbeat_rps"] / seed["requested_heartbeat_rps"]
    saturated = [f"{r['profile']} saturated the lab ({'; '.join(r['saturated'])})" for r in (ours, seed) if r.get("saturated")]
    return (
        f"measured, {judged('heartbeat writes got', writes)}, {judged('bytes to etcd', stored)}: "
        f"{ours['achieved_heartbeat_rps']:g} vs {seed['achieved_heartbeat_rps']:g} heartbeat writes/s, "
        f"{ours['etcd_received_bytes_per_s'] / 1e6:.2f} vs {seed['etcd_received_bytes_per_s'] / 1e6:.2f} MB/s, in "
        f"{ours['seconds']:g} s and {seed['seconds']:g} s windows"
        + (f"; {', '.join(saturated)}" if saturated else "")
        + (", so seed-001 got less than it asked for and the measured ratios overstate the other's share"
           if seed.get("saturated") else "")
        + f"; modelled (writes asked for): {ours['requested_heartbeat_rps']:g} vs {seed['requested_heartbeat_rps']:g} "
        f"writes/s, ratio {modelled:.2f}"
    )


def cost_target_line(by: dict) -> str:
    """Fast vs seed-001 heartbeat cost at 1000 nodes, judged on the writes measured."""
    return "- Fast preset heartbeat writes at 1000 nodes ≤ 1/5 of seed-001's: " + (versus_seed_001(by, "fast") or "not measured")


def _run_seconds(value) -> str:
    return "—" if value is None else f"{value:g}"


def recorded_phases(run: dict) -> dict:
    """A run's recorded phases (phases.breakdown, kept in its raw record), with its first check derived from its
    readings: records written before breakdown had that key lack it."""
    return {**run["phases"], "first_check_s": phases.first_check_s(run)}


def phase_table(runs: list[dict]) -> list[str]:
    """One row per remediated run (every trigger): its phases, seconds after power-off (bench/phases.py). The whole
    messages (plan, each proof, outcome) are in the raw records (`plan`, `proofs_whole`, `outcome`)."""
    mine = [r for r in runs if r.get("phases")]
    if not mine:
        return ["Not measured."]
    lines = [
        "| run | profile | trigger | event (the rulebook's Off event or node-down; bench-watch: NotReady) | rulebook start-up s | node-outage started "
        "| first check | each proof held; Off readings | proofs held | taint | deletes done | detach done | StatefulSet pod Ready |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for number, r in enumerate(mine, start=1):
        p = recorded_phases(r)
        cells = [_run_seconds(p.get(k)) for k in ("event_s", "rulebook_startup_s", "run_start_s", "first_check_s")]
        cells.append(proof_moments_cell(p.get("proofs_held_s") or {}))
        cells += [_run_seconds(p.get(k)) for k in ("prove_end_s", "taint_s", "deletes_s", "detach_s", "replacement_ready_s")]
        lines.append(f"| {number} | {r['profile']} | {results_module.run_trigger(r)} | " + " | ".join(cells) + " |")
    return lines


def proof_moments_cell(moments: dict) -> str:
    """`not-ready 107, lease-stale 71.8; Off 51.9, 56.9` (phases.proof_moments), or — when the record had none."""
    held = ", ".join(f"{name} {value:g}" for name, value in moments.items() if name != "off_readings")
    off = [f"{value:g}" for value in moments.get("off_readings") or []]
    shown = off if len(off) <= 4 else [*off[:2], "…", *off[-2:]]
    off_text = "Off " + ", ".join(shown) if off else ""
    return "; ".join(part for part in (held, off_text) if part) or "—"


def event_led_table(runs: list[dict]) -> list[str]:
    """One row per rulebook-led run: the chain's milestones (seconds after power-off) and its own load."""
    mine = [r for r in runs if results_module.rulebook_led(r)]
    if not mine:
        return ["Not measured."]
    lines = [
        "| run | profile · trigger | victim | event in rulebook | node-outage started | taint (node Ready then?) | Deployment pod "
        "| StatefulSet pod | NotReady | node-outage ok | BMC requests | rulebook CPU s | rulebook RSS MiB "
        "| load (1m) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for number, r in enumerate(mine, start=1):
        m = r["milestones"]
        ready = {True: "Ready", False: "NotReady", None: "—"}[r.get("taint_while_ready")]
        bmc = r.get("bmc_requests") or {}
        own = sum(count for request, count in bmc.items() if "ComputerSystem.Reset" not in request)
        memory = (r.get("rulebook_memory_kib") or {}).get("VmRSS")
        lines.append(
            f"| {number} | {column_label(r['profile'], results_module.run_trigger(r))} | {r['victim']} "
            f"| {_run_seconds(m.get('event_received'))} | {_run_seconds(m.get('playbook_started'))} "
            f"| {_run_seconds(m.get('out_of_service_taint'))} ({ready}) | {_run_seconds(m.get('deployment_replaced'))} "
            f"| {_run_seconds(m.get('statefulset_replaced'))} | {_run_seconds(m.get('not_ready'))} "
            f"| {'yes' if r.get('node_outage_ok') else 'no'} | {own} | {_run_seconds(r.get('rulebook_cpu_seconds'))} "
            f"| {_run_seconds(round(memory / 1024, 1) if memory else None)} | {r.get('load_average_1m', '—')} |"
        )
    return lines


def event_incident_lines(raw_incident: dict | None) -> list[str]:
    """API requests of one event-led node-outage run, counted in scale mode (bench/incident.py --power-event)."""
    runs = (raw_incident or {}).get("power_event_runs") or []
    if not runs:
        return ["API requests of one event-led incident: not measured."]
    lines = [
        "| pods on the node | cluster nodes | cluster pods | API requests | by verb | wall seconds | waits (s) | outcome | load (1m) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['pods']} | {r['cluster_nodes']} | {r['cluster_pods']} "
            f"| {r['api_requests'] if r['api_requests'] is not None else '—'} "
            f"| {json.dumps(r.get('requests_by_verb', {}))} | {_s(r.get('wall_seconds'))} "
            f"| {json.dumps(r.get('wait_seconds', {}))} | {r.get('outcome', '')} | {r.get('load_average_1m')} |"
        )
    return lines


def plan_lines() -> list[str]:
    """bench/plan.txt's lines without its comments: the timelines bench/run.sh runs, lab by lab."""
    text = (REPO / "bench" / "plan.txt").read_text()
    return [" ".join(line.split()) for line in text.splitlines() if line.strip() and not line.startswith("#")]


def page(results: dict, raw_cost: list[dict], raw_incident: dict | None, findings: str, runs: list[dict] | None = None, last_run: dict | None = None) -> str:
    machine = results["machine"]
    gantt = [f"![{profile}](timeline-{profile}.png)" for profile in dict.fromkeys(p for p, m in timeline_lookup(results))]
    text = [
        "# Failover benchmark",
        "",
        f"Measured on Kubernetes v{results['kubernetes_version']} (real kube-apiserver, kube-controller-manager, "
        f"kube-scheduler and etcd built from the published modules), {machine['cpus']} CPUs ({machine['cpu_model']}), "
        f"{machine['memory_gib']} GiB, kernel {machine['kernel']}, {results['date']}. The timeline labs shared "
        "the CPUs with each other; each raw record carries the load average at its time, and the findings say what "
        "else ran. "
        + "".join(
            f"The rows of {', '.join(e['profiles'])} were measured later, {e['date']}, on {e['cpus']} CPUs "
            f"({e['cpu_model']}), kernel {e['kernel']}, while other jobs ran on the same CPUs (load averages "
            "next to the numbers). "
            for e in machine.get("added", [])
        )
        + "All numbers below were measured, except the model's predictions, which are labelled and stand next to "
        "the measurements they predict. "
        "Machine-readable: [results.json](results.json); every run: [raw/](raw/).",
        "",
        "## How to run",
        "",
        "    make bench                 # bench/run.sh: everything below, then this page",
        "    bench/run.sh --quick       # smoke: 100 nodes, short windows, one run each",
        "",
        run_record.describe(last_run),
        "",
        "bench/run.sh runs, in this order (logs in /var/tmp/nodeguard-bench-logs):",
        "",
        "    # 1. timelines: private labs side by side (bench/isolated-lab.sh, NODEGUARD_BENCH_NAME=<lab>; ngbkubelet",
        "    #    with NODEGUARD_LAB_REAL_KUBELET=1 and --victim ng-worker4), each running its lines of bench/plan.txt",
        f"    #    in order (rulebook-led runs: target = {TARGET_RUNS}, other = 5):",
        *(f"    #      {line}" for line in plan_lines()),
        "    #    each line:",
        "    bench/isolated-lab.sh run .venv/bin/python bench/timeline.py --profiles <profile> --kinds <kinds> "
        "[--victim <worker>] --runs 5 --rulebook-runs <its count> --out docs/benchmarks/raw/timelines-<lab>.json",
        "    #    beside them: dead TCP connections, a private lab of 4 workers (about 50 minutes)",
        "    bench/deadconn.sh",
        "    # 2. incident overhead, scale mode, one after the other",
        "    .venv/bin/python bench/incident.py --nodes 1000 --pods 30000 --on-node 110 --profile kubernetes-default --out docs/benchmarks/raw/incident.json",
        "    .venv/bin/python bench/incident.py --nodes 100 --pods 3000 --on-node 110 --profile kubernetes-default --out docs/benchmarks/raw/incident.json",
        "    .venv/bin/python bench/incident.py --nodes 100 --pods 3000 --on-node 30 --profile kubernetes-default --out docs/benchmarks/raw/incident.json",
        "    .venv/bin/python bench/incident.py --nodes 100 --pods 3000 --on-node 110 --profile power-event "
        "--power-event --out docs/benchmarks/raw/incident.json",
        "    # 3. control-plane cost, scale mode",
        "    .venv/bin/python bench/cost.py --nodes 100 1000 --window 300 --out docs/benchmarks/raw/cost.json",
        "    # 4. this page, results.json, the plots and the summary (summary.md)",
        "    .venv/bin/python bench/report.py --out docs/benchmarks --summary docs/benchmarks/summary.md",
        "",
        "## Targets",
        "",
        *target_lines(results, raw_cost, runs or [], profiles.measured_proof_order(last_run)),
        incident_bytes_target_line(raw_incident),
        *([deadconn.target_line(results["dead_connections"])] if results.get("dead_connections") else []),
        "",
        FINDINGS_START,
        findings.strip(),
        FINDINGS_END,
        "",
        "## Failover timelines (seconds after power-off)",
        "",
        "Cell: median (p95, min-max, n = runs). A column per profile and `trigger` (results.json's field): what "
        "started node-outage in its runs: `node-watch.yml` or `power-events.yml` (the shipped rulebook in a real "
        "ansible-rulebook; the benchmark only powers the victim off), `bench-watch` (the benchmark's own watch starts "
        "node_outage.yml the moment the node is NotReady: a comparison row, not what a user runs), or none (the "
        "profile's name alone: Kubernetes without remediation). results.json also gives `p50_s` and `p95_s`: nearest "
        "rank (the value of rank ceil(p/100 * n) in ascending order, never interpolated; p95 of fewer than 20 runs "
        "is the maximum; p50 of an even n is the lower middle value, where the median averages the two). "
        "Profiles: `kubernetes-default` (nothing set), `seed-001` "
        "(nodeStatusUpdateFrequency 1s, node-monitor-period 1s, node-monitor-grace-period 4s, default tolerations), "
        "and the collection's presets as the model renders them (bench/profiles.py). Caveat: the replacement phase "
        "(from the taint to the new pod Ready) runs on the lab's stand-in workers, which start a pod at once, with an "
        "instant volume attacher; a real cluster adds its image pull, container start and its storage's detach and "
        "attach (the real-kubelet rows below show the victim side with a real kubelet).",
        "",
        *timeline_table(results),
        "",
        "How it is measured (bench/timeline.py): the profile is written to the lab's kubeadm files (controller-manager "
        "and apiserver manifests in ng-cp1, /var/lib/kubelet/config.yaml on each worker, kubelet restarted) and the "
        "workload pods are recreated when their default tolerations differ. A worker that holds a `web` (Deployment) "
        "and a `db` (StatefulSet, RWO volume) pod is powered off through its Redfish BMC; time zero is the moment its "
        "container is seen stopped (polled every 50 ms). Watches on Nodes, EndpointSlices and Pods record each "
        "milestone. Unremediated runs stop 30 s after the Deployment's pod is replaced (or at a cap of twice the "
        "model's expectation, at least 90 s). Remediated runs (`node-watch.yml`): a real ansible-rulebook runs "
        "extensions/eda/rulebooks/node-watch.yml with its shipped variables, the lab's kubeconfig and the workers "
        "allowed (docs/eda.md, node watch; bench/node_watch_chain.py); its source emits node-down at NotReady and the "
        "rulebook runs node-outage with `nodeguard_node_watch_proof_timeout` (150 s), so it waits for its proofs "
        "(NotReady for `node_outage_not_ready_seconds`, Lease stale, BMC reads Off) instead of refusing. The "
        "`bench-watch` runs start playbooks/node_outage.yml from the benchmark's own watch at NotReady instead. "
        "bench/timeline.py runs the documented commands: a preset is applied with `tune_failover.yml -e "
        "failover_preset=<preset>` first, and node-outage gets no timing variable, so it takes its NotReady wait from "
        "the applied profile (the preset's `remediation.not_ready_seconds`: fast 20 s, aggressive 10 s, balanced 60 s), "
        "and the stock 60 s for kubernetes-default and seed-001, which are written without tune-failover. "
        "`deployment_replaced` comes from unremediated and rulebook-led runs (node-outage deletes the Deployment's pod "
        "too), `statefulset_replaced` from remediated ones; each column's detection milestones from its own runs. A "
        "run during which another worker went NotReady would be discarded.",
        "",
        *gantt,
        "",
        "### Phases of every remediated run (seconds after power-off)",
        "",
        *phase_table(runs or []),
        "",
        "From bench/phases.py: the event (the BMC's Off event in the rulebook's log, or NotReady), the rulebook's "
        "start-up (before the power-off), node-outage's start, its first proof check (its earliest reading: the Lease "
        "watch starts and the first Off reading is taken), the moment each proof first held and each Off reading "
        "(the incident record's `readings`; a long wait keeps its first and last readings), the end of its proof step, the taint, the end of the "
        "deletes and of the detach (node-outage's incident record, whole seconds), the StatefulSet pod Ready. Each "
        "run's whole plan, every proof's whole message and the outcome are in raw/timelines-*.json (`plan`, "
        "`proofs_whole`, `outcome`).",
        "",
        *remediated_prediction_section(results, profiles.measured_proof_order(last_run), runs=runs or []),
        "## Real kubelet vs stand-in",
        "",
        f"The same milestones with the real kubelet v{results['kubernetes_version']} (containerd, real containers, the lab CSI node plugin; "
        "[lab-workers.md](../lab-workers.md#the-real-kubelet-worker)) on the victim, next to the stand-in rows above "
        "(kwok + the stand-in, no containers). Measured in a private lab of their own (ngbkubelet, "
        "`NODEGUARD_LAB_REAL_KUBELET=1`: the three stand-in workers and ng-worker4) with "
        "`bench/timeline.py --victim ng-worker4`: before each run the other workers are cordoned and a db pod and a web "
        "pod are deleted as needed, so that their replacements run on ng-worker4 (the db pod with its RWO volume "
        "staged and published by the CSI node plugin); then the same power-off through its Redfish BMC and the same "
        "watches. The replacements start on stand-in workers in both cases: what differs is the victim. A full `make "
        "bench` measures both in the same run, ngbkubelet beside the other labs; rows added by a later run name their "
        "machine at the top of the page (load averages below). The heartbeat ages are read "
        "from the Leases and the Nodes' Ready condition (`lastHeartbeatTime`, whole seconds) right after each "
        "power-off: NotReady comes node-monitor-grace-period after the later heartbeat (plus up to a "
        "node-monitor-period), so a victim whose kubelet renewed just before it went off is detected later.",
        "",
        *kubelet_comparison_lines(results, runs or []),
        "## Control-plane cost (scale mode)",
        "",
        "![cost against node count](cost.png)",
        "",
        *cost_table(raw_cost),
        "",
        "How it is measured (bench/cost.py, lab/scale): etcd, kube-apiserver and kube-controller-manager (the lab's "
        "binaries) run on loopback with one kwok process simulating N nodes whose Lease and Node-status rhythm comes "
        "from the profile's kubelet settings (the lab's own kwok Stages). Node objects carry 40 images in their "
        "status (about 11 KB per Node, like a real node), because every Node status write stores the whole object "
        "again. After a switch the node Leases are recreated and the rhythm settles for 15 s; then the window (its length "
        "is in the table: 300 s in a full run, so that it holds the kubelets' 5-minute full status reports, whose "
        "first one comes 300 s after the switch; `full status reports per node` says how many it held). "
        "Profiles with the same settings (power-event keeps kubernetes-default's heartbeats) share one window. "
        "`heartbeat writes/s got / asked`: Lease renewals and Node status writes the apiserver counted in the window "
        "(measured) against what the profile's kubelet settings ask for (modelled). A window **saturated** the lab when "
        "its heartbeats got less than 90 % of what they asked for (the stand-in's jitter costs about 2 %) or a node "
        "was NotReady at its end: its numbers are what this control plane could take, not what the profile costs. "
        "`write req/s`: delta of `apiserver_request_total` for verbs POST, PUT, PATCH, DELETE, DELETECOLLECTION "
        "(results.json `write_rps`). `request bodies B/s`: delta of `apiserver_request_body_size_bytes_sum` for the "
        "write verbs (results.json `write_bytes_per_s`): what clients send. `apiserver→etcd B/s`: delta of etcd's "
        "`etcd_network_client_grpc_received_bytes_total`: what is stored (whole objects) — the figure the seeds' "
        "warning is about. `etcd DB growth`: delta of `etcd_mvcc_db_total_size_in_bytes` (the file grows in pages "
        "and is compacted every 5 min by the apiserver, so short windows show steps, not a slope).",
        "",
        "## Rulebook-led failover (power-events.yml, node-watch.yml): each run and the rulebook's own load",
        "",
        *event_led_table(runs or []),
        "",
        "How it is measured (bench/timeline.py, event-led runs; tests/integration/eda/power_event_chain.py): the lab "
        "keeps its stock heartbeat settings. A real ansible-rulebook runs extensions/eda/rulebooks/power-events.yml "
        "(TLS, bearer token) with the workers mapped, and playbooks/power_event_subscriptions.yml subscribes each "
        "worker's Redfish BMC to it. The power-off through the BMC is the only action: the BMC posts "
        "ResourcePoweredOff, the rulebook runs nodeguard.failover.node_outage with node_outage_power_event_time, "
        "which waits inside for its proofs (Lease silent since the event and older than renew interval + margin, "
        "BMC Off twice with identity). Milestones are seconds after the container is seen stopped; `event in "
        "rulebook` and `node-outage started` are when the rulebook's log shows them (polled every 0.1 s); `taint` "
        "is the first Node version with the out-of-service taint, and whether that version was still Ready. "
        "`BMC requests`: the lab Redfish service's access log during the run, the power-off itself left out. "
        "`rulebook CPU s`: ansible-rulebook's CPU during the run, its node-outage run included (/proc utime+stime "
        "of the process and its waited-for children). The rulebook acts once per node in 30 minutes, so a victim "
        "it has already seen gets a fresh rulebook and fresh subscriptions. None of this load is on etcd: the "
        "BMC posts to the rulebook, not to the API server. The `node-watch.yml` rows (bench/node_watch_chain.py) are "
        "the heartbeat profiles' remediated runs: `event in rulebook` is the source's node-down line, and the rulebook's "
        "watch of Nodes and Leases is on the API server (one list, then a watch). When the victim is back, the rulebook "
        "runs node-recover, as for a user, with a shorter `node_recover_healthy_seconds` than the stock 60 (each raw "
        "record's `between_runs_vars`): it only shortens the time between runs, no milestone comes after it; the next "
        "run powers off only once that run has ended (`rulebook_idle_wait_seconds` in the raw records).",
        "",
        *event_incident_lines(raw_incident),
        "",
        "API requests (bench/incident.py --power-event): scale mode, stock profile; node_outage.yml is started right "
        "at the node's power-off (kwok stops managing it) with `node_outage_power_event_time`, as the rulebook "
        "starts it, and waits inside for its Lease proof; the power reading is a command hook that reports Off (no "
        "BMC in scale mode, identity opted out with a reason). Counted from the apiserver's audit log of the "
        "playbook's own identity, its Lease polling while it waits included.",
        "",
        "## Dead TCP connections (real kernel)",
        "",
        *dead_connection_lines(results),
        "",
        "## Load-balancer failure drill",
        "",
        "The API server load balancer blackholed for 60 s (seeds/003), with stock heartbeats and with the fast preset: "
        "how many nodes went NotReady, whether node-outage refused as a storm, full disruption, pods deleted, and how "
        "long until heartbeats flowed again. Written by hand from bench/lb_drill.py's raw files: "
        "[lb-drill.md](lb-drill.md).",
        "",
        "## Incident playbook overhead",
        "",
        *incident_table(raw_incident),
        "",
        "How it is measured (bench/incident.py): scale mode with the `kubernetes-default` profile; the pods are created bound "
        "(no scheduler) and kwok runs them. Power-off of the node is kwok no longer managing it. Once the node is "
        "NotReady for the playbook's 60 s proof, node_outage.yml runs with its own token; the apiserver's audit "
        "policy logs every request of that identity and, from everyone else, only pod deletes, so `API requests` is "
        "exactly the playbook's requests (audit events at ResponseComplete). `pod deletes by who`: the pod deletes "
        "the apiserver carried out after the run's start, by identity (node-outage; `nodeguard-scale-admin` is the "
        "controller manager in scale mode, whose taint eviction deletes gracefully and whose PodGC force-deletes the "
        "terminating pods of an out-of-service node, racing node-outage's own force-deletes). `own seconds` is the playbook's "
        "wall time (ansible-playbook start to exit) minus the "
        "steps that wait for Kubernetes (delete-pods, detach-volumes, verify-replacements, from the incident record). "
        "Power proof: manual attestation (scale-mode nodes have no BMC).",
        "",
    ]
    return "\n".join(text)


def dead_connection_lines(results: dict) -> list[str]:
    """bench/deadconn.py's summary; its own page has the method and where the kernel and the model differ."""
    rows = results.get("dead_connections")
    if not rows:
        return ["Not measured in this run (bench/deadconn.sh writes raw/dead-connections.json)."]
    return [
        "Seconds until a client's socket fails after its peer lost power (data in flight from the write, idle "
        "with keepalive from the last segment received), next to the model's prediction. Method, every "
        "connection's timers, and where the kernel and the model differ: "
        "[dead-connections.md](dead-connections.md).",
        "",
        deadconn.table({"summary": rows}),
    ]


SUMMARY_START = "<!-- bench-summary:start -->"
SUMMARY_END = "<!-- bench-summary:end -->"
# The summary's rows: (label, profile, the shipped trigger of its remediated StatefulSet row, how a user starts it).
SUMMARY_ROWS = (
    ("Kubernetes defaults", "kubernetes-default", results_module.NODE_WATCH,
     "a cluster never tuned; node-watch.yml starts node-outage, which waits the stock 60 s NotReady"),
    ("`fast` preset", "fast", results_module.NODE_WATCH,
     "`tune_failover.yml -e failover_preset=fast`, then node-watch.yml; node-outage waits the recorded 20 s"),
    ("power event, stock heartbeats", "power-event", results_module.POWER_EVENTS,
     "the lab BMC's Redfish event, through power-events.yml"),
)


def summary_cell(entry: dict | None, source: str = "") -> str:
    """p50 and p95 over every run of one row (a run that never got there counts as the slowest), with n."""
    if entry is None:
        return "not measured"
    if entry["median_s"] is None:
        return f"never{source} (n={entry['runs']})"
    p95 = f"{_s(entry['p95_s'])} s" if entry.get("p95_s") is not None else "not reached"
    return f"p50 {_s(entry['p50_s'])} s, p95 {p95}{source} (n={entry['runs']})"


def summary_section(results: dict, raw_cost: list[dict], last_run: dict | None, runs: list[dict] | tuple = ()) -> list[str]:
    """docs/benchmarks/summary.md's section, between SUMMARY_START and SUMMARY_END: the three rows users ask
    about, from results.json, with the targets' verdicts and the heartbeat cost, each labelled measured or modelled."""
    columns = timeline_columns(results)
    lines = [
        "From [the benchmark page](README.md), written by `bench/report.py` from one `make bench`. "
        + run_record.describe(last_run)
        + f" Kubernetes v{results['kubernetes_version']}, {results['machine']['cpus']} CPUs, real kube-apiserver, "
        "kube-controller-manager, kube-scheduler and etcd; the replacement phase runs on the lab's stand-in workers "
        "with an instant volume attacher. Seconds after the power-off, p50 and p95 over every run (a run that never "
        "got there counts as the slowest); the page has every run's phases, the commands and the caveats.",
        "",
        "| profile | node NotReady | Deployment pod replaced | StatefulSet RWO pod replaced | how it was started |",
        "|---|---|---|---|---|",
    ]
    for label, profile, trigger, how in SUMMARY_ROWS:
        alone = columns.get((profile, results_module.NO_REMEDIATION), {})
        led = columns.get((profile, trigger), {})
        not_ready = alone.get("not_ready") or led.get("not_ready")
        if "deployment_replaced" in alone:
            deployment = summary_cell(alone["deployment_replaced"], ", Kubernetes alone")
        else:
            deployment = summary_cell(led.get("deployment_replaced"), f", {trigger}")
        statefulset = summary_cell(led.get("statefulset_replaced"), f" with {trigger}")
        if "statefulset_replaced_unremediated" in alone:
            statefulset = summary_cell(alone["statefulset_replaced_unremediated"], " without remediation") + "; " + statefulset
        lines.append(f"| {label} | {summary_cell(not_ready)} | {deployment} | {statefulset} | {how} |")
    heartbeats = versus_seed_001(cost_by_profile(raw_cost), "power-event") or "not measured"
    contention = contention_lines(runs, profiles.measured_proof_order(last_run))
    return [
        *lines,
        *contention,
        "",
        "Issue 23's targets, judged on the shipped triggers' rows:",
        "",
        *rulebook_target_lines(results, runs, profiles.measured_proof_order(last_run)),
        f"- The power-event row's heartbeat writes at 1000 nodes against seed-001's: {heartbeats}",
    ]


def contention_lines(runs, order: str, predict=None) -> list[str]:
    """What the summary's rows shared the machine with: the 1-minute load average at their runs' power-offs, and the
    model's median difference per row from each run's own start (run_differences). [] without runs."""
    predict = predict or profiles.remediated_prediction
    loads, parts = [], []
    for label, profile, trigger, _how in SUMMARY_ROWS:
        loads += [r["load_average_1m"] for r in row_runs(runs, profile, trigger) if r.get("load_average_1m") is not None]
        differences = run_differences(runs, profile, trigger, order, predict)
        if differences:
            parts.append(f"{label} {statistics.median(differences):+.2f} s")
    if not loads:
        return []
    text = (f"These rows' runs shared the CPUs with the other timeline labs: the 1-minute load average at their "
            f"power-offs was {min(loads):g}-{max(loads):g} (median {statistics.median(loads):g}), and a busy machine "
            "delays ansible-playbook's start-up before node-outage's first check, which the model takes from a quiet one.")
    if parts:
        text += (" Predicted from each run's own NotReady and first check, the model's median difference is "
                 + ", ".join(parts) + "; the page has both predictions.")
    return ["", text]


def with_summary_section(page: str, summary: list[str]) -> str:
    """`page` with the text between its summary markers replaced; every other byte as it was."""
    if page.count(SUMMARY_START) != 1 or page.count(SUMMARY_END) != 1:
        raise ValueError(f"the summary page needs exactly one {SUMMARY_START} and one {SUMMARY_END}")
    head, rest = page.split(SUMMARY_START)
    _old, tail = rest.split(SUMMARY_END)
    return head + SUMMARY_START + "\n" + "\n".join(summary) + "\n" + SUMMARY_END + tail


def with_added_machine(previous: dict, results: dict, added: list[str], measured: str | None = None) -> dict:
    """results, measured where and when previous was, except the added profiles: this machine and date (measured:
    their last run's, else now) are listed under machine.added for them (a page that mixes sessions says which
    numbers came from where)."""
    machine = {key: value for key, value in previous["machine"].items() if key != "added"}
    entries = [e for e in previous["machine"].get("added", []) if not set(e["profiles"]) & set(added)]
    entries.append(
        {
            "profiles": list(added),
            "date": measured or results["date"],
            **results["machine"],
            "shared": "CPU shared with other jobs (other labs and tests) while these were measured; load averages are in raw/*.json and on the page",
        }
    )
    return {**results, "machine": {**machine, "added": entries}, "date": previous["date"]}


def kubernetes_version(last_run: dict | None, previous: Path) -> str:
    """The version the measurements were taken on: the last end-to-end run's record, else the existing results.json's
    (a page rewritten from older raw data), else the version the labs build now."""
    if last_run and last_run.get("kubernetes_version"):
        return last_run["kubernetes_version"]
    if previous.exists():
        return json.loads(previous.read_text())["kubernetes_version"]
    return profiles.KUBERNETES_VERSION


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks")
    parser.add_argument(
        "--added",
        nargs="+",
        metavar="PROFILE",
        default=[],
        help="only these profiles' raw files are new: the machine and date of the existing "
        "results.json stay the page's, and this machine is named for these profiles",
    )
    parser.add_argument("--added-real-kubelet", action="store_true", help="the real-kubelet runs are new: as --added, for the real-kubelet rows")
    parser.add_argument(
        "--summary",
        type=Path,
        help="also write the summary section of this page (docs/benchmarks/summary.md), between its bench-summary markers",
    )
    args = parser.parse_args()
    raw = args.out / "raw"
    previous = args.out / "results.json"
    last_run = json.loads((raw / "make-bench.json").read_text()) if (raw / "make-bench.json").exists() else None
    results = results_module.build(raw, list(profiles.ALL_PROFILES), kubernetes_version(last_run, previous))
    runs = results_module.timeline_runs(raw)
    real = [r for r in runs if results_module.victim_kubelet(r) == results_module.REAL_KUBELET]
    new_runs = [r for r in runs if r["profile"] in args.added and r not in real] + (real if args.added_real_kubelet else [])
    labels = list(args.added) + ([real_kubelet_label(p) for p in dict.fromkeys(r["profile"] for r in real)] if args.added_real_kubelet else [])
    if labels and previous.exists():
        dates = [r["date"] for r in new_runs if r.get("date")]
        results = with_added_machine(json.loads(previous.read_text()), results, labels, max(dates, default=None))
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    raw_cost = json.loads((raw / "cost.json").read_text()) if (raw / "cost.json").exists() else []
    plots.draw_all(results, args.out, {key: r["requested_heartbeat_rps"] for key, r in cost_by_profile(raw_cost).items()})
    raw_incident = json.loads((raw / "incident.json").read_text()) if (raw / "incident.json").exists() else None
    readme = args.out / "README.md"
    findings = "## Findings\n\n(to be written from the measurements)"
    if readme.exists() and FINDINGS_START in readme.read_text():
        current = readme.read_text()
        findings = current.split(FINDINGS_START, 1)[1].split(FINDINGS_END, 1)[0]
    readme.write_text(page(results, raw_cost, raw_incident, findings, runs, last_run))
    print(f"report: {args.out / 'results.json'}, {readme}")
    if args.summary:
        args.summary.write_text(with_summary_section(args.summary.read_text(), summary_section(results, raw_cost, last_run, runs)))
        print(f"report: {args.summary}'s summary section")
    return 0


if __name__ == "__main__":
    sys.exit(main())
