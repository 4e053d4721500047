"""The shipped Prometheus alert rules: valid for Prometheus, and they fire exactly in the cases
their unit tests describe (promtool evaluates them over synthetic kube-state-metrics series)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

RULES_DIR = Path(__file__).resolve().parents[3] / "extensions" / "prometheus"


def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: `make setup` installs the Debian package prometheus (scripts/system-packages.txt)"
    return path


def test_rules_are_valid() -> None:
    result = subprocess.run([promtool(), "check", "rules", "nodeguard-alerts.yml"],
                            cwd=RULES_DIR, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 4 rules found" in result.stdout


def test_rules_fire_as_specified() -> None:
    result = subprocess.run([promtool(), "test", "rules", "nodeguard-alerts.test.yml"],
                            cwd=RULES_DIR, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
