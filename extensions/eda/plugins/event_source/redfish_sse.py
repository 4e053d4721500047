# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-rulebook event source: read each BMC's Redfish Server-Sent Events stream (EventService
ServerSentEventUri, DSP0266) and emit the same node power events as bmc_power_poll, on an On/Off change only.
The source connects out to the BMC: no inbound port, no webhook, no subscription to create.

- One stream per BMC (the nodes whose power mappings share an address and credentials), read by a thread.
- Resume: the id of the last event dispatched is sent back as ``Last-Event-ID`` when the source reconnects, so a
  service that keeps its recent events replays what the source missed. What a connection left unfinished (half an
  event) ends with it. Reconnects back off from 1 s to ``reconnect_max``; only a stream that delivered an event
  starts the backoff again from 1 s.
- Client-side filter: a record's MessageId must be a power message of a known vendor registry
  (plugins/module_utils/power/redfish_messages.py, shared with the webhook filter); test events never count. It
  counts for the node whose ComputerSystem its OriginOfCondition is (bmcweb cannot filter a stream by resource, so
  every system's events arrive). A record without OriginOfCondition (bmcweb's event-log records) counts for the
  node when the BMC has exactly one system and it is that node's. A power message the source cannot attribute,
  and an event it cannot read, lead to a PowerState reading of the stream's nodes; a power message dropped
  is a warning with the reason.
- Fall-back: when the stream cannot be opened, or no line has ended for ``silence_seconds`` (on this machine's
  monotonic clock, however slowly bytes trickle in), the source says so and reads each node's PowerState every
  ``poll_interval`` seconds until the stream is back. Every (re)connection also reads each node once, so a change
  while the stream was down is not lost, and each node is read every ``read_interval`` seconds while its stream
  looks alive, so a stream that stops carrying power events is no blind spot.
- The Redfish client's rules (power/redfish.py RedfishSession): TLS always verified (validate_certs false and
  plain http are refused here), credentials only to the configured origin (a ServerSentEventUri elsewhere is
  refused), no redirect, no proxy, secrets redacted from every message. Nothing from a payload is templated or
  passed on: an event carries the mapped node name, On or Off, the time we received it, an id and the source.

Like bmc_power_poll, it imports the collection's Redfish client from the collections path it is installed in:
run it by FQCN, ``nodeguard.failover.redfish_sse``, with ansible-core installed next to ansible-rulebook.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib.util
import json
import logging
import math
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

DOCUMENTATION = r"""
---
short_description: Read BMCs' Redfish Server-Sent Events streams; emit a node power event on an On/Off change.
description:
  - Emits C(nodeguard_power_event) with keys node, state (Off or On), time (RFC 3339 UTC, when this source saw it),
    event_id and source (sse for a stream event, poll for a reading), like nodeguard.failover.bmc_power_poll.
  - Falls back to reading PowerState, and logs it, while a stream is down or silent for I(silence_seconds); reads it
    every I(read_interval) while a stream looks alive, and after a power message it cannot attribute to a node.
  - TLS is always verified; credentials go only to the configured BMC; nothing from a payload is templated.
options:
  bmcs:
    description:
      - One entry per node, C({node, power}) with power the node_outage power option of type redfish, with a
        system_id (the stream is filtered on that system). Nodes whose power shares address and credentials share one stream.
    type: list
    elements: dict
    required: true
  silence_seconds:
    description: No line (event or keep-alive) ended for this long -> fall back to polling and reconnect (5 to 3600).
    type: int
    default: 60
  poll_interval:
    description: Seconds between two readings of a node while falling back (1 to 600).
    type: int
    default: 5
  reconnect_max:
    description: The longest pause between two connection attempts (backoff from 1 s, doubling; 1 to 600).
    type: int
    default: 60
  read_interval:
    description: Seconds between two readings of each node while its stream looks alive (30 to 86400).
    type: int
    default: 300
"""

EXAMPLES = r"""
- nodeguard.failover.redfish_sse:
    bmcs: "{{ nodeguard_power_poll_bmcs }}"
    silence_seconds: 60
"""

