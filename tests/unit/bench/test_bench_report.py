"""The page's power-event parts: its targets (issue 13) and which machine measured which numbers."""

from pathlib import Path

import pytest
import report


def verdict(value, limit):
    return "met" if value <= limit else "missed"


def cost(profile, requested, achieved, etcd_bytes=1e6, saturated=()):
    return {"profile": profile, "nodes": 1000, "seconds": 300.0, "requested_heartbeat_rps": requested,
            "achieved_heartbeat_rps": achieved, "etcd_received_bytes_per_s": etcd_bytes, "saturated": list(saturated)}


def test_power_event_targets_are_15_s_after_power_off_and_a_fifth_of_seed_001s_heartbeats_got():
    medians = {("power-event", "statefulset_replaced"): 14.0, ("power-event", "deployment_replaced"): 16.0}
    by_cost = {("power-event", 1000): cost("power-event", 103.33, 101.0, 0.1e6),
               ("seed-001", 1000): cost("seed-001", 1100, 1050, 1.6e6)}
    timing, heartbeats = report.power_event_target_lines(lambda p, m: medians[(p, m)], verdict, by_cost)
    assert "`statefulset_replaced` met" in timing and "`deployment_replaced` missed" in timing
    assert "by heartbeat writes got **met** (ratio 0.10 ≤ 0.2), by bytes to etcd **met** (ratio 0.06 ≤ 0.2)" in heartbeats
    assert "101 vs 1050 heartbeat writes/s, 0.10 vs 1.60 MB/s, in 300 s and 300 s windows" in heartbeats
    assert "modelled (writes asked for): 103.33 vs 1100 writes/s, ratio 0.09" in heartbeats


def test_the_heartbeat_verdict_is_on_what_was_got_not_what_was_asked_for():
    # asked for, the ratio is 0.09; a seed-001 that kept up but got less than the model says makes it 0.37: missed
    by_cost = {("fast", 1000): cost("fast", 103.33, 101.0, 0.1e6), ("seed-001", 1000): cost("seed-001", 1100, 273.0)}
    line = report.cost_target_line(by_cost)
    assert "by heartbeat writes got **missed** (ratio 0.37 > 0.2), by bytes to etcd **met** (ratio 0.10 ≤ 0.2)" in line
    assert "ratio 0.09" in line and "saturated" not in line


def test_a_ratio_missed_only_because_seed_001_saturated_the_lab_says_so():
    starved = cost("seed-001", 1100, 273.0, saturated=["heartbeats got 273 of 1100 writes/s asked (25%)"])
    line = report.cost_target_line({("fast", 1000): cost("fast", 103.33, 101.0), ("seed-001", 1000): starved})
    assert "by heartbeat writes got **missed on this lab** (ratio 0.37 > 0.2)" in line
    assert "seed-001 saturated the lab (heartbeats got 273 of 1100 writes/s asked (25%))" in line
    assert "the measured ratios overstate the other's share" in line


def test_power_event_heartbeat_target_without_both_measurements_says_not_measured():
    lines = report.power_event_target_lines(lambda p, m: 10.0, verdict, {("power-event", 1000): cost("power-event", 103.33, 100.0)})
    assert lines[-1].endswith("not measured")


def test_the_cost_table_marks_a_saturated_window_and_a_shared_one():
    window = {"seconds": 300.0, "write_rps": 110.0, "achieved_heartbeat_rps": 101.0, "requested_heartbeat_rps": 103.33,
              "status_reports_per_node": 1.0, "write_bytes_per_s": 9.0, "etcd_received_bytes_per_s": 5.0,
              "etcd_db_growth_bytes_per_min": 2048.0, "not_ready_nodes_at_end": 0, "load_average_1m": [1.0, 2.0]}
    raw = [
        {**window, "profile": "kubernetes-default", "nodes": 1000, "saturated": []},
        {**window, "profile": "power-event", "nodes": 1000, "saturated": [], "same_settings_as": "kubernetes-default"},
        {**window, "profile": "seed-001", "nodes": 1000, "saturated": ["25 node(s) NotReady at the end"]},
        {"profile": "aggressive", "nodes": 1000, "refused": "the heartbeat budget"},
    ]
    rows = {line.split(" | ")[0].strip("| "): line for line in report.cost_table(raw)[2:]}
    assert rows["kubernetes-default"].endswith("| no |") and "| 300 s |" in rows["kubernetes-default"]
    assert "300 s (the same settings as kubernetes-default: its window)" in rows["power-event"]
    assert rows["seed-001"].endswith("| **yes**: 25 node(s) NotReady at the end |")
    assert "not measured: the model refuses it (the heartbeat budget)" in rows["aggressive"]


