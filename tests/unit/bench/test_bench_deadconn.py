"""bench/deadconn.py: the dead-connection measurements are summarised next to the model's prediction."""

import json

import deadconn
import jsonschema
import pytest


def record(setting, kind, measured, outcome="error", error="ETIMEDOUT"):
    return {"setting": setting, "kind": kind, "measured_s": measured, "outcome": outcome,
            "error": error if outcome == "error" else None}


def entry(rows, setting, metric):
    return next(row for row in rows if row["setting"] == setting and row["metric"] == metric)


def test_each_setting_gets_the_model_prediction_of_its_own_sysctls():
    assert deadconn.sysctls("aggressive") == {"tcp_retries2": 6, "tcp_keepalive_time": 15,
                                              "tcp_keepalive_intvl": 5, "tcp_keepalive_probes": 3}
    assert deadconn.sysctls("kubernetes-default")["tcp_retries2"] == 15
    assert deadconn.predictions(deadconn.sysctls("aggressive"))["data"] == pytest.approx(25.4)
    assert deadconn.predictions(deadconn.sysctls("aggressive"))["idle"] == 30
    assert deadconn.predictions(deadconn.sysctls("seed-000"))["idle"] == 30 + 30 * 5


def test_summary_is_median_min_max_and_difference_to_the_model():
    records = [record("aggressive", "data", value) for value in (26.6, 26.0, 27.2)]
    row = entry(deadconn.summarise(records, ["aggressive"]), "aggressive", "dead_connection_data")
    assert (row["median_s"], row["min_s"], row["max_s"], row["runs"]) == (26.6, 26.0, 27.2, 3)
    assert row["predicted_s"] == pytest.approx(25.4)
    assert row["difference_pct"] == pytest.approx(4.7)
    assert row["errors"] == ["ETIMEDOUT"]
    assert "note" not in row


def test_a_connection_that_never_failed_is_counted_out_with_a_note():
    records = [record("fast", "idle", 60.4), record("fast", "idle", None, outcome="open")]
    row = entry(deadconn.summarise(records, ["fast"]), "fast", "dead_connection_idle")
    assert row["runs"] == 1
    assert row["median_s"] == 60.4
    assert row["note"] == "1 of 2 connection(s) saw no error within the limit"


def test_stock_keepalive_is_recorded_as_not_measured_with_its_prediction():
    row = entry(deadconn.summarise([], ["kubernetes-default"]), "kubernetes-default", "dead_connection_idle")
    assert row["median_s"] is None
    assert row["predicted_s"] == 7200 + 9 * 75
    assert row["note"].startswith("not measured")


def test_results_json_carries_the_summary_and_validates_it(tmp_path):
    import results

    records = [record("fast", "data", value, error="EHOSTUNREACH") for value in (52.3, 52.9)]
    (tmp_path / "dead-connections.json").write_text(json.dumps({"summary": deadconn.summarise(records, ["fast"])}))
    built = results.build(tmp_path, ["fast"], "1.35.4")
    data = entry(built["dead_connections"], "fast", "dead_connection_data")
    assert (data["median_s"], data["runs"], data["errors"]) == (52.6, 2, ["EHOSTUNREACH"])
    broken = dict(built, dead_connections=[dict(data, metric="dead_connection_other")])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, results.SCHEMA)


def sample(t, total_retrans, backoff, rto_ms=204.0, probes=0):
    return {"t": t, "total_retrans": total_retrans, "backoff": backoff, "rto_ms": rto_ms, "probes": probes}