# The arguments' JSON schema (draft 2020-12), checked before anything connects. The power mapping's own keys are
# checked by the collection's rules (args.POWER_SUBOPTIONS) after this.
ARGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "nodeguard.failover.redfish_sse arguments",
    "type": "object",
    "additionalProperties": False,
    "required": ["bmcs"],
    "properties": {
        "bmcs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["node", "power"],
                "properties": {
                    "node": {"type": "string"},
                    "power": {
                        "type": "object",
                        "required": ["type", "address", "system_id"],
                        "properties": {
                            "type": {"const": "redfish"},
                            "address": {"type": "string", "pattern": "^https://"},
                            "system_id": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$"},
                            "validate_certs": {"const": True},
                            "allow_insecure_http": {"const": False},
                        },
                    },
                },
            },
        },
        "silence_seconds": {"type": "integer", "minimum": 5, "maximum": 3600, "default": 60},
        "poll_interval": {"type": "integer", "minimum": 1, "maximum": 600, "default": 5},
        "reconnect_max": {"type": "integer", "minimum": 1, "maximum": 600, "default": 60},
        "read_interval": {"type": "integer", "minimum": 30, "maximum": 86400, "default": 300},
    },
}

logger = logging.getLogger("nodeguard.failover.redfish_sse")

SYSTEMS = "/redfish/v1/Systems/"
EVENT_SERVICE = "/redfish/v1/EventService"
MAX_LINE = 64 * 1024
MAX_EVENT = 1024 * 1024  # the bytes of an event's data lines, each counted with its line end
MAX_RECORDS = 64
READ_SIZE = 8192
SYSTEM_PATH = re.compile(r"/redfish/v1/Systems/[^/]+")


# extensions/eda/plugins/collection_code.py, loaded by its path: ansible-rulebook runs this file by path, not as a package
_spec = importlib.util.spec_from_file_location("nodeguard_eda_collection_code", Path(os.path.abspath(__file__)).parents[1] / "collection_code.py")
collection_code = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(collection_code)

# the vendors' power messages and test-event marks: the one table (plugins/module_utils/power/redfish_messages.py, pure
# Python), which the webhook filter redfish_power_events reads too
_messages = collection_code.load_file(__file__, "plugins/module_utils/power/redfish_messages.py", "nodeguard_redfish_messages")


def _import_collection() -> dict[str, Any]:
    """The collection's Redfish client, name rule and power option keys, from the collections path of this file."""
    found = collection_code.import_module_utils(
        __file__, "nodeguard.failover.redfish_sse", {"names": "k8s.names", "args": "power.args", "base": "power.base", "redfish": "power.redfish"}
    )
    return {"names": found["names"], "base": found["base"], "redfish": found["redfish"], "power_keys": set(found["args"].POWER_SUBOPTIONS)}


def utc_time(epoch: float) -> str:
    moment = datetime.datetime.fromtimestamp(math.ceil(epoch), datetime.timezone.utc)  # noqa: UP017 - Python < 3.11
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def power_event(node: str, state: str, epoch: float, source: str) -> dict[str, Any]:
    return {
        "nodeguard_power_event": {
            "node": node,
            "state": state,
            "time": utc_time(epoch),
            "event_id": f"{source}-{uuid.uuid4().hex}",
            "source": source,
        }
    }


def message_state(message_id: Any) -> str | None:
    """On or Off for a known power MessageId, else None. PoweringOff and Reset are no power states: not events here
    (bmc_power_poll's rule: only On and Off count)."""
    if not isinstance(message_id, str) or len(message_id) > 256:
        return None
    state = _messages.power_state(message_id)
    return state if state in ("On", "Off") else None


def origin_path(record: dict) -> str | None:
    """OriginOfCondition as a path: the schema's {"@odata.id": ...}, or the plain string HPE iLO sends."""
    origin = record.get("OriginOfCondition")
    if isinstance(origin, dict):
        origin = origin.get("@odata.id")
    return origin.rstrip("/") if isinstance(origin, str) else None


class Sorted:
    """The power records of one Event: ``kept`` (node, state); ``dropped`` and ``unknown`` the reasons of power
    messages left out, ``unknown`` those that may be a mapped node's (a PowerState reading follows them)."""

    def __init__(self) -> None:
        self.kept: list[tuple[str, str]] = []
        self.dropped: list[str] = []
        self.unknown: list[str] = []


def sort_records(payload: dict, systems: dict[str, str], sole: str | None, shown: Callable[[Any], str]) -> Sorted:
    """Sort the records of an Event payload that report a known power message (On/Off). ``systems``: ComputerSystem
    path -> node; ``sole``: the node when the BMC has exactly one system and it is that node's, else None; ``shown``
    makes a value inert for a message. Other messages and test events are not power messages: not sorted at all."""
    found = Sorted()
    records = payload.get("Events")
    records = records if isinstance(records, list) else []
    if len(records) > MAX_RECORDS:
        found.unknown.append(f"{len(records)} records, more than {MAX_RECORDS}: those after the first {MAX_RECORDS} are not read")
    for record in records[:MAX_RECORDS]:
        if not isinstance(record, dict) or _messages.is_test_event(payload, record):
            continue
        message_id = record.get("MessageId")
        state = message_state(message_id)
        if not state:
            continue
        path = origin_path(record)
        what = f"power message {shown(message_id)}"
        if path in systems:
            found.kept.append((systems[path], state))
        elif "OriginOfCondition" not in record and sole:
            found.kept.append((sole, state))
        elif "OriginOfCondition" not in record:
            found.unknown.append(f"{what} has no OriginOfCondition, and this stream does not serve exactly one mapped system")
        elif path and SYSTEM_PATH.fullmatch(path):
            found.dropped.append(f"{what} is about {shown(path)}, and no node is mapped to that system")
        else:
            found.unknown.append(f"{what} has OriginOfCondition {shown(record['OriginOfCondition'])}, not a system")
    return found


