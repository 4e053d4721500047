"""The node_outage role shows a refusal as lines before it fails (issue 34 item 5): the module task does not fail on
the run's own failure (``error`` set), the plan is printed, then a fail task stops with the short message. A result
the module did not write (a crash: no ``error``) still fails the module task itself.

Each condition of roles/node_outage/tasks/node.yml is rendered as Ansible renders it, on the three kinds of result."""

import os

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TASKS = os.path.join(REPO, "roles", "node_outage", "tasks", "node.yml")
REFUSED = {"failed": True, "msg": "w3 is Ready: power-off not proven", "error": "w3 is Ready: power-off not proven", "plan_lines": ["a"]}
DONE = {"changed": True, "error": None, "plan_lines": ["a"], "summary": ["outage complete"]}
CRASHED = {"failed": True, "msg": "Module result deserialization failed", "module_stderr": "Traceback"}


def task(prefix: str) -> dict:
    with open(TASKS, encoding="utf-8") as handle:
        return next(t for t in yaml.safe_load(handle) if t["name"].startswith(prefix))


def condition(render, text, result) -> bool:
    return render(text, node_outage_result=result, node_outage_node="w3")


@pytest.mark.parametrize(("result", "module_fails", "stops"), [(REFUSED, False, True), (DONE, False, False), (CRASHED, True, None)])
def test_a_refusal_is_shown_then_failed_on(render, result, module_fails, stops):
    module = task("Fail over the node")
    assert condition(render, module["failed_when"], result) is module_fails
    if stops is None:
        return  # the module task failed: nothing after it runs
    assert task("Show the plan and the proofs")["ansible.builtin.debug"]["msg"] == "{{ node_outage_result.plan_lines }}"
    stop = task("Stop when the run failed or was refused")
    assert condition(render, stop["when"], result) is stops
    assert stop["ansible.builtin.fail"]["msg"] == "{{ node_outage_result.error }}"
