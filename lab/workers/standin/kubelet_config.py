"""The part of a KubeletConfiguration file (/var/lib/kubelet/config.yaml) the stand-in honours.

Defaults and the report-frequency rule follow the kubelet's own v1beta1 defaulting, so a file
tuned for a real kubelet means the same here. A file the kubelet v1.35 refuses for the fields the
collection writes (a duration that does not parse, nodeLeaseDurationSeconds below 1, a
shutdownGracePeriod below 1 s or shorter than shutdownGracePeriodCriticalPods) is refused here too,
in the kubelet's words (cmd/kubelet/app/server.go, pkg/kubelet/apis/config/validation), so the
collection's rollback meets the same failure on a stand-in as on a real kubelet.
"""

from __future__ import annotations

import datetime
import os
import re
from dataclasses import dataclass, field

import yaml

DEFAULT_STATUS_UPDATE_SECONDS = 10.0
DEFAULT_STATUS_REPORT_SECONDS = 300.0
DEFAULT_LEASE_DURATION_SECONDS = 40
DEFAULT_MAX_PODS = 110
DEFAULT_HEALTHZ_PORT = 10248
DEFAULT_HEALTHZ_BIND_ADDRESS = "127.0.0.1"
# The kubelet renews its Lease every 0.25 x nodeLeaseDurationSeconds (nodeLeaseRenewIntervalFraction).
LEASE_RENEW_FRACTION = 0.25

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
DURATION_FIELDS = ("nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "shutdownGracePeriod",
                   "shutdownGracePeriodCriticalPods")


class KubeletConfigError(ValueError):
    """The config file cannot be used; the message is the kubelet's error for it."""


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string such as "10s", "1m30s", "500ms", "-1s" or "0s"."""
    text = str(text).strip()
    if text == "0":
        return 0.0
    sign = -1.0 if text.startswith("-") else 1.0
    body = text[1:] if text[:1] in ("+", "-") else text
    parts = _DURATION_PART.findall(body)
    if not parts or "".join(number + unit for number, unit in parts) != body:
        # Go's time.ParseDuration, as the kubelet's decoder reports it.
        raise KubeletConfigError(f'time: invalid duration "{text}"')
    return sign * sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


@dataclass(frozen=True)
class KubeletSettings:
    status_update_seconds: float = DEFAULT_STATUS_UPDATE_SECONDS
    status_report_seconds: float = DEFAULT_STATUS_REPORT_SECONDS
    lease_duration_seconds: int = DEFAULT_LEASE_DURATION_SECONDS
    max_pods: int = DEFAULT_MAX_PODS
    register_with_taints: list[dict] = field(default_factory=list)
    # Where the kubelet serves /healthz (healthzPort 0: not served).
    healthz_port: int = DEFAULT_HEALTHZ_PORT
    healthz_bind_address: str = DEFAULT_HEALTHZ_BIND_ADDRESS

    @property
    def lease_renew_seconds(self) -> float:
        return self.lease_duration_seconds * LEASE_RENEW_FRACTION


def _decode(doc: dict) -> dict:
    """Seconds of the duration fields (0 when absent or "0s", which the kubelet treats as unset)."""
    seconds = {}
    for name in DURATION_FIELDS:
        value = doc.get(name)
        try:
            seconds[name] = 0.0 if value is None else parse_duration(value)
        except KubeletConfigError as error:
            raise KubeletConfigError(f"failed to decode: {error}") from None
    return seconds


def _validate(doc: dict, seconds: dict) -> None:
    """ValidateKubeletConfiguration for the collection's fields: every error, aggregated as the kubelet does."""
    errors = []
    lease = doc.get("nodeLeaseDurationSeconds")
    if lease is not None and int(lease) < 0:  # 0 is defaulted to 40 before validation
        errors.append("invalid configuration: nodeLeaseDurationSeconds must be greater than 0")
    grace, critical = seconds["shutdownGracePeriod"], seconds["shutdownGracePeriodCriticalPods"]
    if critical > grace:
        errors.append(
            f"invalid configuration: shutdownGracePeriodCriticalPods {{{doc.get('shutdownGracePeriodCriticalPods')}}} "
            f"must be <= shutdownGracePeriod {{{doc.get('shutdownGracePeriod') or '0s'}}}")
    for name in ("shutdownGracePeriod", "shutdownGracePeriodCriticalPods"):
        if seconds[name] < 0 or 0 < seconds[name] < 1:
            errors.append(f"invalid configuration: {name} {{{doc.get(name)}}} must be either zero or otherwise >= 1 sec")
    if errors:
        detail = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        # After "path: " the kubelet formats its configuration with %s (v1.35: its TypeMeta).
        raise KubeletConfigError(f"failed to validate kubelet configuration, error: {detail}, path: &TypeMeta{{Kind:,APIVersion:,}}")


def settings_from_document(doc: dict) -> KubeletSettings:
    if not isinstance(doc, dict) or doc.get("kind") != "KubeletConfiguration":
        raise KubeletConfigError("failed to decode: the file is not a KubeletConfiguration document")
    seconds = _decode(doc)
    _validate(doc, seconds)
    update_seconds = seconds["nodeStatusUpdateFrequency"]
    report_seconds = seconds["nodeStatusReportFrequency"]
    if update_seconds < 0 or report_seconds < 0:
        # A real kubelet accepts these; the stand-in cannot render kwok Stages from them.
        raise KubeletConfigError("the stand-in refuses a negative nodeStatusUpdateFrequency or nodeStatusReportFrequency")
    # Kubelet defaulting (v1beta1 SetDefaults, PR #95135): an explicit update frequency without a
    # report frequency means a full status write at the update frequency.
    if report_seconds == 0:
        report_seconds = update_seconds or DEFAULT_STATUS_REPORT_SECONDS
    if update_seconds == 0:
        update_seconds = DEFAULT_STATUS_UPDATE_SECONDS
    return KubeletSettings(
        status_update_seconds=update_seconds,
        status_report_seconds=report_seconds,
        lease_duration_seconds=int(doc.get("nodeLeaseDurationSeconds") or DEFAULT_LEASE_DURATION_SECONDS),
        max_pods=int(doc.get("maxPods") or DEFAULT_MAX_PODS),
        register_with_taints=list(doc.get("registerWithTaints") or []),
        healthz_port=int(doc.get("healthzPort", DEFAULT_HEALTHZ_PORT) or 0),
        healthz_bind_address=str(doc.get("healthzBindAddress") or DEFAULT_HEALTHZ_BIND_ADDRESS),
    )


def load(path: str) -> KubeletSettings:
    """The settings of the file; KubeletConfigError with the kubelet's message when it refuses the file."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as error:
        raise KubeletConfigError(
            f"failed to load kubelet config file, path: {path}, error: failed to load Kubelet config file {path}, "
            f"error failed to read kubelet config file {path!r}, error: {error}") from None
    try:
        return settings_from_document(document)
    except KubeletConfigError as error:
        if str(error).startswith("failed to validate"):
            raise
        raise KubeletConfigError(
            f"failed to load kubelet config file, path: {path}, error: failed to load Kubelet config file {path}, "
            f"error {error}") from None


def command_failed(error: Exception, now: datetime.datetime | None = None) -> str:
    """The kubelet's last line when its command fails (component-base cli.Run, klog format)."""
    now = now or datetime.datetime.now()
    message = str(error).replace("\\", "\\\\").replace('"', '\\"')
    return f'E{now:%m%d %H:%M:%S.%f} {os.getpid():7d} run.go:72] "command failed" err="{message}"'