class SseParser:
    """The text/event-stream format (WHATWG HTML, "Server-sent events"): fields per line, a blank line ends an event.
    ``feed(line)`` returns (id, data) when a line ends an event with data, else None. One parser per connection,
    starting from the id of the last event dispatched: half an event never outlives the connection it came on."""

    def __init__(self, last_id: str = "") -> None:
        self.last_id = last_id
        self._data: list[str] = []
        self._size = 0

    def feed(self, line: str) -> tuple[str, str] | None:
        line = line.rstrip("\r\n")
        if not line:
            if not self._data:
                return None
            data, self._data, self._size = "\n".join(self._data), [], 0
            return self.last_id, data
        if line.startswith(":"):
            return None  # a comment: a keep-alive
        field, _colon, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            self._size += len(value) + 1  # an empty data line costs its line end: the bound holds for any line
            if self._size > MAX_EVENT:
                raise ValueError(f"an event larger than {MAX_EVENT} bytes")
            self._data.append(value)
        elif field == "id" and "\0" not in value and len(value) <= 128:
            self.last_id = value
        return None


class Node:
    """One node on a stream: its reader (for the fall-back) and the last power state this source knows."""

    def __init__(self, name: str, system_path: str, reader: Any):
        self.name = name
        self.system_path = system_path
        self.reader = reader
        self.last: str | None = None
        self.problem = ""

    def observe(self, state: str, source: str, seen_at: float) -> dict | None:
        """The event for a new known state (On/Off), or None: the first state known is the baseline."""
        previous, self.last = self.last, state
        if previous is None:
            logger.info("redfish_sse: %s reads %s (first reading, not an event)", self.name, state)
            return None
        if previous == state:
            return None
        logger.info("redfish_sse: %s went %s -> %s (%s)", self.name, previous, state, source)
        return power_event(self.name, state, seen_at, source)


