# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Poll until a condition holds or a deadline passes. Clock and sleep are injectable for tests."""

from __future__ import annotations

import time


class Clock:
    """Wall time in seconds (time.time) and a sleep; tests pass a fake that advances on sleep."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        """Seconds that never jump with the wall clock: for durations observed here (lock expiry)."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def wait_until(check, timeout: float, interval: float = 2.0, clock: Clock = None, on_tick=None):
    """Call ``check()`` until it returns a truthy value; True when it did, False at timeout.

    ``on_tick(elapsed)`` runs between polls; it may raise to stop the wait (node came back, lock lost).
    """
    clock = clock or Clock()
    start = clock.now()
    while True:
        value = check()
        if value:
            return True
        elapsed = clock.now() - start
        if elapsed >= timeout:
            return False
        if on_tick is not None:
            on_tick(elapsed)
        clock.sleep(min(interval, max(timeout - elapsed, 0.1)))
