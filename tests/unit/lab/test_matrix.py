"""The version matrix's pure parts (lab/matrix): what it checks, how it reads a binary's output, its table."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import parse_version, refused_settings

MATRIX = Path(__file__).resolve().parents[3] / "lab" / "matrix"


def load(name):
    """lab/matrix/<name>.py under a name of its own (bench/ has a report module too)."""
    spec = importlib.util.spec_from_file_location(f"matrix_{name}", MATRIX / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


plan = load("plan")
report = load("report")
signals = load("signals")

BASE = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\naddress: 127.0.0.1\nfailSwapOn: false\n"


def checks(version, component, profile):
    return [check for check in plan.checks_for(version) if check.component == component and check.profile == profile]


def test_every_profile_gets_all_three_components():
    rendered = [check for check in plan.checks_for("1.31.0") if check.kind == "rendered"]
    profiles = {check.profile for check in rendered}
    assert profiles == {"kubernetes-default", "balanced", "fast", "aggressive", "balanced+disable-force-detach"}
    for profile in profiles:
        assert sorted(check.component for check in rendered if check.profile == profile) == sorted(plan.COMPONENTS)
    assert all(check.expected == plan.ACCEPTED for check in rendered)


def test_gate_rendered_where_it_is_off_by_default():
    (balanced,) = checks("1.24.17", plan.CONTROLLER_MANAGER_BINARY, "balanced")
    assert "--feature-gates=NodeOutOfServiceVolumeDetach=true" in balanced.args
    assert "--node-monitor-grace-period=20s" in balanced.args
    (stock,) = checks("1.24.17", plan.CONTROLLER_MANAGER_BINARY, "kubernetes-default")
    assert stock.args == ()
    (fast,) = checks("1.31.0", plan.CONTROLLER_MANAGER_BINARY, "fast")
    assert not any(arg.startswith("--feature-gates") for arg in fast.args)


def test_reference_profile_only_where_the_model_allows_it():
    assert not checks("1.26.0", plan.CONTROLLER_MANAGER_BINARY, "balanced+disable-force-detach")
    (detach,) = checks("1.30.1", plan.CONTROLLER_MANAGER_BINARY, "balanced+disable-force-detach")
    assert "--disable-force-detach-on-timeout=true" in detach.args


@pytest.mark.parametrize("version", ["1.18.0", "1.24.17", "1.26.0", "1.31.0", "1.35.4", "1.36.3", "1.37.2"])
def test_each_refused_setting_is_a_negative_check(version):
    refused = [check for check in plan.checks_for(version) if check.kind == "refused"]
    assert len(refused) == len(refused_settings(parse_version(version)))
    assert all(check.expected == plan.REJECTED and len(check.args) == 1 and check.reason for check in refused)
    given = {check.args[0] for check in refused}
    for refusal in refused_settings(parse_version(version)):
        assert any(refusal.name in arg and arg.endswith(f"={refusal.value}") for arg in given)


def test_controls_expect_rejection():
    controls = [check for check in plan.checks_for("1.35.4") if check.kind == "control"]
    assert {check.component for check in controls} == {plan.APISERVER_BINARY, plan.KUBELET_BINARY}
    assert all(check.expected == plan.REJECTED for check in controls)


def test_flag_args_leave_out_what_the_model_removes():
    flags = {"node-monitor-period": "2s", "pod-eviction-timeout": None,
             "feature-gates": {"TaintBasedEvictions": None, "NodeOutOfServiceVolumeDetach": True}}
    assert plan.flag_args(flags) == ("--node-monitor-period=2s", "--feature-gates=NodeOutOfServiceVolumeDetach=true")
    assert plan.flag_args({"feature-gates": {"TaintBasedEvictions": None}}) == ()


def test_kubelet_config_merges_into_the_base():
    text = plan.kubelet_config(BASE, {"nodeLeaseDurationSeconds": 12, "nodeStatusReportFrequency": "5m0s"})
    document = yaml.safe_load(text)
    assert document["address"] == "127.0.0.1" and document["failSwapOn"] is False
    assert document["nodeLeaseDurationSeconds"] == 12 and document["nodeStatusReportFrequency"] == "5m0s"
    assert yaml.safe_load(plan.kubelet_config(BASE, {plan.UNKNOWN_FIELD: True}))[plan.UNKNOWN_FIELD] is True


def test_given_reads_like_the_file():
    (control,) = [check for check in plan.control_checks() if plan.UNKNOWN_FIELD in check.kubelet_settings]
    assert control.given == f"{plan.UNKNOWN_FIELD}: true"


KUBELET_118 = "I1123 18:40:01.000000   4242 server.go:417] Version: v1.18.0\n"
KUBELET_131 = 'I1123 18:40:01.000000   4242 server.go:486] "Kubelet version" kubeletVersion="v1.31.0"\n'
LENIENT = ('W1123 18:40:00.900000   4242 codec.go:97] using lenient decoding as strict decoding failed: strict decoding error: '
           'unknown field "nodeguardMatrixControl"\n')


@pytest.mark.parametrize("text", [KUBELET_118, KUBELET_131])
def test_kubelet_version_line_means_accepted(text):
    observed, message = signals.kubelet_verdict("I1123 flag parsing\n" + text)
    assert observed == "accepted"
    assert message in ("Version: v1.18.0", '"Kubelet version" kubeletVersion="v1.31.0"')


def test_kubelet_lenient_decoding_is_a_rejection():
    observed, message = signals.kubelet_verdict(LENIENT + KUBELET_131)
    assert observed == "rejected"
    assert message.startswith("using lenient decoding") and "nodeguardMatrixControl" in message


def test_kubelet_without_its_version_line_has_no_verdict():
    assert signals.kubelet_verdict("I1123 18:40:00.1   4242 flags.go:33] FLAG: --config=\"x\"\n") == (None, "")


def test_refusal_message_quotes_the_binary():
    log = ("I1123 18:40:00.100000   4242 serving.go:1] Generated self-signed cert\n"
           "Error: unknown flag: --pod-eviction-timeout\n"
           "Usage:\n  kube-controller-manager [flags]\n")
    assert signals.refusal_message(log) == "Error: unknown flag: --pod-eviction-timeout"
    fatal = "F1123 18:40:00.100000   4242 server.go:214] invalid configuration: nodeLeaseDurationSeconds must be greater than 0\n"
    assert signals.refusal_message(fatal) == "invalid configuration: nodeLeaseDurationSeconds must be greater than 0"
    assert signals.refusal_message("") == "(no output)"
    assert len(signals.refusal_message("E1123 error " + "x" * 1000)) == signals.MESSAGE_LIMIT


def results(observed):
    return {
        "started": "2026-11-23 19:00:00", "finished": "2026-11-23 19:10:00", "duration_seconds": 600,
        "commit": "abc1234", "etcd": "v3.6.5",
        "versions": [
            {"version": "v1.18.0", "status": "not built", "note": "proxy refuses it", "checks": []},
            {"version": "v1.31.0", "status": "built", "binary_version": "Kubernetes v1.31.0", "note": "", "checks": [
                {"component": "kube-controller-manager", "profile": "refused", "given": "--pod-eviction-timeout=5m0s",
                 "expected": "rejected", "observed": observed, "message": "Error: unknown flag: --pod-eviction-timeout"},
                {"component": "kubelet", "profile": "fast", "given": "nodeLeaseDurationSeconds: 3",
                 "expected": "accepted", "observed": "accepted", "message": ""},
            ]},
        ],
    }


def test_table_when_every_check_passed():
    text = report.markdown(results("rejected"))
    assert report.failed_checks(results("rejected")) == []
    assert "Every check passed." in text
    assert "| v1.31.0 | built | Kubernetes v1.31.0 | 2/2 checks ok |  |" in text
    assert "| v1.18.0 | not built |  | not run | proxy refuses it |" in text
    assert ("| v1.31.0 | kube-controller-manager | refused | `--pod-eviction-timeout=5m0s` | rejected | rejected | ok | "
            "Error: unknown flag: --pod-eviction-timeout |") in text


def test_table_shows_a_refused_setting_the_binary_accepted():
    failing = results("accepted")
    assert [(version, check["profile"]) for version, check in report.failed_checks(failing)] == [("v1.31.0", "refused")]
    text = report.markdown(failing)
    assert "**1 check(s) failed.**" in text and "1/2 checks ok, **1 failed**" in text
    assert "| rejected | accepted | **FAILED** |" in text


def test_a_partial_run_keeps_the_other_versions_marked_with_their_run():
    earlier = results("rejected")
    later = {**results("rejected"), "started": "2026-11-26 07:00:00", "commit": "def5678", "etcd": "v3.7.0",
             "versions": [{"version": "v1.37.2", "status": "built", "binary_version": "Kubernetes v1.37.2", "note": "",
                           "checks": []}, {**earlier["versions"][1], "note": "again"}]}
    merged = report.merge(earlier, later)
    assert [entry["version"] for entry in merged["versions"]] == ["v1.18.0", "v1.31.0", "v1.37.2"]
    assert merged["versions"][0]["kept_from"] == "run of 2026-11-23 19:00:00 UTC (commit abc1234, etcd v3.6.5)"
    assert "kept_from" not in merged["versions"][1] and "kept_from" not in merged["versions"][2]
    text = report.markdown(merged)
    assert "(versions marked \"kept from\" come from an earlier run)" in text
    assert ("| v1.18.0 | not built |  | not run | kept from the run of 2026-11-23 19:00:00 UTC (commit abc1234, "
            "etcd v3.6.5); proxy refuses it |") in text
    # Kept again by a third partial run, a row still names the run it comes from.
    third = {**later, "started": "2026-11-27 08:00:00", "versions": []}
    assert report.merge(merged, third)["versions"][0]["kept_from"] == merged["versions"][0]["kept_from"]
    assert report.merge(merged, third)["versions"][2]["kept_from"].startswith("run of 2026-11-26 07:00:00 UTC")


def test_generated_part_replaced_between_markers():
    page = f"# Title\n\nby hand\n\n{report.BEGIN}\nold table\n{report.END}\n\nmore by hand\n"
    assert report.replace_generated(page, "new table\n") == (
        f"# Title\n\nby hand\n\n{report.BEGIN}\nnew table\n{report.END}\n\nmore by hand\n")
    with pytest.raises(ValueError):
        report.replace_generated("# no markers\n", "x")
