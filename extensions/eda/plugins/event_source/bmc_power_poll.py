# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-rulebook event source: poll BMCs that cannot push events (no Redfish EventService, IPMI) and emit
the same node power events as the filter redfish_power_events, on a power transition only.

Each BMC is read by its own loop every ``interval`` seconds with the collection's power readers
(plugins/module_utils/power/), at most ``max_concurrency`` reads at a time (an asyncio semaphore; the
readers are blocking, so each read runs in a thread and ends within the reader's own timeout).
Only a change between two readings that both said On or Off is an event: the first reading is the
baseline, and a BMC that cannot be read ("unknown", an error) is neither On nor Off, so it changes nothing.
The event is only a trigger: node-outage proves power-off itself (the BMC's identity, Off twice).

Events carry only the node name (checked as a Kubernetes name when the source starts), the state, the
time of the reading that saw the change (UTC, rounded up to the second: the power changed before it),
an id and ``source: poll``. The power mappings (credentials) never leave the source: errors are logged
with every secret of the mapping masked, and a configuration error names the node and key, never a value.

The readers are the collection's Python modules (``ansible_collections.nodeguard.failover...``), so this
source needs the collection installed in a collections path, which is also how ansible-rulebook finds
``nodeguard.failover.bmc_power_poll`` (it runs this file from there). The source puts that collections path
on ``sys.path`` (the directory above ``ansible_collections``) and imports the readers from it; ansible-core
must be installed alongside ansible-rulebook (the Redfish reader uses its HTTP client).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import importlib.util
import logging
import math
import os
import time
import uuid
from pathlib import Path
from typing import Any

DOCUMENTATION = r"""
---
short_description: Poll BMCs and emit a node power event when a node's power changes between On and Off.
description:
  - For BMCs without a Redfish EventService, and IPMI. Emits C(nodeguard_power_event) with keys node, state
    (Off or On), time (RFC 3339 UTC of the reading that saw the change), event_id and source (poll), the same
    events as the filter nodeguard.failover.redfish_power_events, on an On to Off or Off to On transition only.
  - The first reading of a BMC is not an event. A reading that is neither On nor Off (unreachable BMC, wrong
    credentials, unclear answer) is logged and changes nothing.
  - Credentials never appear in events or logs.
  - Needs the collection installed in a collections path and ansible-core (see the file's docstring).
options:
  bmcs:
    description:
      - One entry per node, C({node: <Kubernetes node name>, power: <the node_outage power option>}); power type
        redfish, ipmi, fence_agent or command (manual is an attestation, not a reading).
      - A node listed twice, or two nodes with the same Redfish or IPMI BMC, stop the source at start.
    type: list
    elements: dict
    required: true
  interval:
    description: Seconds between two readings of one BMC (at least 1).
    type: float
    default: 10
  max_concurrency:
    description: At most this many BMC readings at a time.
    type: int
    default: 4
"""

EXAMPLES = r"""
- nodeguard.failover.bmc_power_poll:
    bmcs: "{{ nodeguard_power_poll_bmcs }}"
    interval: 5
    max_concurrency: 4
"""

logger = logging.getLogger("nodeguard.failover.bmc_power_poll")

POLLABLE_TYPES = ("redfish", "ipmi", "fence_agent", "command")
STATES = {"off": "Off", "on": "On"}


# extensions/eda/plugins/collection_code.py, loaded by its path: ansible-rulebook runs this file by path, not as a package
_spec = importlib.util.spec_from_file_location("nodeguard_eda_collection_code", Path(os.path.abspath(__file__)).parents[1] / "collection_code.py")
collection_code = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(collection_code)


def _import_collection() -> dict[str, Any]:
    """The collection's power readers and name rule, imported from the collections path this file is installed in."""
    found = collection_code.import_module_utils(
        __file__, "nodeguard.failover.bmc_power_poll", {"names": "k8s.names", "args": "power.args", "base": "power.base", "readers": "power.readers"}
    )
    return {"names": found["names"], "base": found["base"], "readers": found["readers"], "power_keys": set(found["args"].POWER_SUBOPTIONS)}


def _secrets(power: dict) -> tuple:
    """Every value of a power mapping that may be secret, for masking in messages."""
    options = power.get("agent_options") or {}
    return (power.get("password"), *(str(v) for v in options.values() if v not in (None, "")))


class Bmc:
    """One node's power source and the last state it clearly read (None until the first clear reading)."""

    def __init__(self, node: str, power: dict, reader: Any):
        self.node = node
        self.power = power
        self.reader = reader
        self.last: str | None = None
        self.problem = ""  # why the latest reading was unclear, logged once per new reason

    def read(self, base) -> tuple[str, str]:
        """(state "on" | "off" | "unknown", why when unknown). Runs in a thread; never raises."""
        try:
            reading = self.reader.status()
        except base.PowerError as e:
            return base.UNKNOWN, base.redact(str(e), _secrets(self.power))
        except Exception as e:  # noqa: BLE001 - any failure of a read is "unknown"; its text may hold anything, so only the type
            return base.UNKNOWN, f"{type(e).__name__} while reading"
        if reading.state in STATES:
            return reading.state, ""
        return base.UNKNOWN, base.redact(reading.detail, _secrets(self.power))

    def observe(self, state: str, why: str, seen_at: float) -> dict[str, Any] | None:
        """The event for a reading (``state`` "on", "off" or "unknown" at ``seen_at``), or None. Only a change between
        two clear readings is an event; an unclear one is logged once per new reason and changes nothing."""
        if state not in STATES:
            if why != self.problem:
                logger.warning("bmc_power_poll: %s: power not readable, no event (%s)", self.node, why)
            self.problem = why
            return None
        if self.problem:
            logger.info("bmc_power_poll: %s: power readable again", self.node)
            self.problem = ""
        previous, self.last = self.last, state
        if previous is None:
            logger.info("bmc_power_poll: %s reads %s (first reading, not an event)", self.node, STATES[state])
            return None
        if state == previous:
            return None
        logger.info("bmc_power_poll: %s went %s -> %s", self.node, STATES[previous], STATES[state])
        return power_event(self.node, state, seen_at)


def checked_config(args: dict, api: dict) -> tuple[list[Bmc], float, int]:
    """The BMCs (readers built, nothing read yet), the interval and the concurrency; ValueError naming what is wrong
    (node names and keys only, never a value of a power mapping)."""
    names, base, readers = api["names"], api["base"], api["readers"]
    interval = args.get("interval", 10)
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval >= 1:
        raise ValueError(f"bmc_power_poll: interval must be a number of seconds >= 1, got {names.shown(interval)}")
    concurrency = args.get("max_concurrency", 4)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"bmc_power_poll: max_concurrency must be an integer >= 1, got {names.shown(concurrency)}")
    entries = args.get("bmcs")
    if not isinstance(entries, list) or not entries:
        raise ValueError("bmc_power_poll: bmcs must be a non-empty list of {node, power}; nothing to poll")
    bmcs: list[Bmc] = []
    seen_devices: dict[tuple, str] = {}
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or set(entry) != {"node", "power"}:
            raise ValueError(f"bmc_power_poll: bmcs entry {number} must have exactly the keys node and power")
        node, power = entry["node"], entry["power"]
        why = names.why_not_node_name(node)
        if why:
            raise ValueError(f"bmc_power_poll: bmcs entry {number}: {why}")
        if any(b.node == node for b in bmcs):
            raise ValueError(f"bmc_power_poll: node {node} is listed twice")
        if not isinstance(power, dict) or power.get("type") not in POLLABLE_TYPES:
            raise ValueError(f"bmc_power_poll: the power of {node} must be a dict with type one of {', '.join(POLLABLE_TYPES)}")
        unknown = sorted(str(key) for key in power if key not in api["power_keys"])
        if unknown:
            raise ValueError(f"bmc_power_poll: the power of {node} has unknown keys {', '.join(names.shown(k) for k in unknown)}")
        if power["type"] in ("redfish", "ipmi"):
            device = (power["type"], str(power.get("address") or "").rstrip("/").lower(), power.get("port"), power.get("system_id"))
            if device in seen_devices:
                raise ValueError(f"bmc_power_poll: {seen_devices[device]} and {node} have the same {power['type']} BMC; each node needs its own")
            seen_devices[device] = node
        try:
            reader = readers.reader_for(power, node)
        except base.PowerError as e:
            raise ValueError(f"bmc_power_poll: the power of {node}: {base.redact(str(e), _secrets(power))}") from None
        bmcs.append(Bmc(node, power, reader))
    return bmcs, float(interval), concurrency


def utc_time(epoch: float) -> str:
    """``epoch`` rounded up to the second, as RFC 3339 UTC (the change happened before the reading returned)."""
    moment = datetime.datetime.fromtimestamp(math.ceil(epoch), datetime.timezone.utc)  # noqa: UP017 - Python < 3.11
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def power_event(node: str, state: str, epoch: float) -> dict[str, Any]:
    return {
        "nodeguard_power_event": {
            "node": node,
            "state": STATES[state],
            "time": utc_time(epoch),
            "event_id": f"poll-{uuid.uuid4().hex}",
            "source": "poll",
        }
    }


async def poll_bmc(bmc: Bmc, queue: Any, semaphore: asyncio.Semaphore, threads, interval: float, base, clock, sleep) -> None:
    """Read ``bmc`` every ``interval`` seconds for ever; put an event on ``queue`` when its clear state changes."""
    while True:
        started = time.monotonic()
        async with semaphore:
            state, why = await asyncio.get_running_loop().run_in_executor(threads, bmc.read, base)
        event = bmc.observe(state, why, clock())
        if event:
            await queue.put(event)
        await sleep(max(0.0, interval - (time.monotonic() - started)))


async def poll(queue: Any, bmcs: list[Bmc], interval: float, max_concurrency: int, base, clock=time.time, sleep=asyncio.sleep) -> None:
    """One loop per BMC, at most ``max_concurrency`` readings at a time; runs until cancelled."""
    semaphore = asyncio.Semaphore(max_concurrency)
    # a pool of its own: the default executor's size (CPUs + 4) would be a second, hidden bound
    threads = concurrent.futures.ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="bmc_power_poll")
    try:
        await asyncio.gather(*(poll_bmc(bmc, queue, semaphore, threads, interval, base, clock, sleep) for bmc in bmcs))
    finally:
        threads.shutdown(wait=False)  # a read still running ends within its reader's timeout; the loop does not wait for it


async def main(queue: Any, args: dict[str, Any]) -> None:
    """ansible-rulebook's entry point: check the configuration (stop with a clear error if it is wrong), then poll."""
    api = _import_collection()
    bmcs, interval, max_concurrency = checked_config(args, api)
    logger.info("bmc_power_poll: polling %d BMCs every %.0f s, at most %d at a time", len(bmcs), interval, max_concurrency)
    await poll(queue, bmcs, interval, max_concurrency, api["base"])
