"""The EDA-controller variants of the shipped rulebooks (extensions/eda/rulebooks/*-controller.yml): generated from
their base rulebook by scripts/controller-rulebooks.py and not edited since, parsed by ansible-rulebook, and every
job they launch is a job template that docs/awx/configure-awx.yml creates."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_rulebook.json_generator import generate_dict_rulesets
from ansible_rulebook.rules_parser import parse_rule_sets
from ansible_rulebook.validators import Validate

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "controller-rulebooks.py"
RULEBOOKS = REPO / "extensions" / "eda" / "rulebooks"
VARS = REPO / "extensions" / "eda" / "vars"


def script():
    spec = importlib.util.spec_from_file_location("controller_rulebooks", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BASES = script().BASES


def test_every_shipped_rulebook_has_a_variant_and_none_drifted() -> None:
    shipped = {p.stem for p in RULEBOOKS.glob("*.yml") if not p.stem.endswith("-controller")}
    assert shipped == set(BASES)
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("base", BASES)
def test_the_variant_parses_in_ansible_rulebook(base: str) -> None:
    rulebook = yaml.safe_load((RULEBOOKS / f"{base}-controller.yml").read_text())
    Validate.rulebook(rulebook)  # ansible-rulebook's JSON schema
    variables = {**yaml.safe_load((VARS / f"{base}.yml").read_text()), "awx_organization": "Default", "NODEGUARD_EDA_TOKEN": "x"}
    rulesets = parse_rule_sets(rulebook, variables)
    generate_dict_rulesets(rulesets, variables)  # what the Drools engine is given


@pytest.mark.parametrize("base", BASES)
def test_the_variant_launches_only_configure_awx_job_templates_with_the_bases_values(base: str) -> None:
    templates = script().job_templates()
    assert set(templates.values()) == {"nodeguard node-outage", "nodeguard node-recover"}
    (variant,) = yaml.safe_load((RULEBOOKS / f"{base}-controller.yml").read_text())
    (original,) = yaml.safe_load((RULEBOOKS / f"{base}.yml").read_text())
    assert variant["sources"] == original["sources"]
    assert [r["name"] for r in variant["rules"]] == [r["name"] for r in original["rules"]]
    for mine, theirs in zip(variant["rules"], original["rules"], strict=True):
        assert "run_playbook" not in str(mine.get("actions") or mine["action"])
        if "run_playbook" not in (theirs.get("action") or {}):
            assert mine == theirs
            continue
        launch = mine["action"]["run_job_template"]
        run = theirs["action"]["run_playbook"]
        assert launch["name"] in templates.values()
        assert launch["organization"] == "{{ awx_organization }}"
        assert launch["include_events"] is False  # the event is not sent along: only the checked values
        assert launch["job_args"] == {"extra_vars": run["extra_vars"]}
        # node-outage's outcome (set_stats: the job's artifacts) comes back as the base's does: it arms the cool-down
        assert launch.get("post_events", False) == run.get("post_events", False)
        # a failed job is retried as the base retries a failed run (a transient failure within the dedupe window)
        assert (launch.get("retries"), launch.get("delay")) == (run.get("retries"), run.get("delay"))
        assert mine["condition"] == theirs["condition"] and mine.get("throttle") == theirs.get("throttle")
