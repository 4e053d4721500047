"""The audit report (model/report.py): findings sorted by severity with a fix, the screen, the files, the gate."""

import json
import os

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model import report, risks
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import audit_timeline, build_profile

# The demo lab: kubeadm, one API server, every kubelet on its address, tuned with the fast preset.
FACTS = {"kubernetes_version": "1.35.4", "node_count": 4, "distribution": "kubeadm"}
ONE_APISERVER = [{"subsets": [{"addresses": [{"ip": "10.89.0.2"}]}]}]
KUBELETS = ["https://10.89.0.2:6443"] * 4
APPLIED = {"recorded": True, "preset": "fast", "drift": [],
           "summary": "applied profile 'fast' (2026-11-26T02:00:00Z, collection 0.1.0, Kubernetes 1.35.4): every node runs it"}
STALE_POD = {"metadata": {"namespace": "kube-system", "name": "coredns-1", "ownerReferences": [{"kind": "ReplicaSet"}]},
             "spec": {"tolerations": [{"key": risks.UNREACHABLE, "effect": "NoExecute", "tolerationSeconds": 300}]}}


# What failover_node_info reads from the demo lab's running kubelets after tune-failover (kubelet_heartbeat's drop-in).
FAST_KUBELET_ENVIRONMENT = {"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "1", "HTTP2_PING_TIMEOUT_SECONDS": "1"}


def demo(applied=None, disagreements=(), fail_on="none", path="/tmp/audit/report.json", pods=(STALE_POD,), api=True,
         ignore=None, kubelet_environment="demo"):
    """The demo lab's report; ``applied`` replaces the fast record, ``api=False`` reads no applied profile; the kubelets'
    environment is the demo lab's (FAST_KUBELET_ENVIRONMENT) unless given (None: not read)."""
    kubelet_environment = FAST_KUBELET_ENVIRONMENT if kubelet_environment == "demo" else kubelet_environment
    applied = (applied or APPLIED) if api else None
    current = audit_timeline(dict(build_profile(FACTS, "fast")["settings"], kubelet_environment=kubelet_environment),
                             FACTS)
    found = risks.audit_risks(current, endpoints=ONE_APISERVER, kubelet_servers=KUBELETS, pods=list(pods),
                              preset=(applied or {}).get("preset") or "balanced")
    return report.build(current, audit_timeline({}, FACTS), FACTS, found, applied, disagreements,
                        {"cp1": {"role": "control_plane", "settings": {"kubelet": {}}}}, "2026-11-26T02:31:15Z", fail_on, path,
                        ignore)


def test_every_risk_has_a_known_severity_a_summary_and_a_fix():
    fast = audit_timeline(build_profile(FACTS, "fast")["settings"], FACTS)
    broken = audit_timeline({"kube_controller_manager": {"node-monitor-grace-period": "4s"}}, FACTS)
    found = (risks.audit_risks(fast, unaudited_hosts=["w9"], endpoints=ONE_APISERVER, kubelet_servers=KUBELETS,
                               pods=[STALE_POD], nodes=[{"metadata": {"name": "old"},
                                                         "status": {"nodeInfo": {"kubeletVersion": "v1.18.2"}}}])
             + risks.audit_risks(broken))
    assert {f["risk"] for f in found} >= {"nodes-not-audited", "kubelet-no-http2-health-check", "single-apiserver",
                                          "single-apiserver-address", "short-tolerations-one-address",
                                          "tolerations-overridden", "model-warning", "inconsistent-settings"}
    for finding in found:
        assert finding["severity"] in risks.SEVERITIES, finding
        assert finding["summary"] and finding["fix"] and "\n" not in finding["summary"] + finding["fix"], finding
        assert len(finding["summary"]) + len(finding["fix"]) <= 170, finding


def test_findings_are_sorted_highest_severity_first():
    screen = demo(kubelet_environment=None)["screen"]  # a kubelet whose environment was not read
    assert screen[:8] == [
        "failover audit of kubeadm 1.35.4, 4 nodes: " + APPLIED["summary"],
        "findings: 1 high, 4 medium, 1 low (audit_fail_on=none)",
        "HIGH    single-apiserver: one API server (10.89.0.2): the control plane has no failover -> fix: run three "
        "control-plane nodes behind a VIP or load balancer",
        "MEDIUM  single-apiserver-address: every kubelet talks to one address, 10.89.0.2 -> fix: make 10.89.0.2 a highly "
        "available VIP or load balancer",
        "MEDIUM  short-tolerations-one-address: pods tolerate unreachable for 20 s, every kubelet uses 10.89.0.2 -> "
        "fix: make 10.89.0.2 redundant, or preset kubernetes-default (300 s) and the power-event path",
        "MEDIUM  tolerations-overridden: 1 pods tolerate not-ready/unreachable other than the cluster default -> fix: "
        "recreate them (kubectl rollout restart) or fix their tolerations (names in the JSON report)",
        "MEDIUM  model-warning: http2-health-check: node-monitor-grace-period 4s is not longer than client-go's ... "
        "-> fix: give the kubelet the profile's kubelet_environment (kubelet_heartbeat role)",
        "LOW     model-warning: tcp-retries-rfc1122: net.ipv4.tcp_retries2 7 gives up after 51.0s, less than the ... "
        "-> fix: none if chosen: a preset's trade-off (docs/settings.md)",
    ]


def test_the_screen_ends_with_the_timeline_and_the_files_and_fits_a_terminal():
    screen = demo()["screen"]
    table = screen.index(next(line for line in screen if line.startswith("seconds after power-off")))
    assert screen[table].split() == ["seconds", "after", "power-off", "k8s", "default", "this", "cluster"]
    assert screen[table + 1].split() == ["node", "NotReady", "47.5s", "4.1s"]
    # Narrow enough that Ansible's YAML output (80 columns, list items indented) does not wrap the timeline.
    assert max(len(line) for line in screen[table:-1]) <= 72
    assert screen[-1] == "full report: /tmp/audit/report.json (Markdown: /tmp/audit/report.md)"
    assert len(screen) <= 40


def test_drift_and_disagreements_are_findings_with_the_applied_preset_as_fix():
    applied = dict(APPLIED, drift=[
        {"node": "w1", "setting": "kubelet nodeLeaseDurationSeconds", "applied": 3, "live": 40},
        {"node": "w2", "setting": "kubelet nodeLeaseDurationSeconds", "applied": 3, "live": 40},
    ])
    disagreement = {"setting": "kubelet nodeLeaseDurationSeconds", "values": {"cp1": "3", "w1": "(default)", "w2": "(default)"}}
    built = demo(applied, [disagreement])
    drift = [f for f in built["report"]["findings"] if f["kind"] in ("drift", "disagreement")]
    assert [(f["kind"], f["summary"], f["fix"]) for f in drift] == [
        ("drift", "kubelet nodeLeaseDurationSeconds is 40 on w1, w2, the applied profile says 3",
         "tune-failover -e failover_preset=fast"),
        ("disagreement", "kubelet nodeLeaseDurationSeconds differs: 3 on cp1; (default) on w1, w2",
         "tune-failover -e failover_preset=fast (every node gets one value)"),
    ]
    # Medium: after the medium risks, before the low warning.
    kinds = [(f["severity"], f["kind"]) for f in built["report"]["findings"]]
    assert kinds.index(("medium", "drift")) > kinds.index(("medium", "risk"))
    assert kinds[-1] == ("low", "risk")


def test_many_hosts_are_counted_not_listed_on_screen():
    disagreement = {"setting": "sysctl net.ipv4.tcp_retries2", "values": {f"w{i}": "15" for i in range(9)}}
    finding = report.disagreement_findings([disagreement], None)[0]
    assert finding["summary"] == "sysctl net.ipv4.tcp_retries2 differs: 15 on w0, w1, w2 and 6 more"
    assert finding["fix"] == "tune-failover -e failover_preset=balanced (every node gets one value)"


@pytest.mark.parametrize("fail_on, failing", [
    ("none", []),
    ("high", ["single-apiserver"]),
    ("HIGH", ["single-apiserver"]),
    ("medium", ["single-apiserver", "single-apiserver-address", "short-tolerations-one-address", "tolerations-overridden"]),
    ("low", ["single-apiserver", "single-apiserver-address", "short-tolerations-one-address", "tolerations-overridden",
             "model-warning"]),
])
def test_the_gate_fails_at_or_above_audit_fail_on(fail_on, failing):
    gate = demo(fail_on=fail_on)["gate"]
    assert (gate["passed"], gate["failing"]) == (not failing, failing)
    if failing:
        assert gate["message"].startswith(f"audit_fail_on={fail_on.lower()}: {len(failing)} findings at or above")
        assert "high single-apiserver (one API server (10.89.0.2)" in gate["message"]


def test_the_gate_passes_a_cluster_without_findings_at_that_severity():
    gate = demo(pods=(), fail_on="high")["gate"]
    assert not gate["passed"]  # the single API server is high
    clean = report.gate(report.findings([{"risk": "x", "severity": "medium", "summary": "s", "fix": "f"}]), "high")
    assert clean == {"fail_on": "high", "passed": True, "failing": [], "message": ""}


@pytest.mark.parametrize("fail_on", ["critical", "warn", "yes"])
def test_an_unknown_gate_is_refused_with_the_choices(fail_on):
    with pytest.raises(ProfileError, match=r"\[unknown-severity\] .* choose one of none, low, medium, high"):
        demo(fail_on=fail_on)


def test_the_json_file_is_the_whole_report_and_the_markdown_is_beside_it():
    built = demo()
    data = json.loads(built["json"])
    assert data["findings"][0]["risk"] == "single-apiserver"
    assert data["settings_per_node"] == {"cp1": {"kubelet": {}}}
    assert data["applied"]["preset"] == "fast" and data["timeline"]["preset"] == "current"
    assert data["findings"][3]["examples"][0]["pod"] == "kube-system/coredns-1"
    markdown = built["markdown"]
    assert markdown.startswith("# Failover audit: kubeadm 1.35.4, 4 nodes\n")
    assert "| high | single-apiserver | one API server (10.89.0.2): the control plane has no failover |" in markdown
    assert "- `kube-system/coredns-1`: node.kubernetes.io/unreachable 300 (default 20)" in markdown
    assert "```text\nseconds after power-off" in markdown


@pytest.mark.parametrize("given, json_path, markdown_path", [
    ("", os.path.abspath("failover-audit-20261126T023115Z.json"), os.path.abspath("failover-audit-20261126T023115Z.md")),
    ("/srv/audit/prod.json", "/srv/audit/prod.json", "/srv/audit/prod.md"),
    ("/srv/audit/prod", "/srv/audit/prod", "/srv/audit/prod.md"),
])
def test_report_paths(given, json_path, markdown_path):
    assert report.paths(given, "2026-11-26T02:31:15Z") == {"json": json_path, "markdown": markdown_path}


def test_without_the_api_the_report_says_so():
    built = demo(api=False)
    assert built["screen"][0].endswith("applied profile not read (the API was not used)")
    assert built["report"]["applied"] is None


def test_a_finding_with_an_unknown_severity_is_refused():
    with pytest.raises(ProfileError, match="unknown-severity"):
        report.findings([{"risk": "x", "severity": "critical", "summary": "s", "fix": "f"}])


def test_disagreements_compare_control_plane_flags_on_control_plane_hosts_and_the_rest_on_every_node():
    nodes = {
        "cp1": {"role": "control_plane", "settings": {
            "kube_controller_manager": {"node-monitor-grace-period": "20s"},
            "kubelet": {"nodeLeaseDurationSeconds": 12}, "sysctl": {"net.ipv4.tcp_retries2": "8"}}},
        "cp2": {"role": "control_plane", "settings": {
            "kube_controller_manager": {"node-monitor-grace-period": "50s"},
            "kubelet": {"nodeLeaseDurationSeconds": 12}, "sysctl": {"net.ipv4.tcp_retries2": "8"}}},
        "w1": {"role": "node", "settings": {"kubelet": {}, "sysctl": {"net.ipv4.tcp_retries2": "8"}}},
        "rke1-config": {"role": "node", "settings": {"kube_controller_manager": {"node-monitor-grace-period": "9s"}}},
    }
    assert report.disagreements(nodes, ["cp1", "cp2", "w1"]) == [
        {"setting": "kube_controller_manager node-monitor-grace-period", "values": {"cp1": "20s", "cp2": "50s"}},
        {"setting": "kubelet nodeLeaseDurationSeconds", "values": {"cp1": "12", "cp2": "12", "w1": "(default)"}},
    ]
    w1_settings = {"kubelet": {"nodeLeaseDurationSeconds": 12}, "sysctl": {"net.ipv4.tcp_retries2": "8"}}
    same = {"cp1": nodes["cp1"], "w1": {"role": "node", "settings": w1_settings}}
    assert report.disagreements(same, ["cp1", "w1"]) == []
    assert report.disagreements({}, []) == []


def test_the_demo_lab_has_no_http2_finding_once_its_kubelets_run_the_profiles_environment():
    """Issue 34: the drop-in was there and the kubelet ran HTTP2_READ_IDLE_TIMEOUT_SECONDS=1, yet the audit warned."""
    screen = demo()["screen"]
    assert screen[1] == "findings: 1 high, 3 medium, 1 low (audit_fail_on=none)"
    assert not [line for line in screen if "http2-health-check" in line], screen


LAB_WAIVERS = [{"rule": "single-apiserver", "reason": "the lab has one control-plane node"},
               {"rule": "single-apiserver-address", "reason": "the lab's kubelets reach its one API server directly"},
               {"rule": "short-tolerations-one-address", "reason": "the lab's kubelets reach its one API server directly"}]


def test_waived_findings_leave_the_gate_and_are_recorded_with_their_reason():
    built = demo(fail_on="medium", pods=(), ignore=[*LAB_WAIVERS, {"rule": "tcp-retries-rfc1122", "reason": "accepted"},
                                                    {"rule": "kubelet-dead-connection", "reason": "old"}])
    assert built["gate"] == {"fail_on": "medium", "passed": True, "failing": [], "message": ""}
    assert built["report"]["findings"] == []
    assert built["screen"][1] == "findings: 0 high, 0 medium, 0 low (audit_fail_on=medium)"
    assert built["screen"][2:7] == [
        "waived: single-apiserver: the lab has one control-plane node",
        "waived: single-apiserver-address: the lab's kubelets reach its one API server directly",
        "waived: short-tolerations-one-address: the lab's kubelets reach its one API server directly",
        "waived: tcp-retries-rfc1122: accepted",  # a model warning is waived by its rule
        "waived: kubelet-dead-connection: old (matched no finding)",
    ]
    waived = {w["rule"]: w for w in built["report"]["waived"]}
    assert waived["single-apiserver"]["findings"] == [
        "high single-apiserver: one API server (10.89.0.2): the control plane has no failover"]
    assert "## Waived (audit_ignore)" in built["markdown"] and "the lab has one control-plane node" in built["markdown"]
    assert json.loads(built["json"])["waived"] == built["report"]["waived"]


def test_without_waivers_the_demo_lab_names_what_fails_a_medium_gate():
    assert demo(fail_on="medium", pods=())["gate"]["failing"] == [
        "single-apiserver", "single-apiserver-address", "short-tolerations-one-address"]


@pytest.mark.parametrize("ignore", [
    [{"rule": "single-apiserver"}], [{"rule": "single-apiserver", "reason": "  "}], [{"reason": "why"}],
    ["single-apiserver"], {"rule": "single-apiserver", "reason": "x"},
])
def test_a_waiver_without_a_rule_or_a_reason_is_refused(ignore):
    with pytest.raises(ProfileError) as error:
        demo(ignore=ignore)
    assert error.value.rule == "audit-ignore"


def test_kubernetes_defaults_are_reported_by_their_effect_not_as_contradicting_settings():
    """Issue 34: an untuned cluster showed HIGH inconsistent-settings (heartbeat-retries) for upstream's own defaults."""
    stock = audit_timeline({}, FACTS)
    found = risks.audit_risks(stock)
    assert [(f["risk"], f["severity"]) for f in found] == [("kubernetes-defaults", "medium")]
    assert found[0]["summary"] == ("pods leave a dead node after 5m51s; StatefulSet RWO pods never move without "
                                   "remediation")
    assert "heartbeat-retries" in found[0]["message"] and "upstream's choice" in found[0]["message"]
    # The same rule broken by values of the cluster's own is still a contradiction.
    own = risks.audit_risks(audit_timeline({"kube_controller_manager": {"node-monitor-grace-period": "48s"}}, FACTS))
    assert [(f["risk"], f.get("rule")) for f in own] == [("inconsistent-settings", "heartbeat-retries")]


def test_kubernetes_defaults_of_1_37_are_reported_by_their_effect():
    # The profile filter reproduced the finding for 1.37 (issue 34).
    facts = dict(FACTS, kubernetes_version="1.37.0")
    stock = build_profile(facts, "kubernetes-default")
    assert all(v["upstream_default"] for v in stock["violations"])
    assert [f["risk"] for f in risks.audit_risks(audit_timeline(stock["settings"], facts))] == ["kubernetes-defaults"]


def test_kubelet_flag_overrides_are_findings_with_their_file_and_line():
    override = {"setting": "nodeStatusUpdateFrequency", "flag": "--node-status-update-frequency", "value": "10s",
                "source": "/etc/default/kubelet:1"}
    infos = {f"w{i}": {"overrides": [override]} for i in range(1, 6)}
    infos["cp1"] = {"overrides": []}
    (found,) = risks.override_risks(infos)
    assert found["severity"] == "medium" and found["nodes"] == ["w1", "w2", "w3", "w4", "w5"]
    assert found["summary"] == ("--node-status-update-frequency=10s (/etc/default/kubelet:1) overrides the kubelet "
                                "config file on w1, w2, w3 and 2 more")
    assert found["fix"] == ("remove --node-status-update-frequency from /etc/default/kubelet and restart the kubelet; "
                            "tune-failover then sets nodeStatusUpdateFrequency")
    assert "kubelet-flag-override" in [f["risk"] for f in risks.audit_risks(audit_timeline({}, FACTS), node_infos=infos)]
