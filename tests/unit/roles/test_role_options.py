"""The incident roles' module options are rendered from the modules' argument specs and doc fragments (issue 24).

scripts/render-role-options.py writes the block of meta/argument_specs.yml, defaults/main.yml and tasks/node.yml of
node_outage and node_recover; these tests fail when a role file drifts from what it renders, and when tasks/node.yml
does not pass each of those role variables to its module option.
"""

import importlib.util
import os
import subprocess
import sys

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(REPO, "scripts", "render-role-options.py")
ROLES = ("node_outage", "node_recover")


@pytest.fixture(scope="module")
def generator():
    spec = importlib.util.spec_from_file_location("render_role_options", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_role_files_are_what_the_specs_render():
    result = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_a_changed_spec_default_is_drift(generator, monkeypatch):
    """The check can fail: a default changed in the spec alone makes both role files stale."""
    monkeypatch.setitem(generator.ROLES["node_outage"][1][-1][1], "default", 301)  # the spec entry itself; restored after
    stale = [path for path, current, wanted in generator.targets() if current != wanted]
    assert stale == ["roles/node_outage/meta/argument_specs.yml", "roles/node_outage/defaults/main.yml"]


def test_a_new_spec_option_is_drift_in_every_role_file(generator, monkeypatch):
    """One more option in the spec makes node.yml stale too: the module call must pass it."""
    options = generator.ROLES["node_recover"][1] + [("settle_seconds", {"type": "int", "default": 5}, {"description": "x"})]
    monkeypatch.setitem(generator.ROLES, "node_recover", ("node_recover", options))
    stale = [path for path, current, wanted in generator.targets() if current != wanted]
    assert stale == [f"roles/node_recover/{name}" for name in ("meta/argument_specs.yml", "defaults/main.yml", "tasks/node.yml")]
    node_yml = [wanted for path, _current, wanted in generator.targets() if path.endswith("tasks/node.yml")][1]
    assert '    settle_seconds: "{{ node_recover_settle_seconds }}"\n    # end of generated options' in node_yml


def test_a_hand_edit_inside_the_block_is_drift(generator):
    path = "roles/node_recover/defaults/main.yml"
    with open(os.path.join(REPO, path), encoding="utf-8") as handle:
        text = handle.read()
    edited = text.replace("node_recover_healthy_seconds: 60", "node_recover_healthy_seconds: 30")
    assert edited != text
    assert generator.with_block(edited, generator.defaults_block("node_recover"), path) == text


@pytest.mark.parametrize("role", ROLES)
def test_every_module_option_of_the_role_is_rendered(generator, role):
    with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    with open(os.path.join(REPO, "roles", role, "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    for variable in generator.role_variables(role):
        assert variable in options and variable in defaults, variable
        assert options[variable].get("default") == defaults[variable], variable


@pytest.mark.parametrize("role", ROLES)
def test_node_yml_passes_each_role_variable_to_its_option(generator, role):
    with open(os.path.join(REPO, "roles", role, "tasks", "node.yml"), encoding="utf-8") as handle:
        tasks = yaml.safe_load(handle)
    module = f"nodeguard.failover.{generator.ROLES[role][0]}"
    (args,) = [task[module] for task in tasks if module in task]
    for variable, option in generator.role_variables(role).items():
        assert variable in str(args.get(option)), (option, args.get(option))
    passed = {option for option in args if option not in ("node", "power")}
    assert passed == set(generator.role_variables(role).values())  # the connection comes from module_defaults


def _module_args(role: str, variables: dict) -> dict:
    """The module options node.yml passes, templated by ansible-core as a task's args are (omit drops a key)."""
    with open(os.path.join(REPO, "roles", role, "tasks", "node.yml"), encoding="utf-8") as handle:
        (args,) = [task[f"nodeguard.failover.{role}"] for task in yaml.safe_load(handle) if f"nodeguard.failover.{role}" in task]
    args = {option: trust_as_template(value) for option, value in args.items() if option not in ("node", "power")}
    return Templar(loader=DataLoader(), variables=variables).template(args)


@pytest.mark.parametrize(("value", "passed"), [(None, False), ("", False), (0, True), (False, True), (90, True)])
def test_an_option_without_default_is_omitted_only_when_null_or_empty(generator, value, passed):
    """null and '' leave the option to the module (profile timing, generated job id, heartbeat path); 0 is an
    explicit not_ready_seconds (no wait), never "use the profile"."""
    variables = {variable: None for variable in generator.role_variables("node_outage")}
    args = _module_args("node_outage", dict(variables, node_outage_not_ready_seconds=value))
    assert ("not_ready_seconds" in args) == passed and args.get("not_ready_seconds", value) == value
    args = _module_args("node_outage", dict(variables, node_outage_job_id=value, node_outage_power_event_time=value))
    assert ("job_id" in args, "power_event_time" in args, "lease_margin_seconds" in args) == (passed, passed, False)


def test_an_option_with_a_default_is_passed_as_it_is(generator):
    variables = {variable: None for variable in generator.role_variables("node_recover")}
    args = _module_args("node_recover", dict(variables, node_recover_healthy_seconds=0, node_recover_lock_namespace="ops"))
    assert args["healthy_seconds"] == 0 and args["lock_namespace"] == "ops" and "job_id" not in args
