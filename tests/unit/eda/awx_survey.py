"""What AWX / the automation controller refuses when a job template with a survey is launched through its API
(POST /api/v2/job_templates/<id>/launch/, which the EDA controller's run_job_template calls), written for the
unit tests from the controller's documentation ("Surveys" in the automation controller user guide: question types,
required, minimum/maximum length or value, choices) and from how AWX behaves (the job template's survey mixin,
read for behaviour only; no code of it is here).

The rules, as AWX applies them to the runtime extra_vars of a launch:
- every survey question is checked against the launch's extra_vars, whether or not the template also prompts for
  variables (ask_variables_on_launch), and a launch with any survey error is refused as a whole;
- a required question whose variable is absent is an error ("value missing"); a survey default does not stand in
  for it: defaults are applied only when the job is created, after the check;
- text, textarea and password answers must be strings (a list or a number is refused), and their length must be
  within min and max when those are set (an empty or null min/max is no limit);
- integer answers must be int (a bool or a string is refused), float answers int or float; both within min/max;
- multiplechoice answers must be one of the choices, compared as they are (the string "true", not the bool); choices
  are a list or one string with a choice per line (blank lines dropped);
- multiselect answers must be a list whose every item is one of the choices;
- variables the survey does not ask for are accepted only when the template prompts for variables.
"""

from __future__ import annotations

STRING_TYPES = ("text", "textarea", "password")


def _choices(question: dict) -> list:
    choices = question.get("choices") or []
    if isinstance(choices, str):
        return [line for line in choices.splitlines() if line.strip()]
    return list(choices)


def _limit(question: dict, key: str):
    value = question.get(key)
    return None if value in ("", None) else value


def _out_of_range(variable: str, measured, question: dict, convert) -> list[str]:
    errors = []
    low, high = _limit(question, "min"), _limit(question, "max")
    if low is not None and measured < convert(low):
        errors.append(f"{variable}: {measured} is below the minimum {low}")
    if high is not None and measured > convert(high):
        errors.append(f"{variable}: {measured} is above the maximum {high}")
    return errors


def question_errors(question: dict, extra_vars: dict) -> list[str]:
    """The errors AWX reports for one survey question and a launch's extra_vars (empty: it passes)."""
    variable, kind = question["variable"], question["type"]
    if variable not in extra_vars:
        return [f"{variable}: value missing"] if question.get("required") else []
    value = extra_vars[variable]
    if kind in STRING_TYPES:
        if not isinstance(value, str):
            return [f"{variable}: {value!r} is not a string"]
        return _out_of_range(variable, len(value), question, int)
    if kind == "integer":
        if type(value) is not int:
            return [f"{variable}: {value!r} is not an integer"]
        return _out_of_range(variable, value, question, int)
    if kind == "float":
        if type(value) not in (int, float):
            return [f"{variable}: {value!r} is not a number"]
        return _out_of_range(variable, value, question, float)
    if kind == "multiplechoice":
        return [] if value in _choices(question) else [f"{variable}: {value!r} is not one of {_choices(question)}"]
    if kind == "multiselect":
        if not isinstance(value, list):
            return [f"{variable}: {value!r} is not a list"]
        return [f"{variable}: {item!r} is not one of {_choices(question)}" for item in value if item not in _choices(question)]
    return [f"{variable}: unknown survey question type {kind!r}"]


def launch_errors(template: dict, extra_vars: dict) -> list[str]:
    """The reasons AWX would refuse to launch ``template`` (awx.awx.job_template's arguments, survey_spec loaded)
    with these runtime extra_vars; empty when the launch is accepted."""
    errors = []
    asked = set()
    if template.get("survey_enabled"):
        for question in template["survey_spec"]["spec"]:
            asked.add(question["variable"])
            errors += question_errors(question, extra_vars)
    others = sorted(set(extra_vars) - asked)
    if others and not template.get("ask_variables_on_launch"):
        errors.append(f"variables not allowed on launch (the template does not prompt for variables): {', '.join(others)}")
    return errors