def test_added_profiles_keep_the_earlier_machine_and_name_this_one_for_them():
    previous = {"date": "2026-11-22T07:59:50Z", "machine": {"cpu_model": "Xeon", "kernel": "a"}}
    new = {"date": "2026-11-23T09:00:00Z", "machine": {"cpus": 2, "cpu_model": "EPYC", "kernel": "b"}, "timelines": []}
    merged = report.with_added_machine(previous, new, ["power-event"])
    assert merged["date"] == "2026-11-22T07:59:50Z" and merged["machine"]["cpu_model"] == "Xeon"
    (added,) = merged["machine"]["added"]
    assert added["profiles"] == ["power-event"] and added["cpu_model"] == "EPYC" and added["date"] == "2026-11-23T09:00:00Z"
    # measured again later: one entry per profile set, the newest
    again = report.with_added_machine(merged, {**new, "date": "2026-11-23T10:00:00Z"}, ["power-event"])
    assert [a["date"] for a in again["machine"]["added"]] == ["2026-11-23T10:00:00Z"]


def test_the_added_rows_are_dated_by_their_last_run_not_by_the_page():
    previous = {"date": "2026-11-22T07:59:50Z", "machine": {"cpu_model": "Xeon", "kernel": "a"}}
    new = {"date": "2026-11-23T09:00:00Z", "machine": {"cpus": 2, "cpu_model": "EPYC", "kernel": "b"}, "timelines": []}
    merged = report.with_added_machine(previous, new, ["power-event"], "2026-11-23T08:34:14Z")
    assert merged["machine"]["added"][0]["date"] == "2026-11-23T08:34:14Z"


def test_the_page_says_how_long_the_last_end_to_end_run_took_and_whether_every_part_finished():
    import run_record

    run = run_record.record("2026-11-23T11:32:09Z", 7530, "0.71 0.60 0.71", failed=False, quick=False, commit="75c96f0")
    assert run["finished"] == "2026-11-23T13:37:39Z"
    line = run_record.describe(run)
    assert "`make bench` (commit 75c96f0) took **2 h 05 min**" in line and "every part finished" in line
    failed = run_record.describe({**run, "every_part_finished": False, "seconds": 95})
    assert "took **1 min 35 s**" in failed and "a part failed" in failed
    assert "No end-to-end" in run_record.describe(None)


def row(profile, metric, median, low, high, runs=5, kubelet=None):
    entry = {"profile": profile, "metric": metric, "median_s": median, "min_s": low, "max_s": high, "runs": runs}
    return {**entry, "kubelet": kubelet} if kubelet else entry


def test_a_difference_is_real_minus_stand_in_and_says_whether_the_ranges_are_apart():
    stand_in = row("fast", "not_ready", 4.0, 3.0, 5.0)
    assert report.difference(stand_in, row("fast", "not_ready", 6.0, 5.5, 7.0)) == {"seconds": 2.0, "percent": 50, "apart": True}
    assert report.difference(stand_in, row("fast", "not_ready", 4.5, 5.0, 6.0))["apart"] is False  # 5.0 touches 5.0
    assert report.difference(stand_in, row("fast", "not_ready", 3.0, 1.0, 2.5))["apart"] is True
    assert report.difference(stand_in, row("fast", "not_ready", None, None, None)) is None
    assert report.difference(None, stand_in) is None


def test_the_comparison_puts_the_rows_side_by_side_and_the_main_table_keeps_the_stand_ins():
    results = {"timelines": [row("fast", "not_ready", 4.0, 3.0, 5.0, runs=5),
                             row("fast", "not_ready", 9.0, 8.0, 10.0, runs=3, kubelet="real"),
                             row("fast", "deployment_replaced", 30.0, 29.0, 33.0, runs=5, kubelet="real")]}
    runs = [{"profile": "fast", "victim": "ng-worker4", "victim_kubelet": "real", "load_average_1m": 3.0,
             "date": "2026-11-23T19:00:00Z",
             "heartbeats_at_power_off": {"ng-worker4": {"lease_s": 9.0, "status_s": 1.0},
                                         "ng-worker1": {"lease_s": 2.0, "status_s": 30.0}}}]
    lines = report.kubelet_comparison_lines(results, runs)
    text = "\n".join(lines)
    assert "| `not_ready` | 4 (3-5, n=5) | 9 (8-10, n=3) | +5 s (+125 %), ranges apart |" in lines
    assert "| `deployment_replaced` | not measured | 30 (29-33, n=5) | — |" in lines
    assert "`not_ready` (later on the real kubelet by 5 s)" in text
    assert "| real (the victim) | 9 (9-9, n=1) | 1 (1-1, n=1) |" in lines
    assert "| stand-in (the other workers, at the same read) | 2 (2-2, n=1) | 30 (30-30, n=1) |" in lines
    table = report.timeline_table(results)
    assert table[0] == "| metric | fast |" and "| `not_ready` | 4 (3-5, n=5) |" in table
    assert "| `deployment_replaced` | not measured |" in table  # the real-kubelet row is not in the main table


