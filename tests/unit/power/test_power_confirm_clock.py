"""set_power (fence_off, node_power) waits for the power state on this machine's monotonic clock: a wall clock
stepped by NTP or an operator during the wait neither ends it early (a fence reported as failed while the BMC
is still powering off) nor makes it longer."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import OFF, ON, PowerError, PowerReading, fence_off


class SteppedClock:
    """Monotonic time advances only on sleep; the wall clock jumps by ``step`` seconds at every look."""

    def __init__(self, step):
        self.step = step
        self.wall = 1_800_000_000.0
        self.mono = 0.0
        self.sleeps = []

    def now(self):
        self.wall += self.step
        return self.wall

    def monotonic(self):
        return self.mono

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.mono += seconds


class SlowBmc:
    """Accepts "off" at once and reads Off from the ``off_after``-th status read on."""

    method = "redfish"

    def __init__(self, off_after):
        self.off_after = off_after
        self.reads = 0

    def power_off(self):
        pass

    def status(self):
        self.reads += 1
        return PowerReading(OFF if self.reads >= self.off_after else ON, self.method, f"read {self.reads}")


@pytest.mark.parametrize("step", [3 * 3600.0, -3 * 3600.0])
def test_a_wall_clock_step_neither_ends_nor_extends_the_confirmation(step):
    bmc = SlowBmc(off_after=4)  # Off after 3 sleeps of 2 s: within the 10 s confirmation
    reading, _attempts = fence_off(bmc, 1, 1, 10, SteppedClock(step))
    assert reading.state == OFF and bmc.reads == 4

    never = SlowBmc(off_after=10**6)
    clock = SteppedClock(step)
    with pytest.raises(PowerError, match="still reads ON after 10s"):
        fence_off(never, 1, 1, 10, clock)
    assert sum(clock.sleeps) == 10  # five sleeps of 2 s on the monotonic clock, whatever the wall clock did
