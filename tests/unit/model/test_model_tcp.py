"""Dead-connection formulas against the numbers in kubernetes-facts.md."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.model.tcp import (
    keepalive_timeout_seconds,
    next_retransmission_gap,
    retransmission_timeout_seconds,
)


@pytest.mark.parametrize("retries, seconds", [(15, 924.6), (9, 204.6), (8, 102.2), (7, 51.0), (6, 25.4), (3, 3.0)])
def test_retransmission_give_up_time(retries, seconds):
    assert retransmission_timeout_seconds(retries) == pytest.approx(seconds)


def test_retransmission_is_continuous_at_the_rto_cap():
    # 10 retries: 9 doubling steps (204.6s) plus one capped 120s step.
    assert retransmission_timeout_seconds(10) == pytest.approx(324.6)
    assert retransmission_timeout_seconds(10) - retransmission_timeout_seconds(9) == pytest.approx(120)


def test_next_gap_is_capped():
    assert next_retransmission_gap(7) == pytest.approx(51.2)
    assert next_retransmission_gap(15) == 120


def test_keepalive_defaults():
    assert keepalive_timeout_seconds(7200, 75, 9) == 7875
    assert keepalive_timeout_seconds(30, 10, 3) == 60
