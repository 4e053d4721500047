# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Was a Lease renewed after a reading of ours? Its holder wrote a new renewTime since that reading.

A renewTime is the holder's clock (a kubelet, a controller-manager on another machine). It is compared only
for equality with an earlier reading, never with this machine's time, and the wait is measured on this
machine's monotonic clock: a holder whose clock runs behind or ahead changes nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.waiters import Clock, wait_until


@dataclass(frozen=True)
class LeaseReading:
    exists: bool
    renew_time: str = ""
    holder: str = ""

    @classmethod
    def of(cls, lease) -> LeaseReading:
        if not lease:
            return cls(exists=False)
        spec = lease.get("spec") or {}
        return cls(exists=True, renew_time=spec.get("renewTime") or "", holder=spec.get("holderIdentity") or "")

    def as_dict(self) -> dict:
        return {"exists": self.exists, "renew_time": self.renew_time, "holder": self.holder}


def renewed_since(before: LeaseReading, now: LeaseReading) -> bool:
    """A renewal written after ``before`` was read: a new renewTime, or a Lease that did not exist then."""
    return now.exists and bool(now.renew_time) and now.renew_time != before.renew_time


def wait_for_renewal(read, since: LeaseReading | None, timeout: float, interval: float, clock: Clock | None = None) -> dict:
    """Read the Lease (``read()`` returns the object or None) until it was renewed after ``since``, or after this
    wait's own first reading when ``since`` is None. ``timeout`` 0 reads once (to take a reading to wait from).

    Returns renewed, the reading waited from, the last reading and the seconds waited (monotonic)."""
    clock = clock or Clock()
    start = clock.monotonic()
    baseline, last = since, None

    def renewed() -> bool:
        nonlocal baseline, last
        last = LeaseReading.of(read())
        if baseline is None:
            baseline = last  # no reading given: wait from this wait's own first reading
        return renewed_since(baseline, last)

    done = wait_until(renewed, timeout, interval, clock)
    return _result(done, baseline, last, clock.monotonic() - start)


def _result(renewed: bool, baseline: LeaseReading, last: LeaseReading, waited: float) -> dict:
    return {"renewed": renewed, "since": baseline.as_dict(), "lease": last.as_dict(), "waited_seconds": round(waited, 1)}
