# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two entry points: build a profile from a preset or targets, and predict the timeline of a cluster.

Output shape (docs/architecture.md): preset, kubernetes_version, settings, flags (complete flag maps per
component, gates included), rke1_kubelet_settings (RKE1 only), timeline, load, remediation (node_outage_*
values that match the profile), plus warnings, violations, kubelet_environment and version_facts.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import NAMES
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model import rules
from ansible_collections.nodeguard.failover.plugins.module_utils.model.heartbeat import heartbeat_load
from ansible_collections.nodeguard.failover.plugins.module_utils.model.numbers import blank, numeric
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import DEFAULT_PRESET, STOCK, preset_timings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediation import remediation_settings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.render import (
    component_flags,
    render_settings,
    rke1_kubelet_settings,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.targets import timings_for_targets
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timeline import predict_timeline
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import (
    KUBELET_ENVIRONMENT,
    apply_overrides,
    kubernetes_defaults,
    read_settings,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import parse_version, version_facts

DISTRIBUTIONS = NAMES
CUSTOM = "custom"


def _number(value, name: str, minimum: float) -> float:
    value = value if numeric(value) is None else numeric(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise ProfileError("wrong-type", f"{name} must be a number >= {minimum:g}, got {value!r}")
    return float(value)


def read_facts(facts):
    """(version, node_count, distribution) from the cluster facts mapping."""
    if not isinstance(facts, dict):
        raise ProfileError("wrong-type", f"facts must be a mapping with kubernetes_version and node_count, got {facts!r}")
    if "kubernetes_version" not in facts:
        raise ProfileError("wrong-type", "facts need kubernetes_version, e.g. '1.35.4'")
    version = parse_version(facts["kubernetes_version"])
    node_count = facts.get("node_count")
    if isinstance(node_count, str) and node_count.strip().isdigit():
        node_count = int(node_count)
    if isinstance(node_count, bool) or not isinstance(node_count, int) or node_count < 1:
        raise ProfileError("wrong-type", f"facts need node_count, a whole number >= 1, got {node_count!r}")
    distribution = facts.get("distribution", "kubeadm")
    if distribution not in DISTRIBUTIONS:
        raise ProfileError("unknown-distribution",
                           f"unknown distribution {distribution!r}; choose one of: {', '.join(DISTRIBUTIONS)}")
    return version, node_count, distribution


def make_limits(network_rtt_ms=None, heartbeat_budget=None, assumptions=None) -> rules.Limits:
    """Limits from the optional filter arguments; None keeps the documented default."""
    values = {}
    heartbeat_budget = None if blank(heartbeat_budget) else heartbeat_budget
    assumptions = None if blank(assumptions) else assumptions
    if not blank(network_rtt_ms):
        values["network_rtt_ms"] = _number(network_rtt_ms, "network_rtt_ms", 0)
    if heartbeat_budget is not None:
        if not isinstance(heartbeat_budget, dict):
            raise ProfileError("wrong-type", f"heartbeat_budget must be a mapping, got {heartbeat_budget!r}")
        for key, field in (("writes_per_second", "budget_writes_per_second"),
                           ("bytes_per_second", "budget_bytes_per_second")):
            if key in heartbeat_budget:
                values[field] = _number(heartbeat_budget[key], f"heartbeat_budget.{key}", 0)
        unknown = set(heartbeat_budget) - {"writes_per_second", "bytes_per_second"}
        if unknown:
            raise ProfileError("unknown-setting", f"unknown heartbeat_budget keys: {', '.join(sorted(unknown))}")
    if assumptions is not None:
        if not isinstance(assumptions, dict):
            raise ProfileError("wrong-type", f"assumptions must be a mapping, got {assumptions!r}")
        for key in assumptions:
            if key not in ("node_status_write_bytes", "lease_write_bytes"):
                raise ProfileError("unknown-setting", f"unknown assumption {key!r}")
            values[key] = int(_number(assumptions[key], f"assumptions.{key}", 1))
    return rules.Limits(**values)


def _as_list(pairs) -> list:
    return [{"rule": rule, "message": message} for rule, message in pairs]


def _violations(broken, version, node_count, limits) -> list:
    """Broken rules as dicts; ``upstream_default`` when Kubernetes' own defaults of this version break the rule with the
    same values (the same message): upstream's choice, which the audit reports by its effect (model/risks.py)."""
    upstream = rules.check(kubernetes_defaults(version), version, node_count, limits)
    return [dict(entry, upstream_default=(entry["rule"], entry["message"]) in upstream) for entry in _as_list(broken)]


def _describe(timings, version, node_count, limits, distribution, kubelet_environment) -> dict:
    """``kubelet_environment``: what the kubelet runs with (a profile: the one it applies; an audit: what was read)."""
    remediation = remediation_settings(timings, version)
    return {
        "kubernetes_version": str(version),
        "distribution": distribution,
        "timeline": predict_timeline(timings, remediation),
        "remediation": remediation,
        "load": heartbeat_load(timings, node_count, limits.node_status_write_bytes, limits.lease_write_bytes),
        "warnings": _as_list(rules.warnings(timings, version, kubelet_environment)),
        "kubelet_environment": rules.kubelet_http2_environment(timings),
        "version_facts": version_facts(version),
    }


def build_profile(facts, preset=None, detect_seconds=None, evict_seconds=None, overrides=None,
                  network_rtt_ms=None, heartbeat_budget=None, assumptions=None) -> dict:
    """A consistent profile, or ProfileError naming the first broken rule."""
    version, node_count, distribution = read_facts(facts)
    limits = make_limits(network_rtt_ms, heartbeat_budget, assumptions)
    detect_seconds = None if blank(detect_seconds) else detect_seconds
    evict_seconds = None if blank(evict_seconds) else evict_seconds
    preset = None if blank(preset) else preset
    targets = detect_seconds is not None or evict_seconds is not None
    if targets and preset not in (None, CUSTOM):
        raise ProfileError("conflicting-input",
                           f"give either preset {preset!r} or detect_seconds/evict_seconds targets, not both")
    if targets:
        name = CUSTOM
        timings = timings_for_targets(version, detect_seconds, evict_seconds, limits)
    else:
        name = DEFAULT_PRESET if preset is None else preset
        if name == CUSTOM:
            raise ProfileError("conflicting-input", "preset 'custom' needs detect_seconds and/or evict_seconds")
        timings = preset_timings(name, version)
    timings = apply_overrides(timings, overrides)
    broken = rules.check(timings, version, node_count, limits)
    # Stock Kubernetes itself breaks heartbeat-retries (40s grace = 4 Lease renewals before 1.32):
    # the unmodified kubernetes-default preset reports its problems instead of refusing to exist.
    stock = name == STOCK and not overrides
    if broken and not stock:
        rule, message = broken[0]
        others = ", ".join(sorted({pair[0] for pair in broken[1:]} - {rule}))
        raise ProfileError(rule, message + (f" (also broken: {others})" if others else ""))
    settings = render_settings(timings, version, stock=stock)
    profile = {"preset": name, "settings": settings, "flags": component_flags(settings)}
    if distribution == "rke1":
        profile["rke1_kubelet_settings"] = rke1_kubelet_settings(settings, version)
    profile.update(_describe(timings, version, node_count, limits, distribution,
                             rules.kubelet_http2_environment(timings)))
    profile["violations"] = _violations(broken, version, node_count, limits)
    profile["overrides"] = sorted(overrides) if isinstance(overrides, dict) else []
    return profile


def audit_timeline(current_settings, facts, network_rtt_ms=None, heartbeat_budget=None, assumptions=None) -> dict:
    """The profile a cluster is running now; broken rules are listed under violations, never raised."""
    version, node_count, distribution = read_facts(facts)
    limits = make_limits(network_rtt_ms, heartbeat_budget, assumptions)
    timings, problems, defaults_used = read_settings(current_settings, version)
    profile = {"preset": "current", "settings": render_settings(timings, version, explicit=True)}
    # The kubelet's environment as failover_node_info read it from the running kubelet (None: not read).
    profile.update(_describe(timings, version, node_count, limits, distribution,
                             (current_settings or {}).get(KUBELET_ENVIRONMENT)))
    profile["violations"] = _violations(problems + rules.check(timings, version, node_count, limits), version,
                                        node_count, limits)
    profile["defaults_used"] = defaults_used
    return profile
