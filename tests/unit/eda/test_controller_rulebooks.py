"""The EDA-controller variants of the shipped rulebooks (extensions/eda/rulebooks/*-controller.yml): generated from
their base rulebook by scripts/controller-rulebooks.py and not edited since, parsed by ansible-rulebook, every job
they launch is a job template that docs/awx/configure-awx.yml creates, and every launch, rendered by ansible-rulebook
as it renders an action, passes that template's survey by AWX's rules (awx_survey.py)."""

from __future__ import annotations

import copy
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_rulebook.json_generator import generate_dict_rulesets
from ansible_rulebook.rules_parser import parse_rule_sets
from ansible_rulebook.util import substitute_variables
from ansible_rulebook.validators import Validate
from awx_survey import launch_errors, spec_errors
from rulebook_rules import action

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
ROLE_DEFAULTS = {
    **yaml.safe_load((REPO / "roles" / "node_outage" / "defaults" / "main.yml").read_text()),
    **yaml.safe_load((REPO / "roles" / "node_recover" / "defaults" / "main.yml").read_text()),
}
# Node names that are valid Kubernetes names and that a native rendering would turn into numbers.
NODES = ("worker1", "123", "1e5", "1.5", "0x1f")
TIME = "2026-11-29T04:00:00Z"


def event(node: str) -> dict:
    """One event with what every base's launching rules read (alert, power event, node watch), checked already."""
    return {
        "alertname": "NodeguardNodeDown",
        "status": "firing",
        "node": node,
        "starts_at": TIME,
        "nodeguard_power_event": {"node": node, "state": "Off", "time": TIME},
        "nodeguard_node_event": {"node": node, "state": "down"},
        "meta": {"received_at": TIME},  # ansible-rulebook stamps every event when it arrives
    }


def launches(base: str, suffix: str = "-controller") -> list[dict]:
    """The run_job_template (or run_playbook) arguments of a rulebook's rules, in order."""
    (rulebook,) = yaml.safe_load((RULEBOOKS / f"{base}{suffix}.yml").read_text())
    kind = "run_job_template" if suffix else "run_playbook"
    return [action(rule)[kind] for rule in rulebook["rules"] if kind in action(rule)]


def rendered_extra_vars(base: str, extra_vars: dict, node: str) -> dict:
    """extra_vars as ansible-rulebook renders them when the rule fires (its substitute_variables, native types)."""
    variables = {**yaml.safe_load((VARS / f"{base}.yml").read_text()), "awx_organization": "Default"}
    return substitute_variables(copy.deepcopy(extra_vars), {**variables, "event": event(node)})


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
    templates = {template["name"]: template for template in script().job_templates().values()}
    assert {"nodeguard node-outage", "nodeguard node-recover"} <= set(templates)
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
        assert launch["name"] in templates
        assert launch["organization"] == "{{ awx_organization }}"
        assert launch["include_events"] is False  # the event is not sent along: only the checked values
        # node-outage's outcome (set_stats: the job's artifacts) comes back as the base's does: it arms the cool-down
        assert launch.get("post_events", False) == run.get("post_events", False)
        # a failed job is retried as the base retries a failed run (a transient failure within the dedupe window)
        assert (launch.get("retries"), launch.get("delay")) == (run.get("retries"), run.get("delay"))
        assert mine["condition"] == theirs["condition"] and mine.get("throttle") == theirs.get("throttle")


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("base", BASES)
def test_every_launch_passes_the_job_templates_survey(base: str, node: str) -> None:
    """What AWX would be sent when the rule fires for ``node`` passes the survey: types, required answers, choices."""
    templates = {template["name"]: template for template in script().job_templates().values()}
    for launch in launches(base):
        template = templates[launch["name"]]
        extra_vars = rendered_extra_vars(base, launch["job_args"]["extra_vars"], node)
        assert launch_errors(template, extra_vars) == [], f"{base}-controller.yml -> {launch['name']}"
        assert extra_vars["outage_nodes"] == node  # a string, even for a node named like a number


@pytest.mark.parametrize("base", BASES)
def test_the_job_gets_what_the_bases_run_gets_and_the_roles_defaults(base: str) -> None:
    """The same values as run_playbook's (node lists as comma-separated names, text answers as strings); the survey's
    required answers the base does not give are the role's defaults, so a job does what the base's run does."""
    templates = {template["name"]: template for template in script().job_templates().values()}
    for launch, run in zip(launches(base), launches(base, suffix=""), strict=True):
        mine = rendered_extra_vars(base, launch["job_args"]["extra_vars"], "worker1")
        theirs = rendered_extra_vars(base, run["extra_vars"], "worker1")
        for name, value in theirs.items():
            assert mine[name] == (",".join(value) if isinstance(value, list) else value), name
        added = {name: mine[name] for name in set(mine) - set(theirs)}
        questions = {q["variable"]: q for q in templates[launch["name"]]["survey_spec"]["spec"]}
        assert added == {name: q["default"] for name, q in questions.items() if q["required"] and name not in theirs}
        for name, answer in added.items():
            default = ROLE_DEFAULTS[name]
            assert answer == (str(default).lower() if isinstance(default, bool) else str(default)), name


def test_the_shipped_surveys_are_ones_awx_saves() -> None:
    surveys = [template["survey_spec"] for template in script().job_templates().values() if template.get("survey_enabled")]
    assert len(surveys) == 2
    for survey in surveys:
        assert spec_errors(survey) == [], survey["name"]
