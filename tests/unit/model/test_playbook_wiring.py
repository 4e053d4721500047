"""Playbooks and roles wire the model's values; they do not keep copies of them."""

import os

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.nodeguard.failover.plugins.module_utils.model import applied

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def load(*path):
    with open(os.path.join(REPO, *path), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_every_playbook_has_one_name_that_runs_by_fqcn():
    # A collection playbook runs as nodeguard.failover.<name> only when <name> is an identifier, so a
    # hyphenated file could only be run by path; one name per playbook, the FQCN one.
    names = sorted(name[: -len(".yml")] for name in os.listdir(os.path.join(REPO, "playbooks")) if name.endswith(".yml"))
    assert names and [name for name in names if not name.isidentifier()] == []


def test_the_record_is_written_where_node_outage_reads_it():
    role_vars = load("roles", "failover_profile", "vars", "main.yml")
    assert role_vars["_failover_profile_record_namespace"] == applied.NAMESPACE
    assert role_vars["_failover_profile_record_name"] == applied.NAME
    audit_vars = load("roles", "failover_audit", "vars", "main.yml")
    assert (audit_vars["_failover_audit_record_namespace"], audit_vars["_failover_audit_record_name"]) == (
        applied.NAMESPACE, applied.NAME)


def test_tune_passes_the_complete_flag_maps_gates_included_to_every_writer():
    plays = load("playbooks", "tune_failover.yml")
    persist = next(play for play in plays if "kubeadm" in play["name"] and "ConfigMaps" in play["name"])
    assert "flags.kube_controller_manager" in persist["tasks"][0]["vars"]["kubeadm_persist_controller_manager"]
    for play in plays[1:3]:  # control plane (kubeadm, RKE2, k3s) and RKE1
        wired = play["tasks"][0]["vars"]
        assert "flags.kube_controller_manager" in wired["control_plane_flags_controller_manager"]
        assert "flags.kube_apiserver" in wired["control_plane_flags_apiserver"]
    assert "flags.kubelet_rke1" in plays[2]["tasks"][0]["vars"]["control_plane_flags_rke1_kubelet"]


def test_the_persisted_controller_manager_map_carries_the_gate_on_1_25():
    from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import build_profile
    from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubeadm_config, yamldoc

    profile = build_profile({"kubernetes_version": "1.25.9", "node_count": 3}, "fast")
    text = "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\n"
    rendered = kubeadm_config.render(yamldoc.load(text, "cc"), profile["flags"]["kube_controller_manager"],
                                     profile["flags"]["kube_apiserver"], "cc")
    assert rendered.document["controllerManager"]["extraArgs"]["feature-gates"] == "NodeOutOfServiceVolumeDetach=true"


def test_no_playbook_or_role_picks_a_preset_of_its_own():
    plan = load("playbooks", "tune_failover.yml")[0]["roles"][0]["vars"]
    assert plan["failover_profile_preset"].replace(" ", "") == "{{failover_preset|default('')}}"
    assert load("roles", "failover_profile", "defaults", "main.yml")["failover_profile_preset"] == ""


def test_node_outage_timing_defaults_are_left_to_the_applied_profile():
    defaults = load("roles", "node_outage", "defaults", "main.yml")
    assert defaults["node_outage_not_ready_seconds"] is None
    assert defaults["node_outage_lease_margin_seconds"] is None


def test_node_outage_passes_the_power_event_time_only_when_set():
    # the rulebook power-events.yml sets node_outage_power_event_time; unset, the module runs the heartbeat path
    defaults = load("roles", "node_outage", "defaults", "main.yml")
    assert defaults["node_outage_power_event_time"] is None
    assert defaults["node_outage_power_event_max_age_seconds"] == 300
    task = load("roles", "node_outage", "tasks", "node.yml")[0]["nodeguard.failover.node_outage"]

    # templated as ansible-core templates a task's args: unset (null) or empty, the option is left out
    def passed(value):
        args = {"power_event_time": trust_as_template(task["power_event_time"])}
        return Templar(loader=DataLoader(), variables={"node_outage_power_event_time": value}).template(args)

    assert passed(None) == {} and passed("") == {}
    assert passed("2026-11-26T10:00:00Z") == {"power_event_time": "2026-11-26T10:00:00Z"}
    assert task["power_event_max_age_seconds"] == "{{ node_outage_power_event_max_age_seconds }}"
    specs = load("roles", "node_outage", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert specs["node_outage_power_event_time"]["type"] == "str"
    assert specs["node_outage_power_event_max_age_seconds"]["default"] == 300
