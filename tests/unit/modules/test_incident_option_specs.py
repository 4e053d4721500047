"""node_outage and node_recover: each option is declared once, in plugins/module_utils/incident/args.py (issue 24).

Its doc fragment documents exactly that spec, the module's documentation (module + fragments) is its argument spec,
and the Options classes take each default from the spec by a call, never from a literal of their own.
"""

import ast
import dataclasses
import inspect

import pytest
import yaml
from ansible_collections.nodeguard.failover.plugins.doc_fragments import node_outage as outage_fragment
from ansible_collections.nodeguard.failover.plugins.doc_fragments import node_recover as recover_fragment
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import outage, recover
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.args import OUTAGE_ARGUMENT_SPEC, RECOVER_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.modules import node_outage, node_recover

# (module, its spec, its doc fragment, its Options class, the helper the class reads defaults with)
CASES = [
    (node_outage, OUTAGE_ARGUMENT_SPEC, outage_fragment, outage.OutageOptions, "outage_default"),
    (node_recover, RECOVER_ARGUMENT_SPEC, recover_fragment, recover.RecoverOptions, "recover_default"),
]
IDS = ["node_outage", "node_recover"]
FIELDS = ("type", "default", "choices", "elements")


def documented(text):
    return yaml.safe_load(text)["options"]


@pytest.mark.parametrize(("module", "spec", "fragment", "options", "helper"), CASES, ids=IDS)
def test_fragment_documents_exactly_the_spec(module, spec, fragment, options, helper):
    docs = documented(fragment.ModuleDocFragment.DOCUMENTATION)
    assert set(docs) == set(spec)
    for name, option in spec.items():
        for field in FIELDS:
            assert docs[name].get(field) == option.get(field), (name, field)
        assert docs[name].get("required", False) == option.get("required", False), name


@pytest.mark.parametrize(("module", "spec", "fragment", "options", "helper"), CASES, ids=IDS)
def test_module_uses_the_spec_and_extends_the_fragment(module, spec, fragment, options, helper):
    assert module.OPTIONS is spec
    name = module.__name__.rsplit(".", 1)[-1]
    assert f"nodeguard.failover.{name}" in yaml.safe_load(module.DOCUMENTATION)["extends_documentation_fragment"]
    assert not set(yaml.safe_load(module.DOCUMENTATION).get("options") or {}) & set(spec)  # not documented twice


@pytest.mark.parametrize(("module", "spec", "fragment", "options", "helper"), CASES, ids=IDS)
def test_options_class_has_the_specs_defaults(module, spec, fragment, options, helper):
    fields = {field.name: field for field in dataclasses.fields(options)}
    assert set(fields) == set(spec)
    for name, option in spec.items():
        if "default" in option:
            assert fields[name].default == option["default"], name


@pytest.mark.parametrize(("module", "spec", "fragment", "options", "helper"), CASES, ids=IDS)
def test_options_class_writes_no_default_of_its_own(module, spec, fragment, options, helper):
    """Each field whose option has a default in the spec is `name: type = <helper>("name")`, so changing the spec is
    the only way to change the default (a literal here would agree today and drift tomorrow)."""
    tree = ast.parse(inspect.getsource(options))
    assigned = {node.target.id: node.value for node in tree.body[0].body if isinstance(node, ast.AnnAssign) and node.value is not None}
    for name, option in spec.items():
        if "default" not in option:
            continue
        value = assigned.get(name)
        assert isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == helper, name
        assert [arg.value for arg in value.args] == [name], name
