"""The incident playbooks turn the user-facing connection variables into the roles' prefixed ones.

failover_kubeconfig, failover_host, ... win; k8s_kubeconfig (the inventory's) is the kubeconfig's fallback;
the unprefixed kubernetes.core names (kubeconfig, host, api_key, ...) are still read for one release.
"""

import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

try:  # ansible-core 2.19 templates only trusted strings
    from ansible.template import trust_as_template
except ImportError:  # older ansible-core: every string is a template
    def trust_as_template(value):
        return value

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OPTIONS = ("kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key")
PLAYBOOKS = {"node_outage": "node_outage.yml", "node_recover": "node_recover.yml"}


def wired(role, variables):
    """The role's connection variables as the playbook sets them, given these play variables."""
    with open(os.path.join(REPO, "playbooks", PLAYBOOKS[role]), encoding="utf-8") as handle:
        role_vars = yaml.safe_load(handle)[0]["roles"][0]["vars"]
    templar = Templar(loader=DataLoader(), variables=variables)
    return {option: templar.template(trust_as_template(role_vars[f"{role}_{option}"])) for option in OPTIONS}


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_nothing_set_passes_nothing(role):
    assert wired(role, {}) == dict.fromkeys(OPTIONS, "") | {"validate_certs": None}


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_the_failover_names_win_over_the_deprecated_and_the_inventory_kubeconfig(role):
    new = {f"failover_{option}": f"new-{option}" for option in OPTIONS} | {"failover_validate_certs": False}
    old = {option: f"old-{option}" for option in OPTIONS} | {"validate_certs": True}
    result = wired(role, {**old, **new, "k8s_kubeconfig": "/inventory/admin.kubeconfig"})
    assert result == {option: f"new-{option}" for option in OPTIONS} | {"validate_certs": False}


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_the_deprecated_names_still_work_for_one_release(role):
    old = {option: f"old-{option}" for option in OPTIONS} | {"validate_certs": False}
    assert wired(role, {**old, "k8s_kubeconfig": "/inventory/admin.kubeconfig"}) == old


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_the_inventory_kubeconfig_is_the_fallback_and_an_empty_failover_kubeconfig_overrides_it(role):
    assert wired(role, {"k8s_kubeconfig": "/inventory/admin.kubeconfig"})["kubeconfig"] == "/inventory/admin.kubeconfig"
    assert wired(role, {"k8s_kubeconfig": "/inventory/admin.kubeconfig", "failover_kubeconfig": ""})["kubeconfig"] == ""
