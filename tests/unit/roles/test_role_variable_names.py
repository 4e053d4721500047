"""One variable-naming convention for every role: a role reads only its own variables.

A role's inputs are named `<role>_...` (defaults, argument spec); its internal names `_<role>_...`
(vars/, register, loop_var, set_fact). Anything else a role's YAML templates read must be Ansible's
own (magic variables, facts) or a name the template defines itself (a Jinja loop or set). The
playbooks, not the roles, turn user-facing play variables (failover_kubeconfig, k8s_kubeconfig)
into role variables. A role that read `kubeconfig` or `host` from the play would fail here.
"""

import os

import pytest
import yaml
from jinja2 import Environment, nodes

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLES = os.path.join(REPO, "roles")
ROLE_NAMES = sorted(name for name in os.listdir(ROLES) if os.path.isdir(os.path.join(ROLES, name, "tasks")))

# Ansible's own variables that a role may read.
ANSIBLE_NAMES = {"ansible_check_mode", "ansible_diff_mode", "ansible_facts", "ansible_play_hosts", "ansible_play_batch",
                 "ansible_loop", "ansible_host", "groups", "group_names", "hostvars", "inventory_hostname", "item",
                 "omit", "play_hosts", "lookup", "query", "q", "now", "undef",
                 # Jinja's own globals
                 "range", "dict", "namespace", "lipsum", "cycler", "joiner"}
# Keys whose string value is a bare Jinja expression, not a template.
EXPRESSION_KEYS = {"when", "changed_when", "failed_when", "until", "that"}
SUBDIRS = ("tasks", "handlers", "vars", "defaults")


def yaml_files(role):
    for subdir in SUBDIRS:
        directory = os.path.join(ROLES, role, subdir)
        if os.path.isdir(directory):
            for name in sorted(os.listdir(directory)):
                if name.endswith((".yml", ".yaml")):
                    yield os.path.join(directory, name)


def strings(node, key=None):
    """(key, string) for every string in a YAML tree; key is the nearest mapping key above it."""
    if isinstance(node, dict):
        for child_key, value in node.items():
            yield from strings(value, child_key)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value, key)
    elif isinstance(node, str):
        yield key, node


def task_vars(node):
    """Names a block or task defines for itself in `vars:` (scoped to it, so no prefix is needed)."""
    if isinstance(node, dict):
        scoped = set(node["vars"]) if isinstance(node.get("vars"), dict) else set()
        return scoped.union(*(task_vars(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(task_vars(value) for value in node))
    return set()


def names_read(text, expression):
    """Variables a template (or a bare expression) reads and does not define itself."""
    source = "{{ " + text + " }}" if expression else text
    if "{" not in source:
        return set()
    tree = Environment().parse(source)
    loaded = {name.name for name in tree.find_all(nodes.Name) if name.ctx == "load"}
    stored = {name.name for name in tree.find_all(nodes.Name) if name.ctx in ("store", "param")}
    return loaded - stored


def foreign_names(role):
    """(file, name) for every variable the role reads that is neither its own nor Ansible's."""
    own = (f"{role}_", f"_{role}_")
    found = set()
    for path in yaml_files(role):
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
        allowed = ANSIBLE_NAMES | task_vars(document)
        for key, text in strings(document):
            for name in names_read(text, key in EXPRESSION_KEYS):
                if not name.startswith(own) and name not in allowed and not name.startswith("ansible_"):
                    found.add((os.path.relpath(path, REPO), name))
    return sorted(found)


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_a_role_reads_only_its_own_variables(role):
    assert foreign_names(role) == []


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_a_roles_inputs_carry_its_prefix(role):
    with open(os.path.join(ROLES, role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"].get("options", {})
    defaults_path = os.path.join(ROLES, role, "defaults", "main.yml")
    defaults = {}
    if os.path.exists(defaults_path):
        with open(defaults_path, encoding="utf-8") as handle:
            defaults = yaml.safe_load(handle) or {}
    assert [name for name in list(options) + list(defaults) if not name.startswith(f"{role}_")] == []
    assert set(defaults) <= set(options), "every default is documented in meta/argument_specs.yml"


def test_the_scan_sees_a_play_variable():
    """The scanner itself: an unprefixed read in a template or in a `when` is reported, a Jinja loop name is not."""
    assert names_read("{{ kubeconfig | default(k8s_kubeconfig | default(omit)) }}", False) == {"kubeconfig", "k8s_kubeconfig", "omit"}
    assert names_read("host is defined", True) == {"host"}
    assert names_read("{% for node in node_outage_nodes %}{{ node }}{% endfor %}", False) == {"node_outage_nodes"}
