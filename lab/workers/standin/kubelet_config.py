"""The part of a KubeletConfiguration file (/var/lib/kubelet/config.yaml) the stand-in honours.

Defaults and the report-frequency rule follow the kubelet's own v1beta1 defaulting, so a file
tuned for a real kubelet means the same here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

DEFAULT_STATUS_UPDATE_SECONDS = 10.0
DEFAULT_STATUS_REPORT_SECONDS = 300.0
DEFAULT_LEASE_DURATION_SECONDS = 40
DEFAULT_MAX_PODS = 110
# The kubelet renews its Lease every 0.25 x nodeLeaseDurationSeconds (nodeLeaseRenewIntervalFraction).
LEASE_RENEW_FRACTION = 0.25

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class KubeletConfigError(ValueError):
    """The config file cannot be used; the message says which field and why."""


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string such as "10s", "1m30s", "500ms" or "0s"."""
    text = str(text).strip()
    if text == "0":
        return 0.0
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise KubeletConfigError(f"not a Go duration: {text!r}")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


@dataclass(frozen=True)
class KubeletSettings:
    status_update_seconds: float = DEFAULT_STATUS_UPDATE_SECONDS
    status_report_seconds: float = DEFAULT_STATUS_REPORT_SECONDS
    lease_duration_seconds: int = DEFAULT_LEASE_DURATION_SECONDS
    max_pods: int = DEFAULT_MAX_PODS
    register_with_taints: list[dict] = field(default_factory=list)

    @property
    def lease_renew_seconds(self) -> float:
        return self.lease_duration_seconds * LEASE_RENEW_FRACTION


def _duration_field(doc: dict, name: str) -> float:
    """Seconds in a duration field; 0 when absent or "0s", which the kubelet treats as unset."""
    value = doc.get(name)
    return 0.0 if value is None else parse_duration(value)


def settings_from_document(doc: dict) -> KubeletSettings:
    if not isinstance(doc, dict) or doc.get("kind") != "KubeletConfiguration":
        raise KubeletConfigError("the file is not a KubeletConfiguration document")
    update_seconds = _duration_field(doc, "nodeStatusUpdateFrequency")
    report_seconds = _duration_field(doc, "nodeStatusReportFrequency")
    if update_seconds < 0 or report_seconds < 0:
        raise KubeletConfigError("nodeStatusUpdateFrequency and nodeStatusReportFrequency must not be negative")
    # Kubelet defaulting (v1beta1 SetDefaults, PR #95135): an explicit update frequency without a
    # report frequency means a full status write at the update frequency.
    if report_seconds == 0:
        report_seconds = update_seconds or DEFAULT_STATUS_REPORT_SECONDS
    if update_seconds == 0:
        update_seconds = DEFAULT_STATUS_UPDATE_SECONDS
    lease = int(doc.get("nodeLeaseDurationSeconds") or DEFAULT_LEASE_DURATION_SECONDS)
    if lease < 0:
        raise KubeletConfigError("nodeLeaseDurationSeconds must not be negative")
    return KubeletSettings(
        status_update_seconds=update_seconds,
        status_report_seconds=report_seconds,
        lease_duration_seconds=lease,
        max_pods=int(doc.get("maxPods") or DEFAULT_MAX_PODS),
        register_with_taints=list(doc.get("registerWithTaints") or []),
    )


def load(path: str) -> KubeletSettings:
    with open(path, encoding="utf-8") as handle:
        return settings_from_document(yaml.safe_load(handle))