def test_kernel_facts_find_the_tail_loss_probe_the_backoff_reverts_and_the_late_probes():
    data = dict(record("kubernetes-default", "data", 925.2, error="EHOSTUNREACH"), predicted_s=924.6,
                rto_before_ms=204.0, user_timeout_ms=0, sysctls=deadconn.sysctls("kubernetes-default"),
                neighbour=[{"t_since_off": 8.2, "line": "10.89.77.102 dev eth0 FAILED"}],
                timeline=[sample(0.0, 0, 0), sample(0.215, 1, 0), sample(0.42, 2, 1), sample(13.4, 7, 6),
                          sample(16.5, 7, 5), sample(120.0, 30, 6), sample(126.6, 31, 6)])
    idle = dict(record("fast", "idle", 60.8), predicted_s=60, rto_before_ms=204.0, user_timeout_ms=0,
                sysctls=deadconn.sysctls("fast"), neighbour=[],
                timeline=[sample(30.6, 0, 0, probes=1), sample(40.8, 0, 0, probes=2), sample(51.0, 0, 0, probes=3)])
    facts = deadconn.kernel_facts({"measurements": [data, idle]})
    assert (facts["tlp_count"], facts["tlp_s"]) == (1, 0.215)
    assert facts["reverts"] == 1
    assert facts["stock_interval_s"] == pytest.approx(6.6)
    assert facts["probe_late_pct"] == pytest.approx(2.0)
    assert (facts["before_bound"], facts["past_bound_max_s"]) == (0, pytest.approx(0.6))
    assert facts["arp_failed_s"] == [8.2, 8.2]
    assert facts["errors"] == {"kubernetes-default data": {"EHOSTUNREACH": 1}, "fast idle": {"ETIMEDOUT": 1}}


def test_the_benchmark_page_shows_the_summary_the_target_and_links_the_details():
    import report

    summary = deadconn.summarise([record("fast", "data", 54.3), record("fast", "idle", 60.8)], ["fast"])
    lines = report.dead_connection_lines({"dead_connections": summary})
    assert "[dead-connections.md](dead-connections.md)" in lines[0]
    assert "| fast | data | tcp_retries2=7 | 51 | 54.3 (54.3-54.3) | 1 | +6.5 % | ETIMEDOUT |" in lines[-1]
    assert report.dead_connection_lines({})[0].startswith("Not measured")
    assert "**met**" in deadconn.target_line(summary)
    assert "**missed** by fast dead_connection_data (+13.7 %)" in deadconn.target_line(
        deadconn.summarise([record("fast", "data", 58.0)], ["fast"]))


def test_independent_runs_get_a_power_off_each_but_stock_shares_one(monkeypatch):
    calls = []
    monkeypatch.setattr(deadconn, "measure_power_off",
                        lambda lane, client, server, setting, runs, first_run: calls.append((setting, runs, first_run)) or [])
    deadconn.measure_setting("l", "c", "s", "fast", 3, independent=True)
    deadconn.measure_setting("l", "c", "s", "kubernetes-default", 3, independent=True)
    deadconn.measure_setting("l", "c", "s", "fast", 3, independent=False)
    assert calls == [("fast", 1, 1), ("fast", 1, 2), ("fast", 1, 3), ("kubernetes-default", 3, 1), ("fast", 3, 1)]


def test_merge_combines_runs_of_different_settings_and_summarises_again(tmp_path, monkeypatch):
    def part(name, setting, values):
        raw = {"kernel": "k", "started": f"2026-11-23T08:0{len(values)}:00Z", "duration_s": 60 * len(values), "runs_per_setting": len(values),
               "method": f"m-{setting}", "lanes": [{"name": setting}], "errors": [], "settings": [setting],
               "measurements": [dict(record(setting, "data", v), run=i + 1) for i, v in enumerate(values)]}
        path = tmp_path / name
        path.write_text(json.dumps(raw))
        return str(path)

    out = tmp_path / "merged.json"
    monkeypatch.setattr("sys.argv", ["deadconn.py", "--merge", part("a.json", "fast", [54.3, 54.5]),
                                     part("b.json", "kubernetes-default", [925.2]), "--out", str(out)])
    assert deadconn.main() == 0
    merged = json.loads(out.read_text())
    assert merged["settings"] == ["kubernetes-default", "fast"]
    assert [r["setting"] for r in merged["measurements"]] == ["kubernetes-default", "fast", "fast"]
    assert entry(merged["summary"], "fast", "dead_connection_data")["median_s"] == 54.4
    assert entry(merged["summary"], "kubernetes-default", "dead_connection_data")["runs"] == 1
    assert merged["method"] == "m-fast; m-kubernetes-default"
    # fast: 08:02 + 120 s, stock: 08:01 + 60 s: from 08:01 to 08:04
    assert (merged["started"], merged["duration_s"]) == ("2026-11-23T08:01:00Z", 180)
    assert [part["settings"] for part in merged["parts"]] == [["fast"], ["kubernetes-default"]]
