"""results.json is built only from measured runs, with the issue's exact fields."""

import json

import jsonschema
import pytest
import results


def run(profile, remediated, milestones, cap=90.0, disturbed=(), attempts=None):
    entry = {"profile": profile, "remediated": remediated, "milestones": milestones, "cap_s": cap,
             "disturbed": list(disturbed)}
    if attempts is not None:
        entry["playbook_attempts"] = attempts
    return entry


OK = [{"rc": 2}, {"rc": 0}]


def test_spread_is_median_min_max_of_observed_values_and_percentiles_of_every_run():
    # the run that never reached it is the slowest of four: p95 (rank 4) falls on it, p50 (rank 2) does not
    assert results.spread([3.0, 1.0, 2.0, None]) == {"median_s": 2.0, "p50_s": 2.0, "p95_s": None, "min_s": 1.0, "max_s": 3.0}
    twenty = [float(n) for n in range(1, 20)] + [None]  # one of 20 never reached: p95 (rank 19) is the 19th
    assert results.spread(twenty)["p95_s"] == 19.0
    assert results.spread([*twenty[:18], None, None])["p95_s"] is None
    # an even n: the median averages the middle two, the nearest-rank p50 is the lower one
    assert results.spread([1.0, 4.0]) == {"median_s": 2.5, "p50_s": 1.0, "p95_s": 4.0, "min_s": 1.0, "max_s": 4.0}


def test_spread_of_nothing_observed_is_null():
    assert results.spread([None, None]) == {"median_s": None, "p50_s": None, "p95_s": None, "min_s": None, "max_s": None}


def test_percentile_is_the_nearest_rank_an_observed_value_never_interpolated():
    twenty = [float(v) for v in range(20, 0, -1)]  # 20.0 .. 1.0, unsorted
    assert results.percentile(twenty, 95) == 19.0  # rank ceil(0.95 * 20) = 19
    assert results.percentile(twenty, 50) == 10.0  # rank 10
    assert results.percentile(twenty, 100) == 20.0
    assert results.percentile(twenty[:19], 95) == 20.0  # 19 runs: rank ceil(18.05) = 19, the maximum
    assert results.percentile([7.5], 95) == results.percentile([7.5], 50) == 7.5  # one run: that run
    assert results.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == 5.0  # small n: p95 is the maximum
    assert results.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0
    with pytest.raises(ValueError):
        results.percentile([], 95)
    with pytest.raises(ValueError):
        results.percentile([1.0], 0)


def test_metrics_come_from_the_right_kind_of_run_one_row_per_trigger():
    runs = [
        run("fast", False, {"not_ready": 4.0, "deployment_replaced": 30.0, "statefulset_replaced_unremediated": None}),
        run("fast", True, {"not_ready": 6.0, "statefulset_replaced": 70.0}, attempts=OK),
    ]
    rows = results.timeline_entries(runs, ["fast"])
    alone = {e["metric"]: e for e in rows if e["trigger"] == "none"}
    watch = {e["metric"]: e for e in rows if e["trigger"] == "bench-watch"}  # remediated, recorded before `trigger`
    assert alone["not_ready"]["runs"] == 1 and alone["not_ready"]["median_s"] == 4.0
    assert watch["not_ready"]["runs"] == 1 and watch["not_ready"]["median_s"] == 6.0
    assert alone["deployment_replaced"]["runs"] == 1 and alone["deployment_replaced"]["median_s"] == 30.0
    assert "deployment_replaced" not in watch and "statefulset_replaced" not in alone
    assert watch["statefulset_replaced"]["runs"] == 1 and watch["statefulset_replaced"]["median_s"] == 70.0


def node_watch_run(milestones, cap=90.0):
    return {**run("fast", True, milestones, cap=cap), "trigger": "node-watch.yml"}


def test_node_watch_runs_are_a_row_of_their_own_beside_the_bench_watch_row():
    runs = [node_watch_run({"not_ready": 4.0, "deployment_replaced": 20.0, "statefulset_replaced": 24.0}),
            node_watch_run({"not_ready": 5.0, "deployment_replaced": 21.0, "statefulset_replaced": None}),
            {**run("fast", True, {"not_ready": 4.5, "statefulset_replaced": 31.0}, attempts=OK), "trigger": "bench-watch"}]
    rows = results.timeline_entries(runs, ["fast"])
    by = {(e["trigger"], e["metric"]): e for e in rows}
    assert {e["trigger"] for e in rows} == {"node-watch.yml", "bench-watch"}
    shipped = by[("node-watch.yml", "statefulset_replaced")]
    # rulebook-led: a run whose failover never came is counted (not reached), not left out
    assert shipped["runs"] == 2 and shipped["median_s"] == 24.0 and "1 of 2" in shipped["note"]
    assert by[("node-watch.yml", "deployment_replaced")]["median_s"] == 20.5  # node-outage deletes it too
    assert by[("bench-watch", "statefulset_replaced")]["median_s"] == 31.0
    assert ("bench-watch", "deployment_replaced") not in by


