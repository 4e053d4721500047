"""The incident playbooks set the cluster connection once, as module_defaults of group/nodeguard.failover.k8s, from
the collection's own variables only (issue 20, item 5; issue 24, item 1).

failover_kubeconfig, failover_host, ... are used; k8s_kubeconfig (the inventory's) is the kubeconfig's fallback.
Generic names (kubeconfig, context, host, api_key, validate_certs, ...) are never read: on 08a3975 another tool's
group var ``validate_certs: false`` turned off TLS verification for the remediation token. Empty or unset is omitted,
so the module's K8S_AUTH_* fallback applies. The roles pass no connection option themselves: a task's own option
shadows the play's module_defaults even when it templates to omit.
"""

import os
import subprocess

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OPTIONS = ("kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key")
PLAYBOOKS = {"node_outage": "node_outage.yml", "node_recover": "node_recover.yml"}
GROUP = "group/nodeguard.failover.k8s"


def load(name):
    with open(os.path.join(REPO, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def wired(role, variables):
    """The connection options the group's modules get from the playbook, given these play variables (omitted ones
    are left out, as Ansible leaves them out of module_defaults)."""
    defaults = load(os.path.join("playbooks", PLAYBOOKS[role]))[0]["module_defaults"][GROUP]
    assert set(defaults) == set(OPTIONS)
    templar = Templar(loader=DataLoader(), variables=variables)
    return templar.template({option: trust_as_template(value) for option, value in defaults.items()})


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_nothing_set_passes_nothing(role):
    assert wired(role, {}) == {}


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_the_failover_names_are_used(role):
    new = {f"failover_{option}": f"new-{option}" for option in OPTIONS} | {"failover_validate_certs": False}
    result = wired(role, {**new, "k8s_kubeconfig": "/inventory/admin.kubeconfig"})
    assert result == {option: f"new-{option}" for option in OPTIONS} | {"validate_certs": False}


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_generic_names_set_by_another_tool_are_never_read(role):
    generic = {option: f"other-tool-{option}" for option in OPTIONS} | {"validate_certs": False}
    assert wired(role, generic) == {}
    # next to the collection's own names, they change nothing either
    assert wired(role, {**generic, "failover_host": "https://api:6443"}) == {"host": "https://api:6443"}


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_the_inventory_kubeconfig_is_the_fallback_and_an_empty_failover_kubeconfig_overrides_it(role):
    assert wired(role, {"k8s_kubeconfig": "/inventory/admin.kubeconfig"}) == {"kubeconfig": "/inventory/admin.kubeconfig"}
    assert wired(role, {"k8s_kubeconfig": "/inventory/admin.kubeconfig", "failover_kubeconfig": ""}) == {}


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_the_role_passes_no_connection_option(role):
    """Else the role's own option, even as omit, would shadow the play's module_defaults."""
    tasks = load(os.path.join("roles", role, "tasks", "node.yml"))
    (args,) = [task[f"nodeguard.failover.{role}"] for task in tasks if f"nodeguard.failover.{role}" in task]
    assert not set(args) & set(OPTIONS)
    assert not set(load(os.path.join("roles", role, "defaults", "main.yml"))) & {f"{role}_{option}" for option in OPTIONS}


def run_playbook(*args):
    env = dict(
        os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_NOCOLOR="1"
    )
    for name in [name for name in env if name.startswith("K8S_AUTH_")]:
        del env[name]  # the environment's fallback must not stand in for the play's module_defaults
    python = os.path.join(REPO, ".venv", "bin", "python")
    command = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-e", f"ansible_python_interpreter={python}", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_connection_reaches_the_module_through_the_role():
    """A real run of node_outage.yml: the module, called by the role, fails on the kubeconfig only the play gave it."""
    probe = "/nonexistent/nodeguard-playbook-connection-probe.kubeconfig"
    done = run_playbook("playbooks/node_outage.yml", "--check", "-e", "outage_nodes=probe-node", "-e", f"failover_kubeconfig={probe}")
    assert done.returncode != 0
    assert f"cannot load cluster credentials from {probe}" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


@pytest.mark.parametrize("role", sorted(PLAYBOOKS))
def test_a_connection_role_variable_of_earlier_releases_is_refused(role):
    """Ignored, it would send the run to the default kubeconfig's cluster; refused, nothing runs."""
    done = run_playbook(f"playbooks/{PLAYBOOKS[role]}", "--check", "-e", "outage_nodes=probe-node", "-e", f"{role}_host=https://other:6443")
    assert done.returncode != 0
    assert f"{role}_kubeconfig, {role}_host, ... are no longer read" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
