"""The incident playbooks pass the cluster connection as module_defaults of group/nodeguard.failover.k8s, from the
collection's own variables only (issue 20, item 5).

failover_kubeconfig, failover_host, ... are used; k8s_kubeconfig (the inventory's) is the kubeconfig's fallback.
Generic names (validate_certs, api_key, host, ca_cert, context, ...) are never read: on 08a3975 another tool's
group var ``validate_certs: false`` turned off TLS verification for the remediation token.
"""

import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OPTIONS = ("kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key")
PLAYBOOKS = ("node_outage.yml", "node_recover.yml")
OMIT = "__omitted__"


def wired(playbook, variables):
    """The connection options the play's modules get, given these play variables (omitted ones left out)."""
    with open(os.path.join(REPO, "playbooks", playbook), encoding="utf-8") as handle:
        play = yaml.safe_load(handle)[0]
    defaults = play["module_defaults"]["group/nodeguard.failover.k8s"]
    templar = Templar(loader=DataLoader(), variables=dict(variables, omit=OMIT))
    values = {option: templar.template(trust_as_template(defaults[option])) for option in defaults}
    return {option: value for option, value in values.items() if value != OMIT}


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_every_connection_option_is_a_module_default_and_no_role_var_sets_it(playbook):
    with open(os.path.join(REPO, "playbooks", playbook), encoding="utf-8") as handle:
        play = yaml.safe_load(handle)[0]
    assert sorted(play["module_defaults"]["group/nodeguard.failover.k8s"]) == sorted(OPTIONS)
    role_vars = play["roles"][0]["vars"]
    assert not [name for name in role_vars if name.rsplit("_", 1)[-1] in ("kubeconfig", "host", "key", "certs", "cert", "context")]


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_nothing_set_passes_nothing(playbook):
    assert wired(playbook, {}) == {}


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_the_failover_names_are_used(playbook):
    new = {f"failover_{option}": f"new-{option}" for option in OPTIONS} | {"failover_validate_certs": False}
    result = wired(playbook, {**new, "k8s_kubeconfig": "/inventory/admin.kubeconfig"})
    assert result == {option: f"new-{option}" for option in OPTIONS} | {"validate_certs": False}


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_generic_names_set_by_another_tool_are_never_read(playbook):
    generic = {option: f"other-tool-{option}" for option in OPTIONS} | {"validate_certs": False}
    assert wired(playbook, generic) == {}
    # next to the collection's own names, they change nothing either
    assert wired(playbook, {**generic, "failover_host": "https://api:6443"}) == {"host": "https://api:6443"}


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_the_inventory_kubeconfig_is_the_fallback_and_an_empty_failover_kubeconfig_overrides_it(playbook):
    assert wired(playbook, {"k8s_kubeconfig": "/inventory/admin.kubeconfig"}) == {"kubeconfig": "/inventory/admin.kubeconfig"}
    assert wired(playbook, {"k8s_kubeconfig": "/inventory/admin.kubeconfig", "failover_kubeconfig": ""}) == {}
