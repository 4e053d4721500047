"""Write the EDA-controller variants of the shipped rulebooks: extensions/eda/rulebooks/<name>-controller.yml.

Under the EDA controller (AAP/AWX), run_playbook does not work: a rulebook activation launches job templates.
Each variant is its base rulebook with every run_playbook action replaced by run_job_template, naming the job
template that docs/awx/configure-awx.yml creates for that playbook (read from it here, so the names cannot
drift), in the organization `{{ awx_organization }}` (configure-awx.yml's own variable: give it to the
activation), with include_events false (only the checked values go to the job) and the base's extra vars in the
form the job template's survey accepts (AWX checks a launch's extra_vars against the survey even when the template
prompts for variables, and refuses the whole launch on one error):
  - a variable the survey asks as text (or as a choice) is sent as a string: a node list "{{ [x] }}" as the
    comma-separated names, any other value as its string. The expression ends in `| tojson`, a JSON string literal,
    because ansible-rulebook renders a lone expression to a native Python value: "123" alone would become the
    number 123, its JSON form '"123"' becomes the string "123" again;
  - a required question the base does not answer gets the survey's default, which is the role's default
    (tests/unit/eda/test_controller_rulebooks.py checks both), so the job does what the base's run does.
Everything else (sources, filters, guards, throttles) is the base's.

Usage: python scripts/controller-rulebooks.py            write the variants (with the venv's python)
       python scripts/controller-rulebooks.py --check    exit 1 when a variant differs from what it would write
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
RULEBOOKS = REPO / "extensions" / "eda" / "rulebooks"
CONFIGURE_AWX = REPO / "docs" / "awx" / "configure-awx.yml"
BASES = ("node-failover", "power-events", "power-poll", "node-watch")
# run_playbook's name (a variable of the base's vars file) -> the playbook its default names
PLAYBOOKS = {
    "{{ nodeguard_outage_playbook }}": "playbooks/node_outage.yml",
    "{{ nodeguard_recover_playbook }}": "playbooks/node_recover.yml",
}
ORGANIZATION = "{{ awx_organization }}"
# survey question types whose answer AWX wants as a string
STRING_ANSWERS = ("text", "textarea", "password", "multiplechoice")
# a value that is one Jinja expression, and configure-awx.yml's survey_spec lookup
EXPRESSION = re.compile(r"^\{\{\s*(?P<expr>.+?)\s*\}\}$", re.DOTALL)
SURVEY_FILE = re.compile(r"lookup\('ansible\.builtin\.file', '(?P<file>[^']+)'\)")


class AnsibleLoader(yaml.SafeLoader):
    """YAML as Ansible writes it: ``!unsafe`` (and ``!vault``) values are kept as plain strings."""


AnsibleLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))
AnsibleLoader.add_constructor("!vault", lambda loader, node: loader.construct_scalar(node))


class IndentedDumper(yaml.SafeDumper):
    """Lists indented under their key, as the project's YAML is written."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def job_templates() -> dict[str, dict]:
    """playbook path -> the arguments of the job template configure-awx.yml creates for it, its survey_spec read
    from the JSON file it names (an empty spec when the template has no survey)."""
    plays = yaml.load(CONFIGURE_AWX.read_text(), Loader=AnsibleLoader)  # a SafeLoader subclass
    found = {}
    for task in (task for play in plays for task in play["tasks"]):
        template = task.get("awx.awx.job_template")
        if template:
            template = dict(template, survey_spec=survey_spec(template))
            found[template["playbook"]] = template
    return found


def survey_spec(template: dict) -> dict:
    if not template.get("survey_enabled"):
        return {"spec": []}
    found = SURVEY_FILE.search(str(template.get("survey_spec", "")))
    if found is None:
        raise SystemExit(f"{CONFIGURE_AWX.name}: {template['name']!r} has a survey that is not a lookup of a JSON file")
    return json.loads((CONFIGURE_AWX.parent / found["file"]).read_text())


