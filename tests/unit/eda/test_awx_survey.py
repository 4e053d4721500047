"""The survey rules the controller-rulebook test applies (awx_survey.py) refuse what AWX refuses and accept what it
accepts: each rule is shown with a launch that breaks it and one that keeps it. The questions are written from the
automation controller's survey documentation (question types text, textarea, password, integer, float,
multiplechoice, multiselect; required; min/max; choices as a list or one per line)."""

from __future__ import annotations

import pytest
from awx_survey import launch_errors, question_errors, spec_errors

TEXT = {"variable": "nodes", "type": "text", "required": True, "min": 1, "max": 10}
CHOICE = {"variable": "fence", "type": "multiplechoice", "required": True, "choices": ["false", "true"]}


@pytest.mark.parametrize(
    ("question", "extra_vars", "refused"),
    [
        (TEXT, {}, True),  # required and absent
        (dict(TEXT, required=False), {}, False),
        (dict(TEXT, default="w1"), {}, True),  # a default does not stand in for a required answer
        (TEXT, {"nodes": ["w1"]}, True),  # a list for a text question
        (TEXT, {"nodes": 123}, True),  # a number for a text question
        (TEXT, {"nodes": "w1"}, False),
        (TEXT, {"nodes": ""}, True),  # shorter than min
        (TEXT, {"nodes": "w" * 11}, True),  # longer than max
        (dict(TEXT, min="", max=None), {"nodes": ""}, False),  # an empty min/max is no limit
        (CHOICE, {"fence": "true"}, False),
        (CHOICE, {"fence": True}, True),  # the bool is not the choice "true"
        (CHOICE, {"fence": "yes"}, True),
        (dict(CHOICE, choices="false\ntrue\n"), {"fence": "false"}, False),  # choices one per line
        ({"variable": "n", "type": "integer", "required": True, "min": 1, "max": 5}, {"n": 3}, False),
        ({"variable": "n", "type": "integer", "required": True}, {"n": True}, True),
        ({"variable": "n", "type": "integer", "required": True}, {"n": "3"}, True),
        ({"variable": "n", "type": "integer", "required": True, "max": 5}, {"n": 6}, True),
        ({"variable": "f", "type": "float", "required": True, "min": "0.5"}, {"f": 0.4}, True),
        ({"variable": "f", "type": "float", "required": True}, {"f": 2}, False),
        ({"variable": "m", "type": "multiselect", "required": True, "choices": ["a", "b"]}, {"m": ["a"]}, False),
        ({"variable": "m", "type": "multiselect", "required": True, "choices": ["a", "b"]}, {"m": "a"}, True),
        ({"variable": "m", "type": "multiselect", "required": True, "choices": ["a", "b"]}, {"m": ["c"]}, True),
    ],
)
def test_each_rule_refuses_what_breaks_it(question: dict, extra_vars: dict, refused: bool) -> None:
    assert bool(question_errors(question, extra_vars)) is refused


def test_a_launch_is_checked_against_every_question_and_prompted_variables() -> None:
    template = {"survey_enabled": True, "survey_spec": {"spec": [TEXT, CHOICE]}, "ask_variables_on_launch": False}
    assert launch_errors(template, {"nodes": "w1", "fence": "false"}) == []
    assert launch_errors(template, {"nodes": "w1"}) == ["fence: value missing"]
    # a variable the survey does not ask for needs the template to prompt for variables
    assert launch_errors(template, {"nodes": "w1", "fence": "false", "trigger": "t"})
    assert launch_errors(dict(template, ask_variables_on_launch=True), {"nodes": "w1", "fence": "false", "trigger": "t"}) == []
    # prompting for variables does not switch the survey's checks off
    assert launch_errors(dict(template, ask_variables_on_launch=True), {"nodes": ["w1"], "fence": "false"})


SPEC = {"name": "n", "description": "d", "spec": [dict(TEXT, question_name="Nodes"), dict(CHOICE, question_name="Fence?", default="false")]}


@pytest.mark.parametrize(
    ("spec", "refused"),
    [
        (SPEC, False),
        ({**SPEC, "description": None}, True),
        ({**SPEC, "spec": []}, True),
        ({**SPEC, "spec": [TEXT]}, True),  # no question_name
        ({**SPEC, "spec": [dict(TEXT, question_name="Nodes", required="yes")]}, True),
        ({**SPEC, "spec": [dict(TEXT, question_name="Nodes"), dict(TEXT, question_name="Again")]}, True),
        ({**SPEC, "spec": [dict(TEXT, question_name="Nodes", type="date")]}, True),
        ({**SPEC, "spec": [dict(TEXT, question_name="Nodes", default=3)]}, True),
        ({**SPEC, "spec": [dict(TEXT, question_name="Nodes", max="10")]}, True),
        ({**SPEC, "spec": [dict(CHOICE, question_name="Fence?", default="maybe")]}, True),
        ({**SPEC, "spec": [dict(CHOICE, question_name="Fence?", default="false\ntrue")]}, True),
        ({**SPEC, "spec": [{k: v for k, v in CHOICE.items() if k != "choices"} | {"question_name": "Fence?"}]}, True),
    ],
)
def test_a_spec_is_refused_when_awx_would_not_save_it(spec: dict, refused: bool) -> None:
    assert bool(spec_errors(spec)) is refused
