# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-rulebook event filter: one Redfish Event POST -> one checked power event per event record.

A BMC's Redfish EventService posts an ``Event`` (DSP0266) to the rulebook's webhook when the host's
power changes: ``Context`` is the subscription's context string, each record of ``Events`` has a
``MessageId`` of the ResourceEvent registry (ResourcePoweredOff, ResourcePoweringOff, ResourcePoweredOn),
an ``EventTimestamp``, an ``EventId`` and ``OriginOfCondition`` (the ComputerSystem that changed).

The BMC is identified by the subscription context, which the user's mapping
(``nodeguard_power_event_bmcs``: context, system, node) ties to exactly one node; the record's
OriginOfCondition must be that node's system. A power event is only a trigger: node-outage proves
power-off (BMC identity, Off twice), the Lease and the storm rules itself.

Nothing from the payload reaches a playbook unchecked (ansible-rulebook copies event fields into
extra vars, which Ansible evaluates as templates). The filter emits only values it made or checked:
the node name from the mapping, the state from a fixed table, the time re-formatted from a parsed
date, the event id against a narrow pattern. Anything else becomes ``{"nodeguard_refused": "<why>"}``
with the offending value escaped, which the rulebook only logs. A payload with template syntax
anywhere, a non-string where a string belongs, or nesting deeper than an Event has, is refused whole.

ansible-rulebook 1.3 does not template a filter's arguments, so the mapping cannot be passed as
``{{ nodeguard_power_event_bmcs }}``: the filter reads it from the rulebook's vars file, whose path is
in the environment variable named by ``vars_file_env`` (docs/eda.md).
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import re
from pathlib import Path
from typing import Any

import yaml

DOCUMENTATION = r"""
---
short_description: Turn a Redfish EventService Event into one checked power event per record, for mapped BMCs only.
description:
  - Input is the event of the eda.builtin.webhook source receiving a Redfish Event (payload Context and Events).
  - Output is one event per event record, C(nodeguard_power_event) with keys node (the Kubernetes node the mapping
    gives for the subscription context), state (Off, PoweringOff or On), time (the record's EventTimestamp in UTC,
    RFC 3339, Z suffix), event_id and source (redfish-event). The payload and the webhook's meta are not passed on.
  - A record is refused (one event with the single key nodeguard_refused, the reason with the value escaped) when the
    context is not mapped or mapped to more than one node, OriginOfCondition is not the mapped system, the MessageId
    is not a ResourceEvent power message, or a field is missing or has the wrong form. A payload with template
    syntax anywhere, a non-string where a string belongs, or deeper nesting than an Event is refused whole.
options:
  vars_file_env:
    description:
      - Environment variable that holds the path of the YAML vars file with C(nodeguard_power_event_bmcs)
        (a list of context, system, node). Unset, missing or malformed -> every event is refused.
    type: str
    default: NODEGUARD_POWER_EVENT_VARS
"""

EXAMPLES = r"""
- eda.builtin.webhook:
    host: 0.0.0.0
    port: 5001
    token: "{{ NODEGUARD_EDA_TOKEN }}"
  filters:
    - nodeguard.failover.redfish_power_events:
        vars_file_env: NODEGUARD_POWER_EVENT_VARS
"""


