# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Poll until a condition holds or a deadline passes: the one poll loop of module_utils, and its Clock.

The deadline is measured on this machine's monotonic clock: a wall clock stepped by NTP or an operator during
the wait neither ends it early nor makes it longer. Clock and sleep are injectable for tests.
"""

from __future__ import annotations

import time


class Clock:
    """Wall time, monotonic time and a sleep; tests pass a fake that advances on sleep.

    Durations observed here (waits, timeouts, lock expiry, proof age) are measured on ``monotonic()``;
    ``now()`` is only for times written down (records, Lease times)."""

    def now(self) -> float:
        """Wall time in seconds (time.time)."""
        return time.time()

    def monotonic(self) -> float:
        """Seconds that never jump with the wall clock: for every duration observed here."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def wait_until(check, timeout: float, interval: float = 2.0, clock: Clock | None = None, on_tick=None) -> bool:
    """Call ``check()`` until it returns a truthy value; True when it did, False once ``timeout`` seconds have
    passed on ``clock.monotonic()``. ``check()`` runs at least once, also with timeout 0; the last sleep is cut
    so the last call is made at the deadline.

    ``on_tick(elapsed)`` runs between polls; it may raise to stop the wait (node came back, lock lost).
    A caller that wants what ``check()`` saw keeps it in its closure (for its message or its result).
    """
    clock = clock or Clock()
    start = clock.monotonic()
    while True:
        if check():
            return True
        elapsed = clock.monotonic() - start
        if elapsed >= timeout:
            return False
        if on_tick is not None:
            on_tick(elapsed)
        clock.sleep(min(interval, max(timeout - elapsed, 0.1)))
