"""The kubelet stand-in's pure parts (lab/workers/standin): config reading and the kwok Stages.

No lab needed: these pin the kubelet rules the stand-in copies, so a change that breaks them
fails here before it shows up as a wrong heartbeat on the lab.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "lab" / "workers" / "standin"))

import kubelet_config
import kwok_stages
from volume_manager import unique_volume_name

KUBEADM_DEFAULTS = {"kind": "KubeletConfiguration", "nodeStatusReportFrequency": "0s", "nodeStatusUpdateFrequency": "0s"}


@pytest.mark.parametrize(("text", "seconds"), [
    ("10s", 10), ("1m30s", 90), ("500ms", 0.5), ("1h", 3600), ("0s", 0), ("0", 0), ("1.5s", 1.5),
])
def test_go_durations(text, seconds):
    assert kubelet_config.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["10", "ten seconds", "5x", "1m 30s", ""])
def test_bad_durations_are_refused(text):
    with pytest.raises(kubelet_config.KubeletConfigError):
        kubelet_config.parse_duration(text)


def test_kubeadm_zero_values_mean_kubelet_defaults():
    settings = kubelet_config.settings_from_document(KUBEADM_DEFAULTS)
    assert (settings.status_update_seconds, settings.status_report_seconds, settings.lease_duration_seconds) == (10, 300, 40)
    assert settings.lease_renew_seconds == 10


def test_explicit_update_frequency_without_report_frequency_reports_at_that_rate():
    settings = kubelet_config.settings_from_document({**KUBEADM_DEFAULTS, "nodeStatusUpdateFrequency": "1s"})
    assert (settings.status_update_seconds, settings.status_report_seconds) == (1, 1)


def test_all_three_timings_are_read():
    settings = kubelet_config.settings_from_document({
        "kind": "KubeletConfiguration", "nodeStatusUpdateFrequency": "4s", "nodeStatusReportFrequency": "1m",
        "nodeLeaseDurationSeconds": 12})
    assert (settings.status_update_seconds, settings.status_report_seconds, settings.lease_duration_seconds) == (4, 60, 12)
    assert settings.lease_renew_seconds == 3


@pytest.mark.parametrize("document", [
    {"kind": "KubeProxyConfiguration"},
    [],
    {"kind": "KubeletConfiguration", "nodeStatusUpdateFrequency": "-1s"},
    {"kind": "KubeletConfiguration", "nodeLeaseDurationSeconds": -5},
])
def test_unusable_documents_are_refused(document):
    with pytest.raises(kubelet_config.KubeletConfigError):
        kubelet_config.settings_from_document(document)


def test_status_report_stage_waits_the_report_frequency():
    settings = kubelet_config.KubeletSettings(status_update_seconds=2, status_report_seconds=60)
    stages = {s["metadata"]["name"]: s for s in yaml.safe_load_all(kwok_stages.render(settings))}
    delay = stages["node-status-report"]["spec"]["delay"]
    assert delay["durationMilliseconds"] == 60_000
    assert 60_000 < delay["jitterDurationMilliseconds"] <= 63_000


def test_pods_start_only_with_a_ready_sandbox_and_deletions_are_finalized():
    stages = {s["metadata"]["name"]: s["spec"] for s in kwok_stages.stages(kubelet_config.KubeletSettings())}
    start_keys = [e["key"] for e in stages["pod-start"]["selector"]["matchExpressions"]]
    assert any("PodReadyToStartContainers" in key for key in start_keys)
    assert stages["pod-finalize"]["next"] == {"finalizers": {"empty": True}, "delete": True}
    # Only the node heartbeat is delayed; starting and finalizing pods is immediate.
    assert [name for name, spec in stages.items() if "delay" in spec] == ["node-status-report"]


def test_csi_volume_names_match_the_attach_detach_controller():
    assert unique_volume_name("lab.csi.nodeguard.dev", "db-0") == "kubernetes.io/csi/lab.csi.nodeguard.dev^db-0"


def test_without_a_volume_manager_pods_start_at_once():
    stages = {s["metadata"]["name"]: s["spec"] for s in kwok_stages.stages(kubelet_config.KubeletSettings(), volume_manager=False)}
    assert not any("PodReadyToStartContainers" in e["key"] for e in stages["pod-start"]["selector"]["matchExpressions"])
