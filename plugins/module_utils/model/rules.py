# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Consistency rules. Each rule has a kebab-case id explained in docs/settings.md ("Rules").

check() returns every broken rule as (rule, message); the profile builder refuses the first,
the audit lists them all. warnings() returns risks that are worth a word but not a refusal.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.nodeguard.failover.plugins.module_utils.model.durations import format_duration
from ansible_collections.nodeguard.failover.plugins.module_utils.model.heartbeat import (
    LEASE_WRITE_BYTES,
    NODE_STATUS_WRITE_BYTES,
    heartbeat_interval,
    heartbeat_load,
    lease_renew_interval,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.tcp import retransmission_timeout_seconds
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import Timings
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import (
    Version,
    accepts_disable_force_detach_on_timeout,
)

NODE_STATUS_UPDATE_RETRY = 5  # kubelet nodeStatusUpdateRetry; the KCM help text asks grace > retries x heartbeat
HTTP2_HEALTH_CHECK_SECONDS = 45  # client-go HTTP2_READ_IDLE_TIMEOUT_SECONDS 30 + HTTP2_PING_TIMEOUT_SECONDS 15
# client-go's defaults when the kubelet's environment does not name them (k8s.io/apimachinery util/net: 0 turns the
# health check off); the only names of the kubelet's environment the collection reads.
HTTP2_DEFAULTS = {"HTTP2_READ_IDLE_TIMEOUT_SECONDS": 30, "HTTP2_PING_TIMEOUT_SECONDS": 15}
MIN_STATUS_INTERVAL = 1.0  # a full Node status write more often than 1/s is never worth its cost
MIN_LEASE_RENEW_INTERVAL = 0.5
MIN_MONITOR_PERIOD = 0.5
MIN_GRACE = 3.0
MIN_TCP_RETRIES2 = 5  # 6.2s: fewer retries drop healthy connections on one lost burst
RFC1122_TCP_RETRIES2 = 8  # 102.2s, the first value that honours RFC 1122's R2 >= 100s


@dataclass(frozen=True)
class Limits:
    """The environment the rules judge against (all have defaults; see docs/settings.md)."""

    network_rtt_ms: float = 1.0
    budget_writes_per_second: float = 2000.0
    budget_bytes_per_second: float = 4_000_000.0
    node_status_write_bytes: int = NODE_STATUS_WRITE_BYTES
    lease_write_bytes: int = LEASE_WRITE_BYTES

    def heartbeat_floor(self) -> float:
        """Heartbeats closer than 10 round trips apart turn one slow request into a missed heartbeat."""
        return max(MIN_LEASE_RENEW_INTERVAL, 10 * self.network_rtt_ms / 1000.0)

    def grace_floor(self) -> float:
        return max(MIN_GRACE, 100 * self.network_rtt_ms / 1000.0)


def _d(seconds: float) -> str:
    return format_duration(seconds)


def check(timings: Timings, version: Version, node_count: int, limits: Limits) -> list:
    """Every broken rule as (rule id, message), in the order a reader should fix them."""
    broken = []
    grace = timings.node_monitor_grace_period
    interval = heartbeat_interval(timings)
    renew = lease_renew_interval(timings)

    if timings.node_status_update_frequency < MIN_STATUS_INTERVAL or timings.node_status_report_frequency < MIN_STATUS_INTERVAL:
        broken.append(("heartbeat-floor", (
            f"nodeStatusUpdateFrequency {_d(timings.node_status_update_frequency)} / nodeStatusReportFrequency "
            f"{_d(timings.node_status_report_frequency)}: full Node status writes must be at least "
            f"{_d(MIN_STATUS_INTERVAL)} apart; make heartbeats faster with nodeLeaseDurationSeconds instead")))
    if renew < limits.heartbeat_floor():
        broken.append(("heartbeat-floor", (
            f"nodeLeaseDurationSeconds {timings.node_lease_duration_seconds} renews the Lease every {_d(renew)}, "
            f"below the floor of {_d(limits.heartbeat_floor())} for a {limits.network_rtt_ms} ms round trip")))
    if timings.node_monitor_period < MIN_MONITOR_PERIOD:
        broken.append(("monitor-period-floor", (
            f"node-monitor-period {_d(timings.node_monitor_period)} is below {_d(MIN_MONITOR_PERIOD)}: "
            "each pass walks every node, and detection cannot beat the heartbeat anyway")))
    if grace < limits.grace_floor():
        broken.append(("grace-floor", (
            f"node-monitor-grace-period {_d(grace)} is below {_d(limits.grace_floor())}, the shortest silence "
            f"a {limits.network_rtt_ms} ms network, a busy apiserver and etcd commit can be trusted to explain")))
    if grace <= interval * NODE_STATUS_UPDATE_RETRY:
        broken.append(("heartbeat-retries", (
            f"node-monitor-grace-period {_d(grace)} must be longer than {NODE_STATUS_UPDATE_RETRY} heartbeats "
            f"({NODE_STATUS_UPDATE_RETRY} x {_d(interval)} = {_d(interval * NODE_STATUS_UPDATE_RETRY)}), "
            "or a few lost heartbeats mark a healthy node NotReady")))
    if timings.node_lease_duration_seconds > grace:
        broken.append(("lease-vs-grace", (
            f"nodeLeaseDurationSeconds {timings.node_lease_duration_seconds} is longer than "
            f"node-monitor-grace-period {_d(grace)}: the node would be declared dead while its Lease is still valid")))
    elif timings.node_lease_duration_seconds * 10 < grace:
        broken.append(("lease-vs-grace", (
            f"nodeLeaseDurationSeconds {timings.node_lease_duration_seconds} renews every {_d(renew)} although "
            f"the grace period is {_d(grace)}: raise it to at least {_d(grace / 10)} to stop paying for "
            "heartbeats nobody waits for")))
    if timings.node_monitor_period * 2 > grace:
        broken.append(("monitor-period-vs-grace", (
            f"node-monitor-period {_d(timings.node_monitor_period)} must be at most half of "
            f"node-monitor-grace-period {_d(grace)}")))
    if timings.node_startup_grace_period < grace:
        broken.append(("startup-grace-vs-grace", (
            f"node-startup-grace-period {_d(timings.node_startup_grace_period)} is shorter than "
            f"node-monitor-grace-period {_d(grace)}: starting nodes would get less time than running ones")))
    if timings.node_status_report_frequency < timings.node_status_update_frequency:
        broken.append(("report-vs-update", (
            f"nodeStatusReportFrequency {_d(timings.node_status_report_frequency)} is shorter than "
            f"nodeStatusUpdateFrequency {_d(timings.node_status_update_frequency)}; the kubelet cannot report "
            "more often than it updates")))
    for name, value in (("default-not-ready-toleration-seconds", timings.not_ready_toleration_seconds),
                        ("default-unreachable-toleration-seconds", timings.unreachable_toleration_seconds)):
        if value < grace:
            broken.append(("toleration-vs-grace", (
                f"{name} {value} is shorter than node-monitor-grace-period {_d(grace)}: a node that is slow for "
                "one grace period would lose its pods before it had the same time to come back")))
    load = heartbeat_load(timings, node_count, limits.node_status_write_bytes, limits.lease_write_bytes)
    over = []
    if load["writes_per_second"] > limits.budget_writes_per_second:
        over.append(f"{load['writes_per_second']:g} writes/s > budget {limits.budget_writes_per_second:g}")
    if load["bytes_per_second"] > limits.budget_bytes_per_second:
        over.append(f"{load['bytes_per_second']:,} bytes/s > budget {limits.budget_bytes_per_second:,.0f}")
    if over:
        broken.append(("heartbeat-budget", (
            f"heartbeats of {node_count} nodes cost {' and '.join(over)}; use a slower preset or raise "
            "heartbeat_budget if the control plane is sized for it")))
    if timings.tcp_retries2 < MIN_TCP_RETRIES2:
        broken.append(("tcp-retries-floor", (
            f"net.ipv4.tcp_retries2 {timings.tcp_retries2} gives up after "
            f"{retransmission_timeout_seconds(timings.tcp_retries2)}s; below {MIN_TCP_RETRIES2} one lost burst "
            "kills healthy connections")))
    if min(timings.tcp_keepalive_time, timings.tcp_keepalive_intvl, timings.tcp_keepalive_probes) < 1:
        broken.append(("keepalive-range", "tcp_keepalive_time, tcp_keepalive_intvl and tcp_keepalive_probes must be at least 1"))
    if timings.disable_force_detach_on_timeout is not None and not accepts_disable_force_detach_on_timeout(version):
        broken.append(("unsupported-flag", (
            f"--disable-force-detach-on-timeout exists from Kubernetes 1.30; this cluster runs {version}")))
    return broken


def warnings(timings: Timings, version: Version, kubelet_environment=None) -> list:
    """Risks that do not make the settings inconsistent, as (rule id, message).

    ``kubelet_environment`` is what the kubelet runs with (failover_node_info reads it from the running process;
    a profile passes the environment it applies): the HTTP/2 health check is judged by it, client-go's defaults
    where a name is absent.
    """
    found = []
    grace = timings.node_monitor_grace_period
    read_idle, ping = http2_health_check(kubelet_environment)
    if read_idle == 0:
        found.append(("http2-health-check", (
            "the kubelet runs with HTTP2_READ_IDLE_TIMEOUT_SECONDS=0, which turns client-go's HTTP/2 health check off: "
            "a kubelet whose apiserver connection silently died (load balancer failover) misses heartbeats until the "
            f"kernel gives up and its node goes NotReady; set {kubelet_http2_environment(timings) or 'a positive value'} "
            "in the kubelet's environment")))
    elif grace <= read_idle + ping:
        env = kubelet_http2_environment(timings)
        found.append(("http2-health-check", (
            f"node-monitor-grace-period {_d(grace)} is not longer than client-go's HTTP/2 health check in the kubelet "
            f"(HTTP2_READ_IDLE_TIMEOUT_SECONDS {read_idle} + HTTP2_PING_TIMEOUT_SECONDS {ping} = {read_idle + ping}s): "
            "a kubelet whose apiserver connection silently died (load balancer failover) misses heartbeats for up to "
            f"{read_idle + ping}s and its node goes NotReady; set {env or 'client-go defaults (remove both names)'} in "
            "the kubelet's environment")))
    if timings.tcp_retries2 < RFC1122_TCP_RETRIES2:
        found.append(("tcp-retries-rfc1122", (
            f"net.ipv4.tcp_retries2 {timings.tcp_retries2} gives up after "
            f"{retransmission_timeout_seconds(timings.tcp_retries2)}s, less than the 100s RFC 1122 asks for; "
            "long network partitions now break connections that would have survived")))
    return found


def kubelet_http2_environment(timings: Timings) -> dict:
    """HTTP/2 health-check settings that notice a dead apiserver connection within half the grace period."""
    grace = timings.node_monitor_grace_period
    if grace > HTTP2_HEALTH_CHECK_SECONDS:
        return {}
    quarter = max(1, int(grace // 4))
    return {"HTTP2_READ_IDLE_TIMEOUT_SECONDS": str(quarter), "HTTP2_PING_TIMEOUT_SECONDS": str(quarter)}


def http2_health_check(kubelet_environment=None) -> tuple:
    """(read idle seconds, ping timeout seconds) the kubelet's client-go uses with this environment.

    A value client-go cannot parse as a whole number is ignored by it (its default applies), and so here."""
    environment = kubelet_environment if isinstance(kubelet_environment, dict) else {}
    values = []
    for name, default in HTTP2_DEFAULTS.items():
        text = str(environment.get(name, "")).strip()
        values.append(int(text) if text.lstrip("-").isdigit() else default)
    return tuple(values)