class Stream:
    """One BMC's event stream, with its fall-back; ``run`` loops until ``stop`` is set."""

    def __init__(
        self,
        api: dict,
        session: Any,
        nodes: list[Node],
        settings: dict,
        emit: Callable,
        sleep: Callable = time.sleep,
        clock: Callable = time.time,
        monotonic: Callable = time.monotonic,
    ):
        self.api = api
        self.session = session
        self.name = session.address  # the configured origin: no credential in it (check_address)
        self.nodes = {node.system_path: node for node in nodes}
        self.silence = settings["silence_seconds"]
        self.poll_interval = settings["poll_interval"]
        self.reconnect_max = settings["reconnect_max"]
        self.read_interval = settings["read_interval"]
        self.emit = emit
        self.sleep = sleep
        self.clock = clock
        self.monotonic = monotonic
        self.last_id = ""  # the id of the last event dispatched: Last-Event-ID on a reconnection
        self.sole: str | None = None  # the node, when the BMC has exactly one system and it is that node's
        self.polling = False
        self.last_why = ""
        self.backoff = 1.0

    def secrets(self) -> tuple:
        return tuple(self.session.secrets)

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                response = self.connect()
            except Exception as e:  # noqa: BLE001 - any failure to connect: fall back, retry later
                self.fall_back(f"cannot open its event stream ({self.describe(e)})")
                self.poll_for(self.backoff, stop)
                self.backoff = min(self.backoff * 2, self.reconnect_max)
                continue
            try:
                self.read(response, stop, SseParser(self.last_id))
                why = "the BMC ended its event stream"
            except TimeoutError:
                why = f"no event or keep-alive for {self.silence} s"
            except Exception as e:  # noqa: BLE001 - a broken stream: fall back, reconnect
                why = f"its event stream broke ({self.describe(e)})"
            finally:
                response.close()
            if stop.is_set():
                return
            self.fall_back(why)
            self.poll_for(self.backoff, stop)
            self.backoff = min(self.backoff * 2, self.reconnect_max)

    def describe(self, error: Exception) -> str:
        base = self.api["base"]
        if isinstance(error, base.PowerError):
            return base.redact(str(error), self.secrets())[:300]
        return type(error).__name__  # any other error's text may hold anything

    def connect(self) -> Any:
        """Find the ServerSentEventUri, open the stream (with Last-Event-ID when we have one), then read every node once."""
        service = self.session.fetch("GET", EVENT_SERVICE)
        uri = service.get("ServerSentEventUri")
        if not isinstance(uri, str) or not uri:
            raise self.api["base"].PowerError(f"redfish {self.name}: the EventService has no ServerSentEventUri")
        self.sole = self.sole_node()
        headers = {"Last-Event-ID": self.last_id} if self.last_id else {}
        response = self.session.open_stream(uri, headers, self.silence)
        resumed = f", resuming after event {self.last_id}" if self.last_id else ""
        if self.polling:
            logger.info("redfish_sse: %s: event stream open again%s; polling stops", self.name, resumed)
        else:
            logger.info("redfish_sse: %s: event stream open%s", self.name, resumed)
        self.polling = False
        self.read_all("poll")  # a change while the stream was down is not lost
        return response

    def sole_node(self) -> str | None:
        """The node whose system is the only one the BMC has (its Systems collection lists exactly that system), or
        None: then a power record without OriginOfCondition may be another system's and leads to a reading."""
        if len(self.nodes) != 1:
            return None
        ((path, node),) = self.nodes.items()
        try:
            members = self.session.fetch("GET", SYSTEMS.rstrip("/")).get("Members")
        except self.api["base"].PowerError as e:
            logger.warning(
                "redfish_sse: %s: cannot list its systems (%s); a power record without OriginOfCondition leads to a reading", self.name, self.describe(e)
            )
            return None
        listed = [origin_path({"OriginOfCondition": member}) for member in members] if isinstance(members, list) else []
        return node.name if listed == [path] else None

    def read(self, response: Any, stop: threading.Event, parser: SseParser) -> None:
        """Read the stream until it ends. No line ended for ``silence`` seconds on the monotonic clock -> TimeoutError,
        however slowly bytes trickle in (a socket timeout only bounds one recv); every node is read every
        ``read_interval`` seconds on the way."""
        pending = b""
        now = self.monotonic()
        silent_after, next_reading = now + self.silence, now + self.read_interval
        while not stop.is_set():
            chunk = response.read1(READ_SIZE)
            if not chunk:
                return
            *lines, pending = (pending + chunk).split(b"\n")
            if len(pending) > MAX_LINE or any(len(line) > MAX_LINE for line in lines):
                raise ValueError(f"a line longer than {MAX_LINE} bytes")
            for line in lines:
                dispatched = parser.feed(line.decode("utf-8", errors="replace"))
                if dispatched:
                    self.handle(*dispatched)
                    self.last_id, self.backoff = dispatched[0], 1.0  # dispatched: resume after it; the stream works
            now = self.monotonic()
            if lines:
                silent_after = now + self.silence
            elif now >= silent_after:
                raise TimeoutError("no line ended within the silence")
            if now >= next_reading:
                self.read_all("poll")  # a stream that looks alive is still no proof that it carries every change
                next_reading = now + self.read_interval

    def handle(self, event_id: str, data: str) -> None:
        """Act on one dispatched event: keep its power records, and read PowerState for what cannot be attributed."""
        shown = self.api["names"].shown
        try:
            payload = json.loads(data)
        except ValueError:
            payload = None
        if not isinstance(payload, dict) or not isinstance(payload.get("Events"), list):
            logger.warning("redfish_sse: %s: event %s is not a Redfish Event in JSON; reading PowerState", self.name, shown(event_id))
            self.read_all("poll")
            return
        found = sort_records(payload, {path: node.name for path, node in self.nodes.items()}, self.sole, shown)
        for why in found.dropped:
            logger.warning("redfish_sse: %s: event %s: %s; dropped", self.name, shown(event_id), why)
        for node_name, state in found.kept:
            node = next(n for n in self.nodes.values() if n.name == node_name)
            event = node.observe(state, "sse", self.clock())
            if event:
                self.emit(event)
        if found.unknown:
            logger.warning("redfish_sse: %s: event %s: %s; reading PowerState", self.name, shown(event_id), "; ".join(found.unknown))
            self.read_all("poll")

    def fall_back(self, why: str) -> None:
        """Say that the stream is down or silent and polling takes over: a warning for a new reason, else info."""
        level = logging.INFO if why == self.last_why else logging.WARNING
        logger.log(level, "redfish_sse: %s: %s; falling back to polling every %d s, reconnecting in %.0f s", self.name, why, self.poll_interval, self.backoff)
        self.last_why = why
        self.polling = True

    def poll_for(self, seconds: float, stop: threading.Event) -> None:
        """Read every node every poll_interval for ``seconds`` (at least one round)."""
        end = self.monotonic() + seconds
        while not stop.is_set():
            started = self.monotonic()
            self.read_all("poll")
            if self.monotonic() >= end:
                return
            self.sleep(max(0.0, min(self.poll_interval - (self.monotonic() - started), end - self.monotonic())))

    def read_all(self, source: str) -> None:
        base = self.api["base"]
        for node in self.nodes.values():
            try:
                reading = node.reader.status()
                state = {"on": "On", "off": "Off"}.get(reading.state)
                why = "" if state else base.redact(reading.detail, self.secrets())
            except base.PowerError as e:
                state, why = None, base.redact(str(e), self.secrets())
            except Exception as e:  # noqa: BLE001 - its text may hold anything
                state, why = None, f"{type(e).__name__} while reading"
            if state is None:
                if why != node.problem:
                    logger.warning("redfish_sse: %s: power not readable, no event (%s)", node.name, why)
                node.problem = why
                continue
            node.problem = ""
            event = node.observe(state, source, self.clock())
            if event:
                self.emit(event)


