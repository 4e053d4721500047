"""Kubernetes node names: plugins/module_utils/k8s/names.py, the filter k8s_node_names and the test k8s_node_name
(through Ansible's templating and plugin loader, as a playbook uses them)."""

import os

import pytest
from ansible.errors import AnsibleError
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.names import is_dns1123_subdomain, shown, why_not_node_name

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

VALID = ["ng-worker1", "w1", "123", "a", "node-1.example.com", "a" * 253, "a" * 63 + "." + "b" * 63]
INVALID = [
    "{{ lookup('pipe', 'id') }}w9",
    "ng-{{ 7*7 }}",
    "ng-{% raw %}",
    "a" * 254,
    "NG-Worker1",
    "Worker1",
    "",
    "ng_worker",
    "-ng",
    "ng-",
    "ng..w1",
    ".ng",
    "ng w1",
    "ng-w1\n",
    "ng-w1;id",
    "ng-wörker",
]


@pytest.mark.parametrize("name", VALID)
def test_valid_names(name):
    assert is_dns1123_subdomain(name)
    assert why_not_node_name(name) == ""


@pytest.mark.parametrize("name", [*INVALID, None, 7, ["ng-w1"]])
def test_invalid_names_say_why_inertly(name):
    assert not is_dns1123_subdomain(name)
    why = why_not_node_name(name)
    assert why
    assert not set("{}%#\n") & set(why)


def test_too_long_and_empty_say_so():
    assert "254 characters long, more than 253" in why_not_node_name("a" * 254)
    assert why_not_node_name("") == "the node name is empty"


def test_shown_escapes_and_cuts():
    assert shown("ng-{{ 7*7 }}") == "'ng-\\x7b\\x7b\\x207\\x2a7\\x20\\x7d\\x7d'"
    assert shown("x" * 100).endswith("'...")
    assert shown("wö") == "'w\\xf6'"


@pytest.mark.parametrize("given, names", [
    ("ng-w1", ["ng-w1"]),
    ("ng-w1,ng-w2", ["ng-w1", "ng-w2"]),
    ("ng-w1, ng-w2", ["ng-w1", "ng-w2"]),
    (["ng-w1", "ng-w2"], ["ng-w1", "ng-w2"]),
    ([], []),
    ("", []),
])
def test_filter_returns_the_names(render, given, names):
    assert render("given | nodeguard.failover.k8s_node_names", given=given) == names


@pytest.mark.parametrize("given", [*(n for n in INVALID if n), "ng-w1,", " ", ["ng-w1", "NG-W2"], [""], {"ng-w1": 1}, 7])
def test_filter_refuses_any_invalid_name(render, given):
    with pytest.raises(AnsibleError, match=r"refused: .*Nothing was changed|refused: node names must be"):
        render("given | nodeguard.failover.k8s_node_names", given=given)


def test_filter_refusal_names_the_value_escaped(render):
    with pytest.raises(AnsibleError) as error:
        render("given | nodeguard.failover.k8s_node_names", given="ng-{{ 7*7 }}")
    assert "'ng-\\x7b\\x7b" in str(error.value)


def test_test_plugin(render):
    assert render("names | select('nodeguard.failover.k8s_node_name') | list", names=[*VALID, *INVALID]) == VALID
