# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Go duration strings ("4s", "1m0s", "750ms") to seconds and back.

Kubernetes components parse durations with Go's time.ParseDuration, and print them with
Duration.String(); the profile writes them in the same form so a second run sees no change.
"""

from __future__ import annotations

import re

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|ms|s|m|h)")


def parse_duration(value, name: str = "duration") -> float:
    """Seconds from a Go duration string, or from a plain number of seconds."""
    if isinstance(value, bool):
        raise ProfileError("wrong-type", f"{name} must be a duration like '4s' or a number of seconds, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        raise ProfileError("wrong-type", f"{name} must be a duration like '4s' or a number of seconds, got {value!r}")
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    if text == "0":
        return 0.0
    position = 0
    total = 0.0
    for match in _PART.finditer(text):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(text) or not text:
        raise ProfileError("wrong-type", f"{name} must be a Go duration like '4s', '1m0s' or '750ms', got {value!r}")
    return total


def format_duration(seconds: float) -> str:
    """The string Go's Duration.String() prints for this many seconds (millisecond precision)."""
    millis = round(seconds * 1000)
    if millis == 0:
        return "0s"
    sign = "-" if millis < 0 else ""
    millis = abs(millis)
    if millis < 1000:
        return f"{sign}{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    whole, fraction = divmod(rest, 1000)
    secs = str(whole) if fraction == 0 else f"{whole}.{fraction:03d}".rstrip("0")
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"