def test_without_real_kubelet_runs_the_section_says_not_measured():
    assert report.kubelet_comparison_lines({"timelines": [row("fast", "not_ready", 4.0, 3.0, 5.0)]}, [])[0].startswith("Not measured")


def trow(profile, metric, median, trigger, p95=None, runs=3):
    return {"profile": profile, "trigger": trigger, "metric": metric, "median_s": median, "p50_s": median,
            "p95_s": p95 if p95 is not None else median, "min_s": median, "max_s": p95 or median, "runs": runs}


def test_a_column_per_profile_and_trigger_and_the_shipped_trigger_stands_for_the_profile():
    results = {"timelines": [trow("fast", "not_ready", 4.0, "none"),
                             trow("fast", "not_ready", 4.5, "node-watch.yml"),
                             trow("fast", "statefulset_replaced", 24.0, "node-watch.yml", p95=27.0, runs=20),
                             trow("fast", "not_ready", 4.2, "bench-watch"),
                             trow("fast", "statefulset_replaced", 31.0, "bench-watch")]}
    lines = report.timeline_table(results)
    assert lines[0] == "| metric | fast | fast · node-watch.yml | fast · bench-watch |"
    assert "| `statefulset_replaced` | not measured | 24 (p95 27, 24-27, n=20) | 31 (p95 31, 31-31, n=3) |" in lines
    # the model table and the targets read the shipped rulebook's row, never the benchmark's own watch
    lookup = report.timeline_lookup(results)
    assert lookup[("fast", "statefulset_replaced")]["trigger"] == "node-watch.yml"
    assert report.measured_trigger(lookup[("fast", "statefulset_replaced")]) == "node-watch.yml"
    # rows of a results.json from before `trigger` stay readable
    assert report.timeline_lookup({"timelines": [{k: v for k, v in trow("fast", "not_ready", 4.0, "x").items()
                                                  if k != "trigger"}]})[("fast", "not_ready")]["median_s"] == 4.0


def test_every_remediated_run_has_its_phases_on_the_page():
    runs = [{"profile": "fast", "remediated": True, "trigger": "node-watch.yml",
             "phases": {"event_s": 4.6, "rulebook_startup_s": 5.1, "run_start_s": 6.0, "prove_end_s": 25.8, "proofs": ["p"],
                        "proofs_held_s": {"lease-stale": 19.2, "not-ready": 24.6, "off_readings": [9.0, 14.1, 16.0, 18.0, 24.7]},
                        "taint_s": 26.0, "deletes_s": 26.1, "detach_s": 26.9, "replacement_ready_s": 28.0},
             "readings_s": [{"at_s": 8.8, "reading": "lease", "result": "watch started"}, {"at_s": 9.0, "reading": "power", "result": "OFF"}]},
            {"profile": "fast", "remediated": False}]
    lines = report.phase_table(runs)
    assert len(lines) == 3
    assert lines[2] == ("| 1 | fast | node-watch.yml | 4.6 | 5.1 | 6 | 8.8 | lease-stale 19.2, not-ready 24.6; Off 9, 14.1, …, 18, 24.7 "
                        "| 25.8 | 26 | 26.1 | 26.9 | 28 |")
    # a run recorded before the readings were kept
    assert report.proof_moments_cell({}) == "—"
    assert report.phase_table([]) == ["Not measured."]


