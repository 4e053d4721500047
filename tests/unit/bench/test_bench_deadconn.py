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
