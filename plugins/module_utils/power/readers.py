# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pick the power reader for a ``power`` option value."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.command import CommandReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.fence_agent import FenceAgentReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.ipmi import IpmiReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.manual import ManualAttestation
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish import RedfishReader


def reader_for(config: dict, node: str, attested_state: str = "off", allow_manual: bool = False):
    """A reader for ``config`` (see args.POWER_SUBOPTIONS). ``attested_state`` is what a manual attestation asserts."""
    kind = (config or {}).get("type")
    if kind == "redfish":
        return RedfishReader(config)
    if kind == "ipmi":
        return IpmiReader(config)
    if kind == "fence_agent":
        return FenceAgentReader(config)
    if kind == "command":
        return CommandReader(config, node)
    if kind == "manual":
        return ManualAttestation(config, node, attested_state, allow_manual)
    raise PowerError(f"unknown power type {kind!r}; use one of redfish, ipmi, fence_agent, command, manual")
