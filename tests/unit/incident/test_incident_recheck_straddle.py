"""The proof watch's next check: a due moment (the Lease watch's end, NotReady long enough) that passes while a
check is in progress is checked at once after it, not a whole poll interval later (issue 37, item 1)."""

from types import SimpleNamespace

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage_proof import ProofWatch
from incident_fakes import FakeClock


def watch_at(now, poll_interval=2.0):
    run = SimpleNamespace(clock=FakeClock(now), o=SimpleNamespace(poll_interval=poll_interval, lease_margin_seconds=3))
    return ProofWatch(run)


def test_a_moment_that_passed_during_the_check_is_checked_at_once():
    watch = watch_at(100.0)
    watch.checked_at = 99.5  # the check began before the Lease watch ended ...
    watch.lease_silent_at = 100.0 - 0.2  # ... and the watch ended while it ran
    assert watch._until_next_check() == 0


def test_a_moment_the_last_check_already_saw_waits_for_the_poll_interval():
    watch = watch_at(100.0)
    watch.checked_at = 99.9  # began after the moment: that check saw it
    watch.not_ready_at = 99.8
    assert watch._until_next_check() == 2.0


def test_a_moment_still_ahead_shortens_the_wait_to_it():
    watch = watch_at(100.0)
    watch.checked_at = 99.0
    watch.lease_silent_at = 100.5
    assert abs(watch._until_next_check() - 0.6) < 1e-9


def test_no_check_yet_and_no_moment_waits_for_the_poll_interval():
    watch = watch_at(100.0)
    assert watch._until_next_check() == 2.0
