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

And what AWX refuses when a survey is saved (spec_errors): a spec without a string name and description or without
questions; a question without type, question_name and variable (strings) and required (a bool); a variable asked
twice; an unknown type; a non-empty default of the wrong type (a string for the string types and choices, a number
for integer and float); a min or max that is not an integer; a choice question without choices, or whose default is
not one of them (one default only for multiplechoice).
"""

from __future__ import annotations

STRING_TYPES = ("text", "textarea", "password")
DEFAULT_TYPES = {**dict.fromkeys((*STRING_TYPES, "multiplechoice", "multiselect"), (str,)), "integer": (int,), "float": (int, float)}


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


def _is_integer(value) -> bool:
    """An int as AWX checks it: its type exactly, so True and False (bool, a subclass of int) are not integers."""
    return isinstance(value, int) and not isinstance(value, bool)


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
        if not _is_integer(value):
            return [f"{variable}: {value!r} is not an integer"]
        return _out_of_range(variable, value, question, int)
    if kind == "float":
        if not (_is_integer(value) or isinstance(value, float)):
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


def spec_errors(spec: dict) -> list[str]:
    """The reasons AWX would refuse to save this survey spec (empty: it is accepted)."""
    errors = [f"{field} missing or not a string" for field in ("name", "description") if not isinstance(spec.get(field), str)]
    if not isinstance(spec.get("spec"), list) or not spec["spec"]:
        return [*errors, "no questions"]
    seen = set()
    for index, question in enumerate(spec["spec"]):
        where = f"question {index}"
        if any(not isinstance(question.get(field), str) for field in ("type", "question_name", "variable")):
            errors.append(f"{where}: type, question_name and variable must be strings")
            continue
        if not isinstance(question.get("required"), bool):
            errors.append(f"{where}: required must be a bool")
        if question["variable"] in seen:
            errors.append(f"{where}: {question['variable']} asked twice")
        seen.add(question["variable"])
        kind = question["type"]
        if kind not in DEFAULT_TYPES:
            errors.append(f"{where}: unknown type {kind!r}")
            continue
        default = question.get("default", "")
        if default != "" and not isinstance(default, DEFAULT_TYPES[kind]):
            errors.append(f"{where}: default {default!r} has the wrong type for {kind}")
        errors += [f"{where}: {key} is not an integer" for key in ("min", "max") if question.get(key) is not None and not _is_integer(question[key])]
        if kind in ("multiplechoice", "multiselect"):
            if "choices" not in question:
                errors.append(f"{where}: no choices")
                continue
            defaults = [line for line in default.splitlines() if line.strip()] if isinstance(default, str) else list(default)
            if kind == "multiplechoice" and len(defaults) > 1:
                errors.append(f"{where}: more than one default")
            errors += [f"{where}: default {item!r} is not a choice" for item in defaults if item not in _choices(question)]
    return errors
