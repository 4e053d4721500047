"""A Lease renewed after a reading: a new renewTime, compared only with the reading, waited on our monotonic clock."""

from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.leases import LeaseReading, renewed_since, wait_for_renewal


class SkewedWallClock:
    """Monotonic time advances with sleep; the wall clock is far off and jumps, and must not matter."""

    def __init__(self):
        self.mono = 100.0
        self.wall = 2_000_000_000.0

    def now(self):
        self.wall -= 3600  # jumps back an hour at every look
        return self.wall

    def monotonic(self):
        return self.mono

    def sleep(self, seconds):
        self.mono += seconds


def lease(renew_time, holder="w3"):
    return {"spec": {"renewTime": renew_time, "holderIdentity": holder}}


class Holder:
    """Renews at the given monotonic times with renewTimes from its own clock (here: a day behind ours)."""

    def __init__(self, clock, renewals, start="2020-01-01T00:00:00.000000Z"):
        self.clock, self.renewals, self.current = clock, sorted(renewals), lease(start)

    def read(self):
        due = [t for t in self.renewals if t <= self.clock.mono]
        if due:
            self.current = lease(f"2020-01-01T00:00:{len(due):02d}.000000Z")
        return self.current


def test_a_renewal_after_the_first_reading_counts_whatever_the_holders_clock_says():
    clock = SkewedWallClock()
    holder = Holder(clock, renewals=[106.0])
    result = wait_for_renewal(holder.read, None, timeout=30, interval=2, clock=clock)
    assert result["renewed"] is True
    assert result["since"]["renew_time"] == "2020-01-01T00:00:00.000000Z"
    assert result["lease"]["renew_time"] == "2020-01-01T00:00:01.000000Z"
    assert result["waited_seconds"] == 6.0


def test_no_renewal_times_out_on_the_monotonic_clock_even_when_the_renew_time_looks_recent():
    clock = SkewedWallClock()
    holder = Holder(clock, renewals=[], start="2099-01-01T00:00:00.000000Z")  # a holder clock far ahead
    result = wait_for_renewal(holder.read, None, timeout=10, interval=2, clock=clock)
    assert result["renewed"] is False and result["waited_seconds"] == 10.0


def test_a_reading_given_from_before_counts_a_renewal_that_came_in_between():
    clock = SkewedWallClock()
    holder = Holder(clock, renewals=[100.0])
    since = LeaseReading(exists=True, renew_time="2020-01-01T00:00:00.000000Z")
    result = wait_for_renewal(holder.read, since, timeout=0, interval=2, clock=clock)
    assert result["renewed"] is True and result["waited_seconds"] == 0.0


def test_timeout_zero_only_takes_a_reading():
    clock = SkewedWallClock()
    holder = Holder(clock, renewals=[150.0])
    result = wait_for_renewal(holder.read, None, timeout=0, interval=2, clock=clock)
    assert result["renewed"] is False and result["lease"] == {"exists": True, "renew_time": "2020-01-01T00:00:00.000000Z", "holder": "w3"}


def test_a_lease_that_appears_was_renewed_and_one_that_is_missing_was_not():
    absent = LeaseReading.of(None)
    assert not renewed_since(absent, absent)
    assert renewed_since(absent, LeaseReading.of(lease("2020-01-01T00:00:00Z")))
    assert not renewed_since(absent, LeaseReading.of({"spec": {}}))
    older = LeaseReading.of(lease("2020-01-01T00:00:05Z"))
    assert renewed_since(older, LeaseReading.of(lease("2020-01-01T00:00:01Z")))  # any other value: order is the holder's
