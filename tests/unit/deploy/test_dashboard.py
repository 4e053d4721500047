"""The Grafana dashboard (deploy/monitoring/nodeguard-dashboard.json) reads the series the alert rules read.

Every query's metrics are input series of the promtool rule tests (extensions/prometheus/nodeguard-alerts.test.yml),
so a panel cannot ask for a metric the alerts were never tested on (a misspelt or renamed kube-state-metrics series
shows an empty panel, not an error). promtool checks that every query parses.
"""

from __future__ import annotations

import json
import re

import pytest
from monitoring import MONITORING, check_rule_file, series_metrics

DASHBOARD = MONITORING / "nodeguard-dashboard.json"
# What in a PromQL expression is not a metric name: operators and modifiers spelt as words.
KEYWORDS = {"and", "or", "unless", "bool", "offset"}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def panels(items: list) -> list:
    """Every panel, rows' panels included."""
    return [p for item in items for p in [item, *panels(item.get("panels", []))]]


def queries() -> list:
    return [t["expr"] for p in panels(dashboard()["panels"]) for t in p.get("targets", [])]


def metric_names(expr: str) -> set:
    """The metric names of a PromQL expression: every identifier left once strings, label matchers, ranges,
    grouping label lists, function and aggregation calls and keywords are taken out."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\b[A-Za-z_]\w*\s*\(", "(", text)
    return {name for name in re.findall(r"\b[A-Za-z_:][\w:]*", text) if name not in KEYWORDS}


def test_metric_names_finds_the_metrics_and_nothing_else() -> None:
    expr = 'count by (node) (max by (namespace, pod) (kube_pod_deletion_timestamp{x="a{b}"}) * on (pod) group_left (node) kube_pod_info) and up or vector(0)'
    assert metric_names(expr) == {"kube_pod_deletion_timestamp", "kube_pod_info", "up"}


def test_the_dashboard_has_queries() -> None:
    assert len(queries()) >= 6


@pytest.mark.parametrize("expr", queries())
def test_every_query_reads_only_series_the_rule_tests_have(expr: str) -> None:
    names = metric_names(expr)
    assert names, f"no metric in {expr!r}"
    assert names <= series_metrics(), f"not in nodeguard-alerts.test.yml's input series: {sorted(names - series_metrics())}"


def test_every_query_is_valid_promql(tmp_path) -> None:
    rules = [{"record": f"nodeguard:dashboard_query_{i}:value", "expr": expr} for i, expr in enumerate(queries())]
    result = check_rule_file([{"name": "dashboard", "rules": rules}], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_panels_query_the_chosen_prometheus() -> None:
    board = dashboard()
    (variable,) = [v for v in board["templating"]["list"] if v["type"] == "datasource"]
    assert variable["query"] == "prometheus"
    source = {"type": "prometheus", "uid": "${" + variable["name"] + "}"}
    for panel in panels(board["panels"]):
        assert panel["datasource"] == source, panel["title"]
        assert all(t["datasource"] == source for t in panel.get("targets", [])), panel["title"]


def test_panel_ids_are_unique() -> None:
    ids = [p["id"] for p in panels(dashboard()["panels"])]
    assert len(ids) == len(set(ids))
