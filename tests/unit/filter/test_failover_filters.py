"""The failover filters through Ansible's own templating and plugin loader (FQCN resolution)."""

import json
import os

import pytest
from ansible.errors import AnsibleError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FACTS = {"kubernetes_version": "1.35.4", "node_count": 3, "distribution": "kubeadm"}
SEED_001 = {
    "kubelet": {"nodeStatusUpdateFrequency": "1s"},
    "kube_controller_manager": {"node-monitor-period": "1s", "node-monitor-grace-period": "4s"},
}


@pytest.fixture(scope="module", name="render")
def render_with_facts(render):
    """conftest's render, with the cluster facts these filters read as ``facts``."""

    def render_facts(expression, **variables):
        return render(expression, **dict(variables, facts=FACTS))

    return render_facts


def test_profile_filter(render):
    profile = render("facts | nodeguard.failover.failover_profile(preset='fast')")
    assert profile["preset"] == "fast"
    assert profile["settings"]["kube_controller_manager"]["node-monitor-grace-period"] == "4s"
    assert profile["settings"]["kubelet"]["nodeLeaseDurationSeconds"] == 3
    assert profile["timeline"]["not_ready"]["expected"] <= 5


def test_profile_filter_with_targets_and_overrides(render):
    profile = render("facts | nodeguard.failover.failover_profile(detect_seconds=10, evict_seconds=60, "
                     "overrides={'tcp_retries2': 9})")
    assert profile["preset"] == "custom"
    assert profile["settings"]["sysctl"]["net.ipv4.tcp_retries2"] == "9"
    assert profile["overrides"] == ["tcp_retries2"]


@pytest.mark.parametrize("expression, rule", [
    ("facts | nodeguard.failover.failover_profile(preset='nope')", "unknown-preset"),
    ("facts | nodeguard.failover.failover_profile(preset='fast', overrides={'node_monitor_grace_period': '3s'})",
     "heartbeat-retries"),
    ("{'kubernetes_version': '1.16.0', 'node_count': 3} | nodeguard.failover.failover_profile", "unsupported-version"),
    ("facts | nodeguard.failover.failover_profile(preset='fast', overrides={'tcp_retries2': 'many'})", "wrong-type"),
])
def test_profile_filter_errors_name_the_rule(render, expression, rule):
    with pytest.raises(AnsibleError) as error:
        render(expression)
    assert f"[{rule}]" in str(error.value)


def test_timeline_filter_lists_violations(render):
    current = render("seed | nodeguard.failover.failover_timeline(facts)", seed=SEED_001)
    assert current["preset"] == "current"
    assert "heartbeat-retries" in [v["rule"] for v in current["violations"]]
    assert current["load"]["node_status_writes_per_second"] == 3


def test_table_filter(render):
    table = render("(seed | nodeguard.failover.failover_timeline(facts)) | "
                   "nodeguard.failover.failover_timeline_table(facts | nodeguard.failover.failover_profile(preset='fast'))",
                   seed=SEED_001)
    assert isinstance(table, str)
    assert "node NotReady" in table
    assert "after: fast" in table


def test_table_filter_refuses_non_profiles(render):
    with pytest.raises(AnsibleError) as error:
        render("facts | nodeguard.failover.failover_timeline_table(facts)")
    assert "[wrong-type]" in str(error.value)


def test_applied_profile_filter_records_the_collection_version(render):
    data = render("facts | nodeguard.failover.failover_profile(preset='fast') "
                  "| nodeguard.failover.failover_applied_profile('2026-11-23T05:00:00+00:00', overrides={})")
    document = json.loads(data["profile.json"])
    with open(os.path.join(REPO, "galaxy.yml"), encoding="utf-8") as handle:
        version = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("version:"))
    assert document["collection_version"] == version
    assert document["remediation"]["not_ready_seconds"] == 20


def test_drift_filter_without_a_record(render):
    report = render("none | nodeguard.failover.failover_profile_drift({'cp1': {'role': 'control_plane', "
                    "'settings': {'kubelet': {}}}}, '1.35.4')")
    assert report["recorded"] is False and report["drift"] == []


def test_profile_filter_gives_rke1_its_kubelet_flags_or_refuses_in_the_plan(render):
    rke1 = "{'kubernetes_version': '1.28.15', 'node_count': 3, 'distribution': 'rke1'}"
    profile = render(rke1 + " | nodeguard.failover.failover_profile(preset='kubernetes-default', "
                     "overrides={'node_monitor_grace_period': '60s'})")
    assert profile["flags"]["kubelet_rke1"] == {}
    with pytest.raises(AnsibleError, match="no command-line flag for nodeLeaseDurationSeconds"):
        render(rke1 + " | nodeguard.failover.failover_profile(preset='fast')")
    # An update frequency alone would make every update a full status report: its report frequency goes along, refused.
    with pytest.raises(AnsibleError, match="no command-line flag for nodeStatusReportFrequency"):
        render(rke1 + " | nodeguard.failover.failover_profile(preset='kubernetes-default', "
               "overrides={'node_status_update_frequency': '5s', 'node_monitor_grace_period': '60s'})")


# -- failover_rollback_plan ------------------------------------------------------------------------------


