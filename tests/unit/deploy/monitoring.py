"""Shared by the monitoring tests: the alert rule file, its promtool tests, promtool itself."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
RULES_DIR = REPO / "extensions" / "prometheus"
RULES = RULES_DIR / "nodeguard-alerts.yml"
RULE_TESTS = RULES_DIR / "nodeguard-alerts.test.yml"
MONITORING = REPO / "deploy" / "monitoring"


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """promtool's result; a missing promtool fails the test (setup installs it), it is never a skip."""
    path = shutil.which("promtool")
    assert path, "promtool is missing: `make setup` installs the Debian package prometheus (scripts/system-packages.txt)"
    return subprocess.run([path, *args], cwd=cwd, capture_output=True, text=True, check=False)


def alerts() -> dict:
    """{alert name: rule} of the rule file."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}


def rule_tests() -> list:
    return yaml.safe_load(RULE_TESTS.read_text())["tests"]


def series_metrics() -> set:
    """The metric names of every input series of the promtool tests."""
    return {re.match(r"[A-Za-z_:][\w:]*", s["series"]).group(0) for test in rule_tests() for s in test["input_series"]}


def check_rule_file(groups: list, tmp_path: Path) -> subprocess.CompletedProcess:
    """promtool check rules on a file holding these groups."""
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    return promtool("check", "rules", path.name, cwd=tmp_path)