def checked_config(args: dict, api: dict) -> tuple[list[Stream], dict]:
    """The streams (nothing connected yet) and the settings; ValueError naming what is wrong (never a secret)."""
    import jsonschema  # ansible-rulebook's own dependency

    names, base, redfish = api["names"], api["base"], api["redfish"]
    given = {key: value for key, value in args.items() if not key.startswith("eda_")}
    errors = sorted(jsonschema.Draft202012Validator(ARGS_SCHEMA).iter_errors(given), key=lambda e: list(e.path))
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "arguments"
        # the message of a schema error may quote the value (a password): only the place and the rule are shown
        raise ValueError(f"redfish_sse: {where}: does not match the schema ({errors[0].validator})")
    settings = {key: given.get(key, spec.get("default")) for key, spec in ARGS_SCHEMA["properties"].items() if key != "bmcs"}
    groups: dict[tuple, list] = {}
    seen_nodes, seen_systems = set(), {}
    for number, entry in enumerate(given["bmcs"], 1):
        node, power = entry["node"], entry["power"]
        why = names.why_not_node_name(node)
        if why:
            raise ValueError(f"redfish_sse: bmcs entry {number}: {why}")
        if node in seen_nodes:
            raise ValueError(f"redfish_sse: node {node} is listed twice")
        seen_nodes.add(node)
        unknown = sorted(str(key) for key in power if key not in api["power_keys"])
        if unknown:
            raise ValueError(f"redfish_sse: the power of {node} has unknown keys {', '.join(names.shown(k) for k in unknown)}")
        origin = power["address"].rstrip("/").lower()
        system = (origin, power["system_id"])
        if system in seen_systems:
            raise ValueError(f"redfish_sse: {seen_systems[system]} and {node} have the same Redfish system; each node needs its own")
        seen_systems[system] = node
        key = (origin, power.get("username"), power.get("password"), power.get("ca_cert"), power.get("timeout"))
        groups.setdefault(key, []).append((node, power))
    streams = []
    for members in groups.values():
        try:
            session = redfish.RedfishSession(members[0][1])
            nodes = [Node(node, SYSTEMS + power["system_id"], redfish.RedfishReader(power)) for node, power in members]
        except base.PowerError as e:
            secrets = tuple(p.get("password") for _n, p in members)
            raise ValueError(f"redfish_sse: the power of {members[0][0]}: {base.redact(str(e), secrets)}") from None
        streams.append((session, nodes))
    return streams, settings


async def main(queue: Any, args: dict[str, Any]) -> None:
    """ansible-rulebook's entry point: check the arguments (stop with a clear error if wrong), then read the streams."""
    api = _import_collection()
    groups, settings = checked_config(args, api)
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()

    def emit(event: dict) -> None:
        loop.call_soon_threadsafe(inbox.put_nowait, event)

    stop = threading.Event()
    for session, nodes in groups:
        stream = Stream(api, session, nodes, settings, emit)
        threading.Thread(target=stream.run, args=(stop,), name=f"redfish_sse-{len(nodes)}", daemon=True).start()
    logger.info("redfish_sse: reading %d event stream(s) for %d node(s)", len(groups), sum(len(n) for _s, n in groups))
    try:
        while True:
            await queue.put(await inbox.get())
    finally:
        stop.set()