def test_rollback_plan_restores_backups_removes_created_files_and_skips_the_rest(render):
    edits = [
        {"changed": True, "path": "/etc/a.yaml", "backup_file": "/etc/a.yaml.1~"},
        {"changed": False, "path": "/etc/b.yaml"},
        {"changed": False, "skipped": True},
        {"changed": True, "dest": "/etc/c.conf"},
    ]
    assert render("edits | nodeguard.failover.failover_rollback_plan", edits=edits) == {
        "restore": [{"path": "/etc/a.yaml", "backup_file": "/etc/a.yaml.1~"}],
        "remove": ["/etc/c.conf"],
        "paths": ["/etc/a.yaml", "/etc/c.conf"],
    }


def test_rollback_plan_refuses_a_removal_without_its_saved_copy(render):
    with pytest.raises(AnsibleError, match="no saved copy"):
        render("[] | nodeguard.failover.failover_rollback_plan(removed=removal)", removal={"changed": True, "path": "/etc/d.conf"})


# -- failover_processes_with_flags -----------------------------------------------------------------------

OLD_PROCESS = "4100 kube-controller-manager --leader-elect=true --node-monitor-grace-period=40s --feature-gates=A=true"
NEW_PROCESS = ("4242 kube-controller-manager --leader-elect=true --node-monitor-grace-period=20s "
               "--feature-gates=A=true,B=false --profiling")
CONTROLLER_MANAGER_LINES = [OLD_PROCESS, NEW_PROCESS, "77"]  # a line without a command is no process


@pytest.mark.parametrize(("wanted", "pids"), [
    ({"node-monitor-grace-period": "20s"}, ["4242"]),
    ({"node-monitor-grace-period": "40s"}, ["4100"]),
    ({"leader-elect": True}, ["4100", "4242"]),  # true, as the file modules write it
    ({"profiling": True}, ["4242"]),  # a bare --profiling is true
    ({"node-monitor-grace-period": "20s", "feature-gates": {"B": False}}, ["4242"]),
    ({"feature-gates": {"B": True}}, []),
    ({"profiling": None}, ["4100"]),  # null: the flag must be absent
    ({"node-monitor-grace-period": "20s", "pod-eviction-timeout": None}, ["4242"]),
    ({"node-monitor-grace-period": 20}, []),
])
def test_processes_with_flags_keeps_the_processes_that_carry_them(render, wanted, pids):
    running = render("lines | nodeguard.failover.failover_processes_with_flags(wanted)",
                     lines=CONTROLLER_MANAGER_LINES, wanted=wanted)
    assert [words[0] for words in running] == pids
    assert all(words[1] == "kube-controller-manager" for words in running)


def test_processes_with_flags_names_the_component_in_an_unreadable_flag(render):
    with pytest.raises(AnsibleError, match="kube-controller-manager: give flag '--x' without leading dashes"):
        render("lines | nodeguard.failover.failover_processes_with_flags({'--x': '1'}, 'kube-controller-manager')",
               lines=CONTROLLER_MANAGER_LINES)


def test_audit_report_filter_sorts_and_gates(render):
    current = render("{} | nodeguard.failover.failover_timeline(facts)")
    risks = [{"risk": "model-warning", "severity": "low", "summary": "warning x", "fix": "none", "message": "m"},
             {"risk": "single-apiserver", "severity": "high", "summary": "one API server", "fix": "add two", "message": "m"}]
    built = render("current | nodeguard.failover.failover_audit_report(kubernetes_default=current, facts=facts, "
                   "risks=risks, generated_at='2026-11-26T02:31:15Z', fail_on='high', path='/tmp/a.json')",
                   current=current, risks=risks)
    assert built["screen"][2:4] == ["HIGH    single-apiserver: one API server -> fix: add two",
                                    "LOW     model-warning: warning x -> fix: none"]
    assert built["files"] == {"json": "/tmp/a.json", "markdown": "/tmp/a.md"}
    assert built["gate"]["failing"] == ["single-apiserver"] and not built["gate"]["passed"]
    assert json.loads(built["json"])["findings"][0]["name"] == "single-apiserver"


def test_audit_report_filter_refuses_an_unknown_gate(render):
    current = render("{} | nodeguard.failover.failover_timeline(facts)")
    with pytest.raises(AnsibleError, match=r"\[unknown-severity\] audit_fail_on='critical'"):
        render("current | nodeguard.failover.failover_audit_report(kubernetes_default=current, facts=facts, fail_on='critical')",
               current=current)


def test_audit_disagreements_filter(render):
    nodes = {"cp1": {"role": "control_plane", "settings": {"kubelet": {"nodeLeaseDurationSeconds": 12}}},
             "w1": {"role": "node", "settings": {"kubelet": {}}}}
    assert render("nodes | nodeguard.failover.failover_audit_disagreements(['cp1', 'w1'])", nodes=nodes) == [
        {"setting": "kubelet nodeLeaseDurationSeconds", "values": {"cp1": "12", "w1": "(default)"}}]
    with pytest.raises(AnsibleError, match=r"expected host -> \{role, settings\}"):
        render("['cp1'] | nodeguard.failover.failover_audit_disagreements([])")