def test_the_rulebook_targets_judge_p50_and_p95_of_the_shipped_triggers_rows_only():
    rows = [
        {**trow("power-event", "statefulset_replaced", 7.5, "power-events.yml", p95=12.5, runs=20), "p50_s": 7.5},
        {**trow("fast", "statefulset_replaced", 19.0, "node-watch.yml", p95=None, runs=20), "p50_s": 19.0, "p95_s": None},
        # the benchmark's own watch is faster, and is no target's row
        {**trow("fast", "statefulset_replaced", 12.0, "bench-watch", runs=5), "p50_s": 12.0},
        {**trow("kubernetes-default", "statefulset_replaced", 80.0, "node-watch.yml", runs=5), "p50_s": 80.0},
    ]
    power, fast, default = report.rulebook_target_lines({"timelines": rows})
    assert "p50 **met** (7.5 s ≤ 8 s); p95 **missed** by 0.5 s (12.5 s > 12 s) (n=20)" in power
    assert "p50 **met** (19 s ≤ 20 s); p95 **missed**: its rank falls on a run that never reached Ready" in fast
    assert "p50 **missed** by 5.0 s (80 s > 75 s) (n=5, fewer than the 20 runs the target asks for)" in default
    assert "p95" not in default
    (missing,) = report.rulebook_target_lines({"timelines": rows[1:]})[:1]
    assert missing.endswith("`power-event` through `power-events.yml`, StatefulSet RWO pod Ready after power-off: not measured")


def summary_results():
    rows = [
        trow("kubernetes-default", "not_ready", 45.0, "none", runs=5),
        trow("kubernetes-default", "deployment_replaced", 346.0, "none", p95=350.0, runs=5),
        {**trow("kubernetes-default", "statefulset_replaced_unremediated", None, "none", runs=5), "median_s": None},
        trow("kubernetes-default", "statefulset_replaced", 74.0, "node-watch.yml", p95=80.0, runs=20),
        trow("fast", "statefulset_replaced", 12.0, "bench-watch", runs=5),  # the benchmark's own watch: not a README row
        trow("fast", "statefulset_replaced", 19.0, "node-watch.yml", p95=24.0, runs=20),
        trow("power-event", "not_ready", 47.0, "power-events.yml", runs=20),
        trow("power-event", "deployment_replaced", 6.0, "power-events.yml", runs=20),
        trow("power-event", "statefulset_replaced", 7.5, "power-events.yml", p95=11.0, runs=20),
    ]
    machine = {"cpus": 2}
    return {"kubernetes_version": "1.37.2", "machine": machine, "timelines": rows}


def test_the_summary_shows_the_shipped_triggers_rows_with_p50_p95_and_the_targets():
    run = {"started": "2026-11-27T08:00:00Z", "finished": "2026-11-27T10:40:00Z", "seconds": 9600, "load_before": "0.1",
           "every_part_finished": True, "quick": False, "commit": "abc1234", "kubernetes_version": "1.37.2"}
    lines = report.summary_section(summary_results(), [], run)
    text = "\n".join(lines)
    assert "(commit abc1234) took **2 h 40 min**" in lines[0] and "Kubernetes v1.37.2, 2 CPUs" in lines[0]
    assert lines[0].startswith("From [the benchmark page](README.md), ")  # a link from docs/benchmarks/summary.md
    assert ("| Kubernetes defaults | p50 45 s, p95 45 s (n=5) | p50 346 s, p95 350 s, Kubernetes alone (n=5) "
            "| never without remediation (n=5); p50 74 s, p95 80 s with node-watch.yml (n=20) |") in text
    # the benchmark's own watch (12 s) is never the summary's fast row; the shipped trigger's is
    assert "| `fast` preset | not measured | not measured | p50 19 s, p95 24 s with node-watch.yml (n=20) |" in text
    assert "| p50 6 s, p95 6 s, power-events.yml (n=20) | p50 7.5 s, p95 11 s with power-events.yml (n=20) |" in text
    assert "p50 **met** (7.5 s ≤ 8 s); p95 **met** (11 s ≤ 12 s) (n=20)" in text
    assert "p50 **met** (74 s ≤ 75 s) (n=20)" in text
    assert text.endswith("against seed-001's: not measured")
    assert "shared the CPUs" not in text  # no runs: nothing to say about them


