"""Versions x presets: which flags and gates render where (never one a version rejects)."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.model.durations import format_duration
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import PRESET_NAMES
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import build_profile

VERSIONS = ["1.18.20", "1.19.16", "1.20.15", "1.23.17", "1.24.17", "1.25.16", "1.26.15", "1.27.16",
            "1.29.14", "1.30.10", "1.31.6", "1.32.2", "1.35.4", "1.36.0"]
CASES = [(version, preset) for version in VERSIONS for preset in PRESET_NAMES]


def profile_for(version, preset, **kwargs):
    return build_profile({"kubernetes_version": version, "node_count": 10}, preset, **kwargs)


def minor(version):
    return int(version.split(".")[1])


@pytest.mark.parametrize("version, preset", CASES)
def test_pod_eviction_timeout_only_before_1_27(version, preset):
    flags = profile_for(version, preset)["settings"]["kube_controller_manager"]
    value = flags["pod-eviction-timeout"]
    if minor(version) >= 27 or preset == "kubernetes-default":
        assert value is None
    else:
        tolerations = profile_for(version, preset)["settings"]["kube_apiserver"]
        assert value == format_duration(int(tolerations["default-unreachable-toleration-seconds"]))


@pytest.mark.parametrize("version, preset", CASES)
def test_feature_gates(version, preset):
    gates = profile_for(version, preset)["settings"]["kube_controller_manager_feature_gates"]
    assert gates["TaintBasedEvictions"] is None  # locked on 1.18-1.19, removed from 1.20: never named
    if minor(version) in (24, 25):
        assert gates["NodeOutOfServiceVolumeDetach"] is (None if preset == "kubernetes-default" else True)
    elif minor(version) >= 32:
        assert gates["NodeOutOfServiceVolumeDetach"] is None
    else:
        assert "NodeOutOfServiceVolumeDetach" not in gates
    assert all(value in (None, True) for value in gates.values())


@pytest.mark.parametrize("version", VERSIONS)
def test_disable_force_detach_only_from_1_30(version):
    if minor(version) >= 30:
        flags = profile_for(version, "fast", overrides={"disable_force_detach_on_timeout": True})
        assert flags["settings"]["kube_controller_manager"]["disable-force-detach-on-timeout"] == "true"
    assert profile_for(version, "fast")["settings"]["kube_controller_manager"]["disable-force-detach-on-timeout"] is None


@pytest.mark.parametrize("version, preset", CASES)
def test_kubelet_sets_report_frequency_with_update_frequency(version, preset):
    kubelet = profile_for(version, preset)["settings"]["kubelet"]
    assert set(kubelet) == {"nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "nodeLeaseDurationSeconds"}
    assert kubelet["nodeStatusReportFrequency"] == "5m0s"
    assert isinstance(kubelet["nodeLeaseDurationSeconds"], int)


@pytest.mark.parametrize("version, preset", CASES)
def test_values_are_strings_or_null(version, preset):
    settings = profile_for(version, preset)["settings"]
    for section in ("kube_controller_manager", "kube_apiserver", "sysctl"):
        for name, value in settings[section].items():
            assert not name.startswith("-")
            assert value is None or isinstance(value, str)


def test_default_grace_flag_follows_the_version():
    # kubernetes-default removes the flag so a 1.31 -> 1.32 upgrade picks up 50s.
    for version in ("1.31.0", "1.32.0"):
        assert profile_for(version, "kubernetes-default")["settings"]["kube_controller_manager"][
            "node-monitor-grace-period"] is None


FAST_1_35 = {
    "kubelet": {"nodeStatusUpdateFrequency": "10s", "nodeStatusReportFrequency": "5m0s", "nodeLeaseDurationSeconds": 3},
    "kube_controller_manager": {"node-monitor-period": "1s", "node-monitor-grace-period": "4s",
                                "node-startup-grace-period": None, "disable-force-detach-on-timeout": None,
                                "pod-eviction-timeout": None},
    "kube_controller_manager_feature_gates": {"TaintBasedEvictions": None, "NodeOutOfServiceVolumeDetach": None},
    "kube_apiserver": {"default-not-ready-toleration-seconds": "20", "default-unreachable-toleration-seconds": "20"},
    "sysctl": {"net.ipv4.tcp_retries2": "7", "net.ipv4.tcp_keepalive_time": "30",
               "net.ipv4.tcp_keepalive_intvl": "10", "net.ipv4.tcp_keepalive_probes": "3"},
}


def test_fast_on_1_35_exactly():
    profile = profile_for("1.35.4", "fast")
    assert profile["settings"] == FAST_1_35
    assert profile["preset"] == "fast"
    assert profile["kubernetes_version"] == "1.35.4"


def test_flag_maps_are_complete_per_component():
    from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import build_profile

    profile = build_profile({"kubernetes_version": "1.25.9", "node_count": 3}, "fast")
    kcm = profile["flags"]["kube_controller_manager"]
    assert kcm["feature-gates"] == {"TaintBasedEvictions": None, "NodeOutOfServiceVolumeDetach": True}
    assert kcm["node-monitor-grace-period"] == "4s"
    assert profile["flags"]["kube_apiserver"] == profile["settings"]["kube_apiserver"]
    assert "rke1_kubelet_settings" not in profile


def test_rke1_kubelet_carries_only_changed_fields_and_the_report_frequency_with_the_update():
    from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import build_profile

    facts = {"kubernetes_version": "1.28.15", "node_count": 3, "distribution": "rke1"}
    stock = build_profile(facts, "kubernetes-default", overrides={"node_monitor_grace_period": "60s"})
    assert stock["rke1_kubelet_settings"] == {}
    faster = build_profile(facts, "kubernetes-default",
                           overrides={"node_status_update_frequency": "5s", "node_monitor_grace_period": "60s"})
    assert faster["rke1_kubelet_settings"] == {"nodeStatusUpdateFrequency": "5s", "nodeStatusReportFrequency": "5m0s"}
