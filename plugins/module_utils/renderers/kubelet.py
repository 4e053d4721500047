# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeletConfiguration documents (/var/lib/kubelet/config.yaml, ConfigMap kube-system/kubelet-config).

Settings are top-level camelCase fields. ``None`` removes a field (the kubelet default applies);
a mapping value (e.g. ``featureGates``) is merged key by key; anything else replaces the field.
"""

from __future__ import annotations

import re
from collections import namedtuple

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

Rendered = namedtuple("Rendered", "document changes")

API_GROUP = "kubelet.config.k8s.io/"
KIND = "KubeletConfiguration"

# Types of the fields a failover profile touches (and a few neighbours), so a wrong type fails
# here with a clear message instead of a kubelet that does not start.
DURATION_FIELDS = frozenset((
    "nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "shutdownGracePeriod",
    "shutdownGracePeriodCriticalPods", "syncFrequency", "fileCheckFrequency", "httpCheckFrequency",
    "runtimeRequestTimeout", "streamingConnectionIdleTimeout", "evictionPressureTransitionPeriod",
    "imageMinimumGCAge", "cpuManagerReconcilePeriod",
))
INTEGER_FIELDS = frozenset((
    "nodeLeaseDurationSeconds", "maxPods", "podPidsLimit", "evictionMaxPodGracePeriod",
    "nodeStatusMaxImages", "registryPullQPS", "registryBurst", "eventRecordQPS", "eventBurst",
    "kubeAPIQPS", "kubeAPIBurst",
))
BOOLEAN_MAP_FIELDS = frozenset(("featureGates",))

# Fields failover_node_info reports (the ones that shape detection and shutdown timing).
FAILOVER_FIELDS = (
    "nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "nodeLeaseDurationSeconds",
    "shutdownGracePeriod", "shutdownGracePeriodCriticalPods", "featureGates",
)

_GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
_FIELD_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")


def _check_document(document, source: str) -> None:
    kind = document.get("kind")
    api_version = document.get("apiVersion")
    if kind not in (None, KIND) or (api_version is not None and not str(api_version).startswith(API_GROUP)):
        raise FileEditError(f"{source} is {api_version} {kind}, not a {API_GROUP}* {KIND}")


def _normalise(field: str, value, source: str):
    """The value as the kubelet expects it; FileEditError for a wrong type."""
    if value is None:
        return None
    if field in DURATION_FIELDS:
        if not isinstance(value, str) or not _GO_DURATION.match(value):
            raise FileEditError(
                f"{source}: {field} must be a duration string such as 10s or 1m30s, got {type(value).__name__} {value!r}"
            )
    elif field in INTEGER_FIELDS:
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise FileEditError(f"{source}: {field} must be an integer, got {type(value).__name__} {value!r}")
    elif field in BOOLEAN_MAP_FIELDS:
        if not isinstance(value, dict):
            raise FileEditError(f"{source}: {field} must be a mapping Name: true|false, got {value!r}")
        for key, flag in value.items():
            if flag is not None and not isinstance(flag, bool):
                raise FileEditError(f"{source}: {field}.{key} must be true, false or null, got {flag!r}")
    return value


def _merge(target, field: str, value, path: str, changes: list) -> None:
    """Set target[field] = value, merging mappings key by key, and record what changed."""
    current = target.get(field)
    if value is None:
        if field in target:
            del target[field]
            changes.append(f"{path}{field}: {current!r} -> (removed)")
        return
    if isinstance(value, dict) and (isinstance(current, dict) or current is None):
        if current is None:
            target[field] = current = yamldoc.new_mapping()
            changes.append(f"{path}{field}: (unset) -> {{}}")
        for key, item in value.items():
            _merge(current, key, item, f"{path}{field}.", changes)
        return
    if current != value or isinstance(current, bool) != isinstance(value, bool):
        before = "(unset)" if field not in target else repr(current)
        target[field] = yamldoc.same_style(current, value) if isinstance(value, str) else value
        changes.append(f"{path}{field}: {before} -> {value!r}")


def render(document, settings: dict, source: str) -> Rendered:
    """Apply ``settings`` (camelCase field -> value, None removes) to a KubeletConfiguration."""
    if not isinstance(settings, dict):
        raise FileEditError(f"{source}: settings must be a mapping of KubeletConfiguration fields, got {settings!r}")
    _check_document(document, source)
    settings = yamldoc.plain(settings, source)  # playbook variables arrive as tagged strings
    wanted = {}
    for field, value in settings.items():
        if not isinstance(field, str) or not _FIELD_NAME.match(field):
            raise FileEditError(f"{source}: {field!r} is not a KubeletConfiguration field name (camelCase)")
        if field in ("apiVersion", "kind"):
            raise FileEditError(f"{source}: {field} is not a setting")
        wanted[field] = _normalise(field, value, source)
    new_document = yamldoc.copy_document(document)
    changes = []
    if not new_document:  # a new (drop-in) file starts with its type
        _merge(new_document, "apiVersion", API_GROUP + "v1beta1", "", changes)
        _merge(new_document, "kind", KIND, "", changes)
    for field, value in wanted.items():
        _merge(new_document, field, value, "", changes)
    if not changes:
        return Rendered(document, [])
    return Rendered(new_document, changes)


def read_settings(document, source: str, fields=FAILOVER_FIELDS) -> dict:
    """The failover-relevant fields set in the document.

    Absent fields and zero values (kubeadm writes ``nodeStatusUpdateFrequency: 0s``) are left
    out: the kubelet replaces a zero with its default, so both mean "default".
    """
    _check_document(document, source)
    return {field: _plain(document[field]) for field in fields if field in document and not is_zero(document[field])}


def is_zero(value) -> bool:
    """True for values the kubelet treats as unset: None, 0, "0s", "0m0s", empty mappings."""
    if value is None or (isinstance(value, (dict, list)) and not value):
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return value == 0
    if isinstance(value, str) and _GO_DURATION.match(value):
        return all(float(number) == 0 for number in re.findall(r"\d+(?:\.\d+)?", value))
    return False


# KubeletConfiguration fields the kubelet also accepts as a command-line flag (RKE1 extra_args,
# RKE2/k3s kubelet-arg). Most failover fields (nodeLeaseDurationSeconds, nodeStatusReportFrequency,
# shutdownGracePeriod) have no flag and need a configuration file.
FIELD_FLAGS = {
    "nodeStatusUpdateFrequency": "node-status-update-frequency",
    "syncFrequency": "sync-frequency",
    "maxPods": "max-pods",
    "evictionMaxPodGracePeriod": "eviction-max-pod-grace-period",
    "evictionPressureTransitionPeriod": "eviction-pressure-transition-period",
    "featureGates": "feature-gates",
}
FLAG_FIELDS = {flag: field for field, flag in FIELD_FLAGS.items()}


def settings_to_flags(settings: dict, where: str, skip_unsupported: bool = False) -> dict:
    """KubeletConfiguration fields -> kubelet flags (featureGates becomes a mapping to merge).

    Fields without a kubelet flag fail, unless ``skip_unsupported`` leaves them out.
    """
    flags = {}
    for field, value in yamldoc.plain(settings or {}, where).items():
        if field not in FIELD_FLAGS and skip_unsupported:
            continue
        if field not in FIELD_FLAGS:
            raise FileEditError(
                f"{where}: the kubelet has no command-line flag for {field}; set it in a KubeletConfiguration "
                "file (nodeguard.failover.kubelet_config, e.g. a drop-in in the kubelet --config-dir) instead"
            )
        value = _normalise(field, value, where)
        flags[FIELD_FLAGS[field]] = value
    return flags


def flags_to_settings(flags: dict) -> dict:
    """Kubelet flags as read from a file ({flag: [values]}) -> the failover fields they set."""
    settings = {}
    for flag, values in (flags or {}).items():
        if flag not in FLAG_FIELDS or not values or values[-1] is None:
            continue
        field, value = FLAG_FIELDS[flag], values[-1]
        if field == "featureGates":
            value = {gate: state == "true" for gate, state in _gates(value).items()}
        elif field in INTEGER_FIELDS and value.isdigit():
            value = int(value)
        if not is_zero(value) and field in FAILOVER_FIELDS:
            settings[field] = value
    return settings


def _gates(text: str) -> dict:
    return flaglib.parse_feature_gates(text, "kubelet --feature-gates")


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value