def test_the_summary_says_what_load_its_rows_ran_under_and_the_model_from_each_runs_start():
    import profiles

    def run(profile, trigger, first, ready, load, not_ready=None):
        return {"profile": profile, "remediated": True, "trigger": trigger, "load_average_1m": load,
                "milestones": {"not_ready": not_ready, "statefulset_replaced": ready},
                "readings_s": [{"at_s": first, "reading": "lease", "result": "watch started"}]}

    runs = [run("power-event", "power-events.yml", 30.0, 45.0, 20.5), run("power-event", "power-events.yml", 4.0, 20.0, 3.0),
            run("fast", "node-watch.yml", 9.0, 27.0, 9.0, not_ready=4.0), run("fast", "bench-watch", 9.0, 27.0, 99.0, not_ready=4.0)]
    (text,) = [line for line in report.contention_lines(runs, profiles.OVERLAPPED) if line]
    assert "load average at their power-offs was 3-20.5 (median 9)" in text
    assert "median difference is `fast` preset +0.70 s, power event, stock heartbeats -0.30 s" in text
    assert report.contention_lines([], profiles.OVERLAPPED) == []


def test_the_summary_is_replaced_between_its_markers_and_nothing_else_changes():
    page = "# x\n\nbefore\n<!-- bench-summary:start -->\nold table\n<!-- bench-summary:end -->\n\nafter  \n"
    written = report.with_summary_section(page, ["new", "table"])
    assert written == "# x\n\nbefore\n<!-- bench-summary:start -->\nnew\ntable\n<!-- bench-summary:end -->\n\nafter  \n"
    assert report.with_summary_section(written, ["old table"]) == page
    with pytest.raises(ValueError, match="exactly one"):
        report.with_summary_section("no markers\n", ["x"])


def test_the_summary_page_has_the_markers_the_report_writes_between():
    page = (Path(__file__).resolve().parents[3] / "docs" / "benchmarks" / "summary.md").read_text()
    assert report.with_summary_section(page, ["x"]).count("\nx\n") == 1


def test_the_top_level_readme_is_for_users_and_holds_no_generated_benchmark_block():
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert report.SUMMARY_START not in readme and report.SUMMARY_END not in readme


def test_the_pages_kubernetes_version_is_the_measured_runs(tmp_path):
    previous = tmp_path / "results.json"
    assert report.kubernetes_version({"kubernetes_version": "1.37.2"}, previous) == "1.37.2"
    assert report.kubernetes_version(None, previous) == report.profiles.KUBERNETES_VERSION
    previous.write_text('{"kubernetes_version": "1.35.4"}')
    # an older run's record has no version: the page it wrote keeps its own
    assert report.kubernetes_version({"commit": "75c96f0"}, previous) == "1.35.4"


def test_the_plan_runs_every_targeted_row_through_its_shipped_trigger_the_runs_its_target_is_judged_on():
    import profiles
    import timeline

    plan = [line.split() for line in report.plan_lines()]
    assert plan and all(len(fields) == 4 for fields in plan)
    for lab, profile, line_kinds, count in plan:
        assert lab.startswith("ngb") and profile in profiles.ALL_PROFILES, (lab, profile)
        assert set(line_kinds.split(",")) <= set(timeline.KINDS) and count in ("target", "other"), (lab, line_kinds, count)
    # a targeted row comes from a plan line's remediated (rulebook-led) runs, with the target's run count
    targeted = {(profile, count) for _lab, profile, line_kinds, count in plan if "remediated" in line_kinds.split(",")}
    for profile, _trigger, _p50, _p95 in report.RULEBOOK_TARGETS:
        assert (profile, "target") in targeted, profile


def incident_run(nodes, received, gzip=551_000, at_5000=9_900_000):
    return {"pods": 110, "cluster_nodes": nodes, "cluster_pods": 30000, "own_seconds": 20.0, "api_requests": 235,
            "api_bytes_received": received, "node_list_bytes": {"json": 10_953_000, "gzip": gzip},
            "bytes_model": {"at_1000_nodes": received, "at_5000_nodes": at_5000}}


def test_the_incident_bytes_target_is_judged_on_the_1000_node_run_measured_on_the_wire():
    missed = report.incident_bytes_target_line({"runs": [incident_run(100, 400_000), incident_run(1000, 3_200_000)]})
    assert "**missed** (3.20 MB; the full Node list, three reads of 0.55 MB each" in missed
    assert "measured: 3,200,000 B received, 235 requests; the model gives 9.9 MB at 5000 nodes (modelled)" in missed
    assert "**met**, measured: 900,000 B" in report.incident_bytes_target_line({"runs": [incident_run(1000, 900_000)]})
    # only a smaller cluster measured: the 1000-node target is not judged on it
    assert report.incident_bytes_target_line({"runs": [incident_run(100, 400_000)]}).endswith("not measured")
    assert report.incident_bytes_target_line(None).endswith("not measured")
    assert report.incident_table({"runs": [incident_run(1000, 3_200_000)]})[2].count("3,200,000 B (551,000 B)") == 1


