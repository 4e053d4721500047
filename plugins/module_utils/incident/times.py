# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Timestamps: the API speaks RFC 3339 strings, the incident code speaks epoch seconds."""

from __future__ import annotations

import re
from datetime import datetime, timezone

_FRACTION = re.compile(r"\.(\d+)")


def parse_time(text):
    """Epoch seconds from '2026-11-22T03:00:00Z', '...T03:00:00.123456+00:00' or None."""
    if not text:
        return None
    text = text.strip().replace("Z", "+00:00")
    # Python 3.8 fromisoformat wants exactly 3 or 6 fraction digits.
    text = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def format_time(epoch: float) -> str:
    """RFC 3339 with seconds, UTC: what Node annotations and Events carry."""
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(epoch: float) -> str:
    """RFC 3339 with microseconds: the MicroTime format Lease fields require."""
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
