# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The power backends: one entry per ``power.type``, the only list of them.

Read from here: the option's choices (args.POWER_TYPES), the reader for a mapping (readers.reader_for),
the types a shared default may have and the messages naming the types (selection.py), and which types
are measurements (node_power refuses the others; the EDA poller bmc_power_poll may poll only these).
tests/unit/power/test_power_backends.py fails when a copy that cannot import this (the doc fragment's
choices, bmc_power_poll's POLLABLE_TYPES) disagrees. A new backend is one entry here plus its reader
class: docs/architecture.md, "Add a power backend".
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from ansible_collections.nodeguard.failover.plugins.module_utils.power.command import CommandReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.fence_agent import FenceAgentReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.ipmi import IpmiReader
from ansible_collections.nodeguard.failover.plugins.module_utils.power.manual import ManualAttestation
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish import RedfishReader


class PowerBackend(NamedTuple):
    name: str  # the power.type value
    make: Callable  # (config, node, attested_state, allow_manual) -> reader (base.py says what a reader has)
    identity: str  # the Identity.kind its reader shows (base.Identity): "system-uuid" or "attested-node"
    pollable: bool  # it measures the machine (a manual attestation is a statement): node_power and the poller read it
    shareable: bool  # one shared default may serve every node: the source is told which node it acts on
    addressed: bool  # its mapping names one device by address and system: two nodes naming one device are refused


BACKENDS = (
    PowerBackend("redfish", lambda config, node, state, allow: RedfishReader(config), "system-uuid", pollable=True, shareable=False, addressed=True),
    PowerBackend("ipmi", lambda config, node, state, allow: IpmiReader(config), "system-uuid", pollable=True, shareable=False, addressed=True),
    PowerBackend("fence_agent", lambda config, node, state, allow: FenceAgentReader(config), "system-uuid", pollable=True, shareable=False, addressed=True),
    PowerBackend("command", lambda config, node, state, allow: CommandReader(config, node), "system-uuid", pollable=True, shareable=True, addressed=False),
    PowerBackend("manual", ManualAttestation, "attested-node", pollable=False, shareable=False, addressed=False),
)

BY_NAME = {backend.name: backend for backend in BACKENDS}
POWER_TYPES = tuple(BY_NAME)
POLLABLE_TYPES = tuple(backend.name for backend in BACKENDS if backend.pollable)
SHAREABLE_TYPES = tuple(backend.name for backend in BACKENDS if backend.shareable)
ADDRESSED_TYPES = tuple(backend.name for backend in BACKENDS if backend.addressed)


def listed(types: tuple = POWER_TYPES) -> str:
    """``types`` for a message: "redfish, ipmi, fence_agent, command, manual"."""
    return ", ".join(types)
