# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pick the power reader for a ``power`` option value (the backends are listed in backends.py)."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.power.backends import BY_NAME, listed
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError


def reader_for(config: dict, node: str, attested_state: str = "off", allow_manual: bool = False):
    """A reader for ``config`` (see args.POWER_SUBOPTIONS). ``attested_state`` is what a manual attestation asserts."""
    kind = (config or {}).get("type")
    if kind not in BY_NAME:
        raise PowerError(f"unknown power type {kind!r}; use one of {listed()}")
    return BY_NAME[kind].make(config, node, attested_state, allow_manual)