def test_run_trigger_names_the_rulebook_file_also_for_runs_recorded_before():
    assert results.run_trigger({"remediated": True, "trigger": "power-event"}) == "power-events.yml"
    assert results.run_trigger({"remediated": True, "trigger": "node-watch.yml"}) == "node-watch.yml"
    assert results.run_trigger({"remediated": True}) == "bench-watch"
    assert results.run_trigger({"remediated": False}) == "none"


def event_led_run(milestones, cap=90.0):
    return {**run("power-event", True, milestones, cap=cap), "trigger": "power-event", "taint_while_ready": True}


def test_event_led_runs_give_every_milestone_but_the_unremediated_one():
    runs = [event_led_run({"not_ready": 45.0, "deployment_replaced": 12.0, "statefulset_replaced": 14.0,
                           "out_of_service_taint": 9.0}),
            event_led_run({"not_ready": 47.0, "deployment_replaced": 14.0, "statefulset_replaced": 16.0})]
    entries = {e["metric"]: e for e in results.timeline_entries(runs, ["power-event"])}
    # deployment_replaced of a heartbeat profile comes from unremediated runs only; here from the event-led ones
    assert entries["deployment_replaced"]["runs"] == 2 and entries["deployment_replaced"]["median_s"] == 13.0
    assert entries["statefulset_replaced"]["median_s"] == 15.0
    assert entries["not_ready"]["median_s"] == 46.0  # recorded though it came after the replacement
    assert "statefulset_replaced_unremediated" not in entries
    assert "out_of_service_taint" not in entries  # raw only: results.json keeps the issue's metrics


def test_an_event_led_run_whose_failover_never_came_is_counted_not_left_out():
    runs = [event_led_run({"statefulset_replaced": 14.0}), event_led_run({"not_ready": 45.0})]
    entry = next(e for e in results.timeline_entries(runs, ["power-event"]) if e["metric"] == "statefulset_replaced")
    assert entry["runs"] == 2 and entry["median_s"] == 14.0 and "1 of 2" in entry["note"]


def test_never_replaced_is_null_with_a_note_naming_the_cap():
    runs = [run("kubernetes-default", False, {"statefulset_replaced_unremediated": None}, cap=400.0)] * 2
    entry = next(e for e in results.timeline_entries(runs, ["kubernetes-default"])
                 if e["metric"] == "statefulset_replaced_unremediated")
    assert entry["median_s"] is None and entry["runs"] == 2
    assert "never happened" in entry["note"] and "400s" in entry["note"]


def test_partly_reached_milestone_says_in_how_many_runs():
    runs = [run("fast", False, {"deployment_replaced": 20.0}), run("fast", False, {"deployment_replaced": None})]
    entry = next(e for e in results.timeline_entries(runs, ["fast"]) if e["metric"] == "deployment_replaced")
    assert entry["median_s"] == 20.0 and "1 of 2" in entry["note"]


def test_disturbed_runs_and_failed_playbooks_are_left_out():
    runs = [
        run("fast", False, {"not_ready": 100.0}, disturbed=["ng-worker2 NotReady during the run"]),
        run("fast", False, {"not_ready": 4.0}),
        run("fast", True, {"not_ready": 5.0}, attempts=[{"rc": 2}]),
    ]
    rows = results.timeline_entries(runs, ["fast"])
    entries = {e["metric"]: e for e in rows if e["trigger"] == "none"}
    assert entries["not_ready"]["runs"] == 1 and entries["not_ready"]["max_s"] == 4.0
    entries = {e["metric"]: e for e in rows if e["trigger"] == "bench-watch"}
    assert entries["not_ready"]["max_s"] == 5.0
    assert entries["statefulset_replaced"]["runs"] == 0
    assert "never succeeded" in entries["statefulset_replaced"]["note"]


def test_build_writes_the_issue_schema(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "timelines.json").write_text(json.dumps([run("fast", False, {"not_ready": 4.0})]))
    (raw / "cost.json").write_text(json.dumps([{"profile": "fast", "nodes": 100, "write_rps": 1.5,
                                                "write_bytes_per_s": 10.0, "extra": "dropped"}]))
    built = results.build(raw, ["fast"], "1.35.4")
    assert set(built) == {"kubernetes_version", "machine", "date", "timelines", "cost", "incident"}
    assert built["cost"] == [{"profile": "fast", "nodes": 100, "write_rps": 1.5, "write_bytes_per_s": 10.0}]
    assert built["incident"]["own_seconds"] is None and built["incident"]["note"]