def _load_names():
    """The collection's one rule for Kubernetes names (plugins/module_utils/k8s/names.py). ansible-rulebook runs
    this file by path, outside Ansible's collection loader, so the rule is loaded by path too."""
    path = Path(__file__).resolve().parents[4] / "plugins" / "module_utils" / "k8s" / "names.py"
    spec = importlib.util.spec_from_file_location("nodeguard_k8s_names", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_names = _load_names()

MAPPING_VARIABLE = "nodeguard_power_event_bmcs"
# ResourceEvent registry, any 1.x version: RegistryPrefix.Major.Minor[.Errata].MessageKey
MESSAGE_ID = re.compile(r"ResourceEvent\.1\.[0-9]{1,3}(\.[0-9]{1,3})?\.([A-Za-z]{1,64})")
STATES = {"ResourcePoweredOff": "Off", "ResourcePoweringOff": "PoweringOff", "ResourcePoweredOn": "On"}
EVENT_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
SYSTEM_PATH = re.compile(r"/redfish/v1/Systems/[A-Za-z0-9._:-]{1,128}")
RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?([Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)
CONTEXT_MAX = 256  # Redfish EventDestination.Context
MAX_RECORDS = 64
# payload / Events / record / OriginOfCondition / value is 4 deep; vendors' Oem sections add a few levels
MAX_DEPTH = 8
TEMPLATE_MARKS = ("{{", "{%", "{#")  # what starts a Jinja expression, statement or comment

# vars_file_env -> (context -> {(system, node)}, problem or ""): the mapping, read once per process.
_mapping: dict[str, Any] = {}


def refusal(why: str) -> dict[str, Any]:
    """The event for a record or payload that is not acted on; ``why`` must already be inert (values through _names.shown)."""
    return {"nodeguard_refused": f"power event refused, nothing runs for it: {why}"}


def _read_mapping(vars_file_env: str) -> tuple[dict[str, set], str]:
    """context -> {(system, node)} from the vars file, or ({}, problem). Every value is checked here once."""
    path = os.environ.get(vars_file_env)
    if not path:
        return {}, f"environment variable {vars_file_env} (the vars file with {MAPPING_VARIABLE}) is not set"
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as e:
        return {}, f"cannot read {MAPPING_VARIABLE} from {_names.shown(path)}: {type(e).__name__}"
    entries = data.get(MAPPING_VARIABLE) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return {}, f"{_names.shown(path)} has no list {MAPPING_VARIABLE}"
    by_context: dict[str, set] = {}
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or set(entry) != {"context", "system", "node"}:
            return {}, f"{MAPPING_VARIABLE} entry {number} must have exactly the keys context, system, node"
        context, system, node = entry["context"], entry["system"], entry["node"]
        if not isinstance(context, str) or not 0 < len(context) <= CONTEXT_MAX:
            return {}, f"{MAPPING_VARIABLE} entry {number}: context must be a string of 1 to {CONTEXT_MAX} characters"
        if not isinstance(system, str) or not SYSTEM_PATH.fullmatch(system):
            return {}, f"{MAPPING_VARIABLE} entry {number}: system {_names.shown(system)} is not a path /redfish/v1/Systems/<id>"
        why = _names.why_not_node_name(node)
        if why:
            return {}, f"{MAPPING_VARIABLE} entry {number}: {why}"
        by_context.setdefault(context, set()).add((system, node))
    return by_context, ""


def _mapping_for(vars_file_env: str) -> tuple[dict[str, set], str]:
    if vars_file_env not in _mapping:
        _mapping[vars_file_env] = _read_mapping(vars_file_env)
    return _mapping[vars_file_env]


def _junk(value: Any, depth: int = 0) -> str:
    """Why ``value`` (the whole payload) is not what a BMC sends, or "": too deep, or template syntax in any key or string."""
    if depth > MAX_DEPTH:
        return "nested deeper than a Redfish Event"
    if isinstance(value, dict):
        items = list(value.items())
        return next((why for key, item in items for why in (_junk(key, depth + 1), _junk(item, depth + 1)) if why), "")
    if isinstance(value, list):
        return next((why for item in value for why in (_junk(item, depth + 1),) if why), "")
    if isinstance(value, str) and any(mark in value for mark in TEMPLATE_MARKS):
        return f"template syntax in {_names.shown(value)}"
    return ""


def normalised_time(value: Any) -> str:
    """``value`` (RFC 3339) as the same instant in UTC: ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` (fraction only when not zero,
    microseconds, trailing zeros dropped). Empty when it is not an RFC 3339 time."""
    found = RFC3339.fullmatch(value) if isinstance(value, str) else None
    if not found:
        return ""
    year, month, day, hour, minute, second = (int(found.group(n)) for n in range(1, 7))  # a leap second 60 counts as 59
    micro = int((found.group(7) or ".0")[1:7].ljust(6, "0"))
    offset = datetime.timedelta(0)
    if found.group(9):
        offset = datetime.timedelta(hours=int(found.group(10)), minutes=int(found.group(11)))
        if found.group(9) == "-":
            offset = -offset
    try:
        moment = datetime.datetime(year, month, day, hour, minute, 59 if second == 60 else second, micro, datetime.timezone(offset))
        utc = moment.astimezone(datetime.timezone.utc)  # noqa: UP017 - ansible-rulebook may run on Python < 3.11
    except (ValueError, OverflowError):
        return ""
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


def _checked(record: Any, context: str, system: str, node: str) -> tuple[dict[str, str] | None, str]:
    """(power event, "") for a record about ``system`` whose every field has its form, (None, why) otherwise."""
    if not isinstance(record, dict):
        return None, "an event record that is not an object"
    message_id = record.get("MessageId")
    if not isinstance(message_id, str):
        return None, f"MessageId must be a string, not {type(message_id).__name__}"
    found = MESSAGE_ID.fullmatch(message_id)
    if not found or found.group(2) not in STATES:
        return None, f"MessageId {_names.shown(message_id)} is not a ResourceEvent power message (PoweredOff, PoweringOff, PoweredOn)"
    origin = record.get("OriginOfCondition")
    link = origin.get("@odata.id") if isinstance(origin, dict) else None
    if not isinstance(link, str):
        return None, "OriginOfCondition must be a link to the system (an object with an @odata.id string)"
    if link.rstrip("/") != system:
        return None, f"OriginOfCondition {_names.shown(link)} is not {system}, the system mapped to context {_names.shown(context)}"
    time = normalised_time(record.get("EventTimestamp"))
    if not time:
        return None, f"EventTimestamp {_names.shown(record.get('EventTimestamp'))} of node {node} is not an RFC 3339 time"
    event_id = record.get("EventId")
    if not isinstance(event_id, str) or not EVENT_ID.fullmatch(event_id):
        return None, f"EventId {_names.shown(event_id)} of node {node} is not 1 to 64 of A-Z a-z 0-9 . _ : -"
    fields = {"node": node, "state": STATES[found.group(2)], "time": time, "event_id": event_id, "source": "redfish-event"}
    return fields, ""


def main(event: dict[str, Any], vars_file_env: str = "NODEGUARD_POWER_EVENT_VARS") -> list[dict[str, Any]]:
    """Return one checked power event per record of a Redfish Event payload, or refusal events."""
    mapping, problem = _mapping_for(vars_file_env)
    if problem:
        return [refusal(f"the BMC mapping is unusable: {problem}")]
    payload = event.get("payload")
    records = payload.get("Events") if isinstance(payload, dict) else None
    if not isinstance(records, list) or not records:
        return [refusal("not a Redfish Event (no Events list)")]
    if len(records) > MAX_RECORDS:
        return [refusal(f"{len(records)} event records in one POST, more than {MAX_RECORDS}")]
    junk = _junk(payload)
    if junk:
        return [refusal(f"the payload holds {junk}")]
    context = payload.get("Context")
    if not isinstance(context, str):
        return [refusal(f"Context must be a string, not {type(context).__name__}")]
    targets = mapping.get(context)
    if not targets:
        return [refusal(f"context {_names.shown(context)} is not mapped to a node (unknown BMC)")]
    if len(targets) > 1:
        nodes = ", ".join(sorted({mapped_node for mapped_system, mapped_node in targets}))
        return [refusal(f"context {_names.shown(context)} is mapped more than once ({nodes}): it does not name one BMC")]
    ((system, node),) = targets
    events = []
    for record in records:
        fields, why = _checked(record, context, system, node)
        events.append({"nodeguard_power_event": fields} if fields else refusal(why))
    # No meta: the webhook's (request headers) is not passed on; ansible-rulebook adds its own after this filter.
    return events