def as_string(value, where: str) -> str:
    """The rulebook value ``value`` as an expression that ansible-rulebook renders to a string (see the top)."""
    if isinstance(value, str) and "{{" not in value:
        return value  # a literal: ansible-rulebook does not render it
    found = EXPRESSION.match(value) if isinstance(value, str) else None
    if found is None:
        raise SystemExit(f"{where}: {value!r} is neither a literal string nor one expression")
    expression = found["expr"]
    if expression.startswith("[") and expression.endswith("]"):
        return "{{ " + expression + " | join(',') | tojson }}"
    return "{{ (" + expression + ") | string | tojson }}"


def survey_answers(extra_vars: dict, template: dict, where: str) -> dict:
    """The base's extra vars in the form the template's survey accepts, with the required answers it lacks."""
    questions = {question["variable"]: question for question in template["survey_spec"]["spec"]}
    answers = {}
    for name, value in extra_vars.items():
        question = questions.get(name)
        answers[name] = as_string(value, f"{where}, {name}") if question and question["type"] in STRING_ANSWERS else value
    for name, question in questions.items():
        if question.get("required") and name not in answers:
            answers[name] = question["default"]
    return answers


def controller_variant(ruleset: list, templates: dict[str, dict], base: str) -> list:
    variant = copy.deepcopy(ruleset)
    for rules in variant:
        rules["name"] = f"{rules['name']} (EDA controller)"
        for rule in rules["rules"]:
            for action in rule["actions"] if "actions" in rule else [rule["action"]]:
                run = action.pop("run_playbook", None)
                if run is None:
                    continue
                playbook = PLAYBOOKS.get(run["name"])
                if playbook not in templates:
                    raise SystemExit(f"{base}.yml: rule {rule['name']!r} runs {run['name']}, which has no job template in {CONFIGURE_AWX.name}")
                template = templates[playbook]
                answers = survey_answers(run.get("extra_vars") or {}, template, f"{base}.yml: rule {rule['name']!r}")
                action["run_job_template"] = {
                    "name": template["name"],
                    "organization": ORGANIZATION,
                    "job_args": {"extra_vars": answers},
                    "include_events": False,
                }
                if run.get("post_events"):
                    # the job's artifacts (node-outage's set_stats) come back as an event, as run_playbook's do
                    action["run_job_template"]["post_events"] = True
                for name in ("retries", "delay"):
                    # run_job_template retries a failed job as run_playbook retries a failed run
                    if name in run:
                        action["run_job_template"][name] = run[name]
    return variant


def rendered(base: str, templates: dict[str, dict]) -> str:
    ruleset = yaml.safe_load((RULEBOOKS / f"{base}.yml").read_text())
    header = (
        f"# GENERATED by scripts/controller-rulebooks.py from {base}.yml: do not edit; change {base}.yml, rerun.\n"
        f"# {base}.yml for the EDA controller: run_job_template instead of run_playbook (job templates of\n"
        "# docs/awx/configure-awx.yml, organization {{ awx_organization }}), extra vars in the form the template's\n"
        "# survey accepts (strings ending in | tojson, the survey's required answers: scripts/controller-rulebooks.py).\n"
        f"# The guards, their order and the comments explaining them are in {base}.yml; its vars file is this one's too\n"
        "# (docs/eda.md, AWX / AAP).\n"
    )
    body = yaml.dump(controller_variant(ruleset, templates, base), Dumper=IndentedDumper, sort_keys=False, width=120, allow_unicode=True)
    return header + "---\n" + body


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        sys.exit(__doc__)
    templates = job_templates()
    stale = []
    for base in BASES:
        target = RULEBOOKS / f"{base}-controller.yml"
        text = rendered(base, templates)
        if check:
            if not target.exists() or target.read_text() != text:
                stale.append(target.name)
        else:
            target.write_text(text)
    if stale:
        print(f"out of date (run scripts/controller-rulebooks.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