def test_a_missed_target_names_what_binds_with_the_models_numbers_and_the_measured_phases():
    rows = [{**trow("power-event", "statefulset_replaced", 19.0, "power-events.yml", p95=21.0, runs=20), "p50_s": 19.0},
            {**trow("fast", "statefulset_replaced", 19.0, "node-watch.yml", p95=26.0, runs=20), "p50_s": 19.0}]

    def run(profile, trigger, taint, ready, kubelet=None):
        phases = {"event_s": 0.2, "run_start_s": 1.4, "prove_end_s": taint - 0.5, "taint_s": taint, "replacement_ready_s": ready}
        return {"profile": profile, "remediated": True, "trigger": trigger, "phases": phases,
                **({"victim_kubelet": kubelet} if kubelet else {})}

    runs = [run("power-event", "power-events.yml", 18.0, 19.0), run("power-event", "power-events.yml", 18.4, 20.0),
            run("power-event", "power-events.yml", 30.0, 31.0, kubelet="real"),  # not the stand-in row's run
            {**run("power-event", "power-events.yml", 40.0, 41.0), "disturbed": ["ng-worker2"]},  # the row leaves it out
            run("fast", "bench-watch", 10.0, 12.0)]
    power, fast, _default = report.rulebook_target_lines({"timelines": rows}, runs)
    assert "p50 **missed** by 11.0 s" in power
    assert "What binds (model): the Lease watch (Lease watch over at 17.5 s, second Off reading at 9.5 s, taint at 18.3 s)" in power
    assert power.endswith("measured medians over 2 runs: event 0.2 s, node-outage started 1.4 s, proofs held 17.7 s, "
                          "taint 18.2 s, Ready 19.5 s")
    # a met target needs no reason; fast's p50 is met and its p95 missed: it names its NotReady wait, a policy
    assert "NotReady wait 20 s, a policy" in fast and "measured medians" not in fast


def test_each_run_is_predicted_from_its_own_first_check_and_notready():
    """A busy machine starts the proofs late: the run's own moments replace the model's start-up."""
    import profiles

    def run(profile, trigger, first, ready, not_ready=None, **extra):
        return {"profile": profile, "remediated": True, "trigger": trigger,
                "milestones": {"not_ready": not_ready, "statefulset_replaced": ready},
                "readings_s": [{"at_s": first + 0.2, "reading": "power", "result": "OFF"}, {"at_s": first, "reading": "lease", "result": "watch started"}],
                **extra}

    # power-event, stock Lease: watch 10 s + margin 3 s from the first check, then 0.1 + 0.7 + 2.0 s to Ready
    late = run("power-event", "power-events.yml", 30.0, 45.0)
    quick = run("power-event", "power-events.yml", 4.0, 20.0)
    left_out = [run("power-event", "power-events.yml", 4.0, None), {**run("power-event", "power-events.yml", 4.0, 99.0), "disturbed": ["w2"]},
                run("power-event", "power-events.yml", 4.0, 99.0, victim_kubelet="real"), run("fast", "power-events.yml", 4.0, 99.0)]
    got = report.run_differences([late, quick, *left_out], "power-event", "power-events.yml", profiles.OVERLAPPED, profiles.remediated_prediction)
    assert got == [-0.8, 0.2]
    # node-watch: the run's NotReady sets the end of the wait, which binds (fast: 20 s, rounding 0.5 s)
    fast = run("fast", "node-watch.yml", 9.0, 27.0, not_ready=4.0)
    assert report.run_differences([fast], "fast", "node-watch.yml", profiles.OVERLAPPED, profiles.remediated_prediction) == [0.7]
    # a record from before the readings were kept has no first check
    assert report.run_differences([{**fast, "readings_s": []}], "fast", "node-watch.yml", profiles.OVERLAPPED, profiles.remediated_prediction) == []
    results = {"timelines": [{**trow("power-event", "statefulset_replaced", 32.5, "power-events.yml", p95=45.0, runs=2), "p50_s": 20.0}]}
    table = report.remediated_prediction_lines(results, profiles.OVERLAPPED, runs=[late, quick])
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    row = dict(zip(header, [cell.strip() for cell in table[2].strip("|").split("|")], strict=True))
    assert row["each run from its own NotReady and first check: measured minus predicted, median (min-max, n)"] == "-0.30 s (-0.8 to +0.2, n=2)"
    assert row["measured minus predicted"] == "+12.2 s"
