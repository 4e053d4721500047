# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long a node's kernel keeps a TCP connection to a dead peer (Linux ip-sysctl documentation)."""

from __future__ import annotations

RTO_MIN = 0.2  # seconds, TCP_RTO_MIN
RTO_MAX = 120.0  # seconds, TCP_RTO_MAX


def retransmission_timeout_seconds(tcp_retries2: int) -> float:
    """Lower bound of the give-up time with unacknowledged data in flight.

    RTO starts at 0.2s and doubles up to 120s: for N <= 9, (2^(N+1) - 1) x 0.2s; above that
    every extra retry adds 120s. The connection dies at the first timer expiry past this bound.
    """
    if tcp_retries2 <= 9:
        return round((2 ** (tcp_retries2 + 1) - 1) * RTO_MIN, 3)
    return round(204.6 + RTO_MAX * (tcp_retries2 - 9), 3)


def next_retransmission_gap(tcp_retries2: int) -> float:
    """The RTO after the bound, i.e. how late past the lower bound the connection can die."""
    return min(RTO_MAX, RTO_MIN * 2 ** (tcp_retries2 + 1))


def keepalive_timeout_seconds(time: int, interval: int, probes: int) -> int:
    """Give-up time for an idle connection: first probe after `time`, then `probes` probes `interval` apart."""
    return time + interval * probes
