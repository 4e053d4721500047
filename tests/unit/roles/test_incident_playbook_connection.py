"""The incident playbooks turn the user-facing connection variables into the roles' prefixed ones, from the
collection's own variables only (issue 20, item 5).

failover_kubeconfig, failover_host, ... are used; k8s_kubeconfig (the inventory's) is the kubeconfig's fallback.
Generic names (kubeconfig, context, host, api_key, validate_certs, ...) are never read: on 08a3975 another tool's
group var ``validate_certs: false`` turned off TLS verification for the remediation token.

(Not module_defaults of group/nodeguard.failover.k8s: the roles pass every connection option themselves, omitted
when empty, and a task's own option shadows the play's module_defaults even when it templates to omit.)
"""

import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OPTIONS = ("kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key")
PLAYBOOKS = {"node_outage": "node_outage.yml", "node_recover": "node_recover.yml"}
NOTHING = dict.fromkeys(OPTIONS, "") | {"validate_certs": None}


def wired(role, variables):
    """The role's connection variables as the playbook sets them, given these play variables."""
    with open(os.path.join(REPO, "playbooks", PLAYBOOKS[role]), encoding="utf-8") as handle:
        role_vars = yaml.safe_load(handle)[0]["roles"][0]["vars"]
    templar = Templar(loader=DataLoader(), variables=variables)
    return {option: templar.template(trust_as_template(role_vars[f"{role}_{option}"])) for option in OPTIONS}


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_nothing_set_passes_nothing(role):
    assert wired(role, {}) == NOTHING


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_the_failover_names_are_used(role):
    new = {f"failover_{option}": f"new-{option}" for option in OPTIONS} | {"failover_validate_certs": False}
    result = wired(role, {**new, "k8s_kubeconfig": "/inventory/admin.kubeconfig"})
    assert result == {option: f"new-{option}" for option in OPTIONS} | {"validate_certs": False}


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_generic_names_set_by_another_tool_are_never_read(role):
    generic = {option: f"other-tool-{option}" for option in OPTIONS} | {"validate_certs": False}
    assert wired(role, generic) == NOTHING
    # next to the collection's own names, they change nothing either
    assert wired(role, {**generic, "failover_host": "https://api:6443"}) == NOTHING | {"host": "https://api:6443"}


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_the_inventory_kubeconfig_is_the_fallback_and_an_empty_failover_kubeconfig_overrides_it(role):
    assert wired(role, {"k8s_kubeconfig": "/inventory/admin.kubeconfig"})["kubeconfig"] == "/inventory/admin.kubeconfig"
    assert wired(role, {"k8s_kubeconfig": "/inventory/admin.kubeconfig", "failover_kubeconfig": ""})["kubeconfig"] == ""
