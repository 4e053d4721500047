# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The failover knobs in one record, in seconds, and where each one lives in the profile settings.

Timings is what the timeline, load and rules reason about. SETTINGS maps every knob to its
component section and field name, so reading a cluster and rendering a profile use one table.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.durations import parse_duration
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import Version, default_grace_seconds

KUBELET = "kubelet"
CONTROLLER_MANAGER = "kube_controller_manager"
CONTROLLER_MANAGER_GATES = "kube_controller_manager_feature_gates"
APISERVER = "kube_apiserver"
SYSCTL = "sysctl"
# The kubelet's environment, the names of rules.HTTP2_DEFAULTS only (failover_node_info reads the running kubelet).
KUBELET_ENVIRONMENT = "kubelet_environment"


@dataclass(frozen=True)
class Timings:
    """Every value that decides how fast a dead node is noticed and its pods leave (seconds unless named)."""

    node_status_update_frequency: float
    node_status_report_frequency: float
    node_lease_duration_seconds: int
    node_monitor_period: float
    node_monitor_grace_period: float
    node_startup_grace_period: float
    not_ready_toleration_seconds: int
    unreachable_toleration_seconds: int
    tcp_retries2: int
    tcp_keepalive_time: int
    tcp_keepalive_intvl: int
    tcp_keepalive_probes: int
    disable_force_detach_on_timeout: bool | None = None


@dataclass(frozen=True)
class Setting:
    """Where one Timings field lives: component section, field or flag name, and value kind."""

    key: str
    section: str
    name: str
    kind: str  # "duration", "int" or "bool"


SETTINGS = (
    Setting("node_status_update_frequency", KUBELET, "nodeStatusUpdateFrequency", "duration"),
    Setting("node_status_report_frequency", KUBELET, "nodeStatusReportFrequency", "duration"),
    Setting("node_lease_duration_seconds", KUBELET, "nodeLeaseDurationSeconds", "int"),
    Setting("node_monitor_period", CONTROLLER_MANAGER, "node-monitor-period", "duration"),
    Setting("node_monitor_grace_period", CONTROLLER_MANAGER, "node-monitor-grace-period", "duration"),
    Setting("node_startup_grace_period", CONTROLLER_MANAGER, "node-startup-grace-period", "duration"),
    Setting("disable_force_detach_on_timeout", CONTROLLER_MANAGER, "disable-force-detach-on-timeout", "bool"),
    Setting("not_ready_toleration_seconds", APISERVER, "default-not-ready-toleration-seconds", "int"),
    Setting("unreachable_toleration_seconds", APISERVER, "default-unreachable-toleration-seconds", "int"),
    Setting("tcp_retries2", SYSCTL, "net.ipv4.tcp_retries2", "int"),
    Setting("tcp_keepalive_time", SYSCTL, "net.ipv4.tcp_keepalive_time", "int"),
    Setting("tcp_keepalive_intvl", SYSCTL, "net.ipv4.tcp_keepalive_intvl", "int"),
    Setting("tcp_keepalive_probes", SYSCTL, "net.ipv4.tcp_keepalive_probes", "int"),
)
SETTINGS_BY_KEY = {setting.key: setting for setting in SETTINGS}
TIMING_KEYS = tuple(field.name for field in fields(Timings))


def kubernetes_defaults(version: Version) -> Timings:
    """What a cluster of this version does when nobody sets anything (kernel defaults for sysctls)."""
    return Timings(
        node_status_update_frequency=10.0,
        node_status_report_frequency=300.0,
        node_lease_duration_seconds=40,
        node_monitor_period=5.0,
        node_monitor_grace_period=default_grace_seconds(version),
        node_startup_grace_period=60.0,
        not_ready_toleration_seconds=300,
        unreachable_toleration_seconds=300,
        tcp_retries2=15,
        tcp_keepalive_time=7200,
        tcp_keepalive_intvl=75,
        tcp_keepalive_probes=9,
        disable_force_detach_on_timeout=None,
    )


def coerce(setting: Setting, value):
    """One input value in the kind the setting needs, or ProfileError("wrong-type")."""
    label = setting.key
    if setting.kind == "duration":
        seconds = parse_duration(value, label)
        if seconds <= 0:
            raise ProfileError("wrong-type", f"{label} must be a positive duration, got {value!r}")
        return seconds
    if setting.kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ProfileError("wrong-type", f"{label} must be true or false, got {value!r}")
    if isinstance(value, bool):
        raise ProfileError("wrong-type", f"{label} must be a whole number, got {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
        number = int(value.strip())
    else:
        raise ProfileError("wrong-type", f"{label} must be a whole number, got {value!r}")
    if number < 0 or (number == 0 and setting.key in ("node_lease_duration_seconds", "tcp_retries2")):
        raise ProfileError("wrong-type", f"{label} must be a positive whole number, got {value!r}")
    return number


def apply_overrides(timings: Timings, overrides) -> Timings:
    """Timings with individual values replaced; keys are Timings field names (see docs/settings.md)."""
    if overrides is None:
        return timings
    if not isinstance(overrides, dict):
        raise ProfileError("wrong-type", f"overrides must be a mapping of setting name to value, got {overrides!r}")
    changes = {}
    for key, value in overrides.items():
        if key not in SETTINGS_BY_KEY:
            known = ", ".join(sorted(SETTINGS_BY_KEY))
            raise ProfileError("unknown-setting", f"unknown override {key!r}; known settings: {known}")
        changes[key] = coerce(SETTINGS_BY_KEY[key], value)
    return replace(timings, **changes)


def read_settings(settings, version: Version):
    """Timings from settings in profile shape, as read from a cluster; missing values are version defaults.

    Returns (timings, problems, defaults_used). Problems are (rule, message) pairs for values that
    could not be read; those values fall back to the default instead of stopping the audit.
    """
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        raise ProfileError("wrong-type", f"settings must be a mapping in profile shape, got {settings!r}")
    values = {}
    problems = []
    unreadable = set()
    for setting in SETTINGS:
        section = settings.get(setting.section) or {}
        if not isinstance(section, dict):
            if setting.section not in unreadable:
                unreadable.add(setting.section)
                problems.append(("wrong-type", f"settings.{setting.section} must be a mapping, got {section!r}"))
            continue
        if setting.section == CONTROLLER_MANAGER or setting.section == APISERVER:
            section = {str(name).lstrip("-"): value for name, value in section.items()}
        if section.get(setting.name) is None:
            continue
        try:
            values[setting.key] = coerce(setting, section[setting.name])
        except ProfileError as error:
            problems.append((error.rule, f"{setting.section}.{setting.name}: {error}"))
    kubelet = settings.get(KUBELET) or {}
    # The kubelet copies an explicit nodeStatusUpdateFrequency into an unset nodeStatusReportFrequency
    # (PR #84007): one update per second then means one full Node status write per second.
    report_unset = isinstance(kubelet, dict) and kubelet.get("nodeStatusReportFrequency") is None
    if "node_status_update_frequency" in values and "node_status_report_frequency" not in values and report_unset:
        values["node_status_report_frequency"] = values["node_status_update_frequency"]
    defaults_used = [key for key in TIMING_KEYS if key not in values and key != "disable_force_detach_on_timeout"]
    return replace(kubernetes_defaults(version), **values), problems, defaults_used
