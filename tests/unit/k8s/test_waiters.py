"""module_utils/k8s/waiters.py: the one poll loop. Its timeout counts on our monotonic clock, so a wall clock
stepped during the wait (NTP, an operator) neither ends the wait early nor keeps it going."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.components import health
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s import leases, waiters


class SteppingWallClock:
    """Monotonic time advances only with sleep; the wall clock is stepped by ``step`` seconds at every look."""

    def __init__(self, step):
        self.mono, self.wall, self.step, self.slept = 100.0, 1_800_000_000.0, step, []

    def now(self):
        self.wall += self.step
        return self.wall

    def monotonic(self):
        return self.mono

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.mono += seconds
        assert sum(self.slept) <= 100, "the wait did not end at its 30 s timeout"


def never():
    return False


@pytest.mark.parametrize("step", [3 * 3600.0, -3 * 3600.0], ids=["wall-clock-jumps-forward", "wall-clock-jumps-back"])
def test_a_wall_clock_step_neither_ends_nor_extends_the_wait(step):
    # Forward: on the wall clock the 30 s are over at the first look. Back: they never are.
    clock = SteppingWallClock(step)
    assert waiters.wait_until(never, timeout=30, interval=2, clock=clock) is False
    assert sum(clock.slept) == 30 and clock.slept == [2] * 15


def test_the_check_that_holds_ends_the_wait_and_ticks_see_monotonic_seconds():
    clock, ticks = SteppingWallClock(-3600.0), []
    results = iter([False, False, True])
    assert waiters.wait_until(lambda: next(results), timeout=30, interval=2, clock=clock, on_tick=ticks.append) is True
    assert ticks == [0.0, 2.0] and clock.slept == [2, 2]


def test_the_last_sleep_is_cut_at_the_deadline_and_timeout_zero_checks_once():
    clock = SteppingWallClock(0.0)
    assert waiters.wait_until(never, timeout=5, interval=2, clock=clock) is False
    assert clock.slept == [2, 2, 1]
    calls = []
    assert waiters.wait_until(lambda: calls.append(1), timeout=0, interval=2, clock=clock) is False
    assert calls == [1] and clock.slept == [2, 2, 1]


def test_one_clock_for_the_controller_and_the_node():
    assert health.Clock is waiters.Clock and leases.Clock is waiters.Clock
