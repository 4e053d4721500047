"""The page's remediated rows next to the model's predictions (issue 23 item 6), from the committed results.json."""

import json
from pathlib import Path

import profiles
import report

RESULTS = json.loads((Path(__file__).resolve().parents[3] / "docs" / "benchmarks" / "results.json").read_text())


def rows(lines):
    return {line.split(" | ")[0].strip("| "): line.split(" | ") for line in lines[2:]}


def test_every_remediated_row_is_predicted_within_3_s_of_its_measured_median_for_the_code_that_measured_it():
    measured = {
        e["profile"]: e["median_s"]
        for e in RESULTS["timelines"]
        if e["metric"] == "statefulset_replaced" and report.results_module.entry_kubelet(e) == report.results_module.STAND_IN
    }
    assert {"kubernetes-default", "fast", "power-event"} <= set(measured)
    for profile, median in measured.items():
        predicted = profiles.remediated_prediction(profile)[profiles.IN_ORDER]["statefulset_replaced"]["expected"]
        assert abs(predicted - median) <= 3, (profile, predicted, median)


def test_the_untuned_row_waits_60_s_and_the_power_event_row_has_no_notready_wait():
    table = rows(report.remediated_prediction_lines(RESULTS))
    assert table["kubernetes-default"][1:4] == ["bench-watch", "node-watch", "60 s"]
    assert table["fast"][3] == "20 s"
    assert table["power-event"][1:4] == ["power-events.yml", "power-event", "—"]
    assert table["power-event"][5].startswith("12.2 (")


def test_each_row_also_shows_node_outage_today_and_what_its_taint_follows():
    table = rows(report.remediated_prediction_lines(RESULTS))
    for profile in ("kubernetes-default", "fast", "power-event"):
        today = profiles.remediated_prediction(profile)[profiles.OVERLAPPED]
        assert table[profile][7].startswith(f"{today['statefulset_replaced']['expected']:g} (")
        assert table[profile][8].rstrip(" |") == today["binds"]
    assert table["kubernetes-default"][8].startswith("the NotReady wait")
    assert table["power-event"][8].startswith("the Lease watch")


def test_the_section_says_the_measured_rows_predate_the_current_proofs():
    section = "\n".join(report.remediated_prediction_section(RESULTS))
    assert "The measured rows predate node-outage's current proofs" in section and "75c96f0" in section


def test_a_row_with_its_own_trigger_names_it_and_unmeasured_rows_are_left_out():
    results = {
        "timelines": [
            {"profile": "fast", "metric": "statefulset_replaced", "median_s": 30.0, "min_s": 29.0, "max_s": 31.0, "runs": 3, "trigger": "node-watch.yml"},
            {"profile": "balanced", "metric": "statefulset_replaced", "median_s": None, "min_s": None, "max_s": None, "runs": 0},
        ]
    }
    table = rows(report.remediated_prediction_lines(results))
    assert list(table) == ["fast"] and table["fast"][1] == "node-watch.yml"
    assert report.remediated_prediction_section({"timelines": []}) == []


def test_the_section_names_the_unmeasured_alert_path_with_its_prediction():
    section = "\n".join(report.remediated_prediction_section(RESULTS))
    assert "## Remediated rows: the model's prediction against the measurement" in section
    assert "Not measured: the shipped alert path" in section and "`for: 60s`" in section
