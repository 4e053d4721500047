"""kubelet_heartbeat decides where the kubelet's fields go from the registry's fields (distributions.py), never from
a distribution's name, as control_plane_flags does by config_format (issue 36 item 3).

Each task's ``when`` is rendered as Ansible renders it, for every registry entry and for a fifth rancher-style entry
that no task names: that one must get its kubelet drop-in and its --config-dir, like RKE2 and k3s."""

import os

import pytest
import yaml
from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import DISTRIBUTIONS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TASKS = os.path.join(REPO, "roles", "kubelet_heartbeat", "tasks", "main.yml")
# A rancher-style distribution the role has never heard of: RKE2's layout under another name and paths.
FIFTH = DISTRIBUTIONS["rke2"]._replace(
    name="rancher5", markers=("/etc/rancher/rancher5",), config_dir="/etc/rancher/rancher5",
    kubelet_dropin_dir="/var/lib/rancher/rancher5/agent/etc/kubelet.conf.d", server_service="rancher5-server",
    agent_service="rancher5-agent")
# What each kind of entry must get (task names of tasks/main.yml).
KUBELET_FILE = "Set KubeletConfiguration fields in {{ kubelet_heartbeat_config_path }}"
DROPIN = "Set KubeletConfiguration fields in the RKE2/k3s drop-in"
CONFIG_DIR = "Point the kubelet's --config-dir at the drop-in directory"
RKE1_WAIT = "Wait until the RKE1 node renews its Lease and is Ready"


def tasks_with_conditions():
    """(task name, [conditions, the enclosing block's first]) for every task of tasks/main.yml."""
    with open(TASKS, encoding="utf-8") as handle:
        top = yaml.safe_load(handle)
    found = []
    for task in top:
        outer = _conditions(task)
        for inner in task.get("block", []):
            found.append((inner["name"], outer + _conditions(inner)))
        found.append((task["name"], outer))
    return found


def _conditions(task) -> list:
    when = task.get("when", [])
    return when if isinstance(when, list) else [when]


def runs(render, layout, name) -> bool:
    (conditions,) = [conditions for task, conditions in tasks_with_conditions() if task == name]
    values = {"_kubelet_heartbeat_layout": layout._asdict(), "kubelet_heartbeat_distribution": layout.name,
              "kubelet_heartbeat_environment": {}, "kubelet_heartbeat_wait_for_ready": True, "ansible_check_mode": False}
    return all(render(str(condition), **values) for condition in conditions)


@pytest.mark.parametrize("layout", [*DISTRIBUTIONS.values(), FIFTH], ids=lambda layout: layout.name)
def test_each_entry_gets_the_kubelet_edits_its_fields_call_for(render, layout):
    assert runs(render, layout, KUBELET_FILE) == bool(layout.kubelet_config)
    assert runs(render, layout, DROPIN) == bool(layout.kubelet_dropin_dir)
    assert runs(render, layout, CONFIG_DIR) == (layout.config_format == "rancher")
    assert runs(render, layout, RKE1_WAIT) == (layout.config_format == "rke1")


def test_the_fifth_rancher_style_entry_gets_its_kubelet_drop_in(render):
    assert runs(render, FIFTH, DROPIN) and runs(render, FIFTH, CONFIG_DIR)
    assert not runs(render, FIFTH, KUBELET_FILE)


def test_no_condition_names_a_distribution():
    named = [(task, condition) for task, conditions in tasks_with_conditions() for condition in conditions
             if "kubelet_heartbeat_distribution" in str(condition)]
    assert named == []