def test_schema_rejects_a_timeline_without_runs():
    document = {"kubernetes_version": "1.35.4", "machine": {}, "date": "x", "cost": [],
                "incident": {"pods": 1, "cluster_nodes": 1, "cluster_pods": 1, "own_seconds": None, "api_requests": None},
                "timelines": [{"profile": "fast", "metric": "not_ready", "median_s": 1, "min_s": 1, "max_s": 1}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, results.SCHEMA)


def test_runs_of_every_private_lab_are_merged(tmp_path):
    (tmp_path / "timelines-ngbfast.json").write_text(json.dumps([run("fast", False, {"not_ready": 4.0})]))
    (tmp_path / "timelines-ngbseed.json").write_text(json.dumps([run("seed-001", False, {"not_ready": 3.0}),
                                                                 run("seed-001", False, {"not_ready": 5.0})]))
    (tmp_path / "cost.json").write_text("[]")
    entries = results.timeline_entries(results.timeline_runs(tmp_path), ["seed-001", "fast"])
    not_ready = [(e["profile"], e["runs"], e["median_s"]) for e in entries if e["metric"] == "not_ready"]
    assert not_ready == [("seed-001", 2, 4.0), ("fast", 1, 4.0)]


def test_a_profile_the_model_refuses_is_not_a_cost_entry():
    raw = [{"profile": "aggressive", "nodes": 1000, "refused": "[heartbeat-budget] ..."},
           {"profile": "fast", "nodes": 1000, "write_rps": 110.0, "write_bytes_per_s": 9.0}]
    assert results.cost_entries(raw) == [{"profile": "fast", "nodes": 1000, "write_rps": 110.0, "write_bytes_per_s": 9.0}]


def real(entry):
    return {**entry, "victim": "ng-worker4", "victim_kubelet": "real"}


def test_real_kubelet_runs_are_rows_of_their_own_never_mixed_into_the_stand_in_rows():
    runs = [run("fast", False, {"not_ready": 4.0}), run("fast", False, {"not_ready": 6.0}),
            real(run("fast", False, {"not_ready": 10.0}))]
    rows = [(e["profile"], e.get("kubelet"), e["runs"], e["median_s"])
            for e in results.timeline_entries(runs, ["fast"]) if e["metric"] == "not_ready"]
    assert rows == [("fast", None, 2, 5.0), ("fast", "real", 1, 10.0)]
    kinds = [results.entry_kubelet(e) for e in results.timeline_entries(runs, ["fast"])]
    assert kinds == sorted(kinds, key=["stand-in", "real"].index) and set(kinds) == {"stand-in", "real"}  # stand-ins first


def test_runs_without_victim_kubelet_are_stand_in_runs():
    assert results.victim_kubelet(run("fast", False, {})) == "stand-in"
    assert results.victim_kubelet(real(run("fast", False, {}))) == "real"


def test_real_kubelet_rows_validate_and_keep_their_notes(tmp_path):
    (tmp_path / "timelines-ngbkubelet.json").write_text(json.dumps(
        [real(run("kubernetes-default", False, {"not_ready": 45.0, "statefulset_replaced_unremediated": None}, cap=400.0))]))
    built = results.build(tmp_path, ["kubernetes-default"], "1.35.4")
    unremediated = next(e for e in built["timelines"] if e["metric"] == "statefulset_replaced_unremediated")
    assert unremediated["kubelet"] == "real" and "never happened" in unremediated["note"]
    assert not [e for e in built["timelines"] if "kubelet" not in e]


def test_every_timeline_row_names_its_trigger_and_percentiles_and_the_schema_requires_them(tmp_path):
    (tmp_path / "timelines.json").write_text(json.dumps(
        [run("fast", False, {"not_ready": 4.0}), node_watch_run({"not_ready": 5.0, "statefulset_replaced": 24.0})]))
    built = results.build(tmp_path, ["fast"], "1.37.2")
    assert all({"trigger", "p50_s", "p95_s", "median_s", "min_s", "max_s", "runs"} <= set(e) for e in built["timelines"])
    document = {**built, "timelines": [{k: v for k, v in built["timelines"][0].items() if k != "trigger"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, results.SCHEMA)
    document = {**built, "timelines": [{k: v for k, v in built["timelines"][0].items() if k != "p95_s"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, results.SCHEMA)
    document = {**built, "timelines": [{**built["timelines"][0], "trigger": "alert"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, results.SCHEMA)
