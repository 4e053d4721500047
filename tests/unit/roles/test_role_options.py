"""The incident roles' module options are rendered from the modules' argument specs and doc fragments (issue 24).

scripts/render-role-options.py writes the block of meta/argument_specs.yml and defaults/main.yml of node_outage
and node_recover; these tests fail when a role file drifts from what it renders, and when tasks/node.yml does not
pass each of those role variables to its module option.
"""

import importlib.util
import os
import subprocess
import sys

import pytest
import yaml

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
