# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-rulebook event filter: one Redfish Event POST -> one checked power event per event record.

A BMC's Redfish EventService posts an ``Event`` (DSP0266) to the rulebook's webhook when the host's power changes.
Real BMCs say it in their own registries (docs/power-events.md, one table per vendor):

- DMTF ResourceEvent 1.x: ResourcePoweredOff, ResourcePoweringOff, ResourcePoweredOn;
- OpenBMC (bmcweb): OpenBMC.0.x.DCPowerOff / DCPowerOn, with no ``Context`` at the payload root;
- HPE iLO 5/6/7: iLOEvents / iLOResourceEvents ServerPoweredOff / ServerPoweredOn, OriginOfCondition a plain string;
- Dell iDRAC9: IDRAC.x.y.SYS1001 "System is turning off.", SYS1000 (on), SYS1003 (CPU reset), offsets like -0800;
  before firmware 6.x the bare id (SYS1001).

**Which BMC posted** is decided by what the BMC cannot borrow from another: the endpoint it posts to
(``<destination>/<node>``, one path per BMC) and its own credential, the header ``X-Nodeguard-Token`` holding
HMAC-SHA256(key, node) where the key is in the rulebook's environment and never given to any BMC
(``bmc_token``; plugins/module_utils/power/redfish_events.py computes the same for the subscription). A BMC knows
only its own token, so it cannot post for another node. No payload field identifies the BMC; the record's
OriginOfCondition, when there is one, must still be the system the mapping (``nodeguard_power_event_bmcs``:
node, system) gives that node.

A test event (SubmitTestEvent: payload or record ``Name`` "Test Event", ``EventType`` TestEvent, ``Message``
"Test Event", or a registry's TestEventLog message) never becomes a power event, whatever its MessageId.

Nothing from the payload reaches a playbook unchecked (ansible-rulebook copies event fields into extra vars, which
Ansible evaluates as templates). The filter emits only values it made or checked: the node name from the mapping,
the state from a fixed table, the time re-formatted from a parsed date, the event id against a narrow pattern.
Anything else becomes ``{"nodeguard_refused": "<why>"}`` with the offending value escaped, which the rulebook only
logs. A payload with template syntax anywhere, a non-string where a string belongs, or nesting deeper than an Event
has, is refused whole.

ansible-rulebook 1.3 does not template a filter's arguments, so the mapping cannot be passed as
``{{ nodeguard_power_event_bmcs }}``: the filter reads it from the rulebook's vars file, whose path is in the
environment variable named by ``vars_file_env`` (docs/eda.md).
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
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
  - Input is the event of the eda.builtin.webhook source receiving a Redfish Event (payload Events, meta endpoint
    and headers).
  - The BMC is the node named by the last segment of the endpoint it posted to, and only when the header
    X-Nodeguard-Token is that node's token (HMAC-SHA256 of the node name under the key in O(token_env)).
  - Output is one event per event record, C(nodeguard_power_event) with keys node, state (Off, PoweringOff, On or
    Reset), time (the record's EventTimestamp in UTC, RFC 3339, Z suffix), event_id and source (redfish-event).
    The payload and the webhook's meta are not passed on.
  - Power messages known (docs/power-events.md) are DMTF ResourceEvent 1.x ResourcePoweredOff, ResourcePoweringOff,
    ResourcePoweredOn; OpenBMC DCPowerOff, DCPowerOn; HPE iLO (iLOEvents, iLOResourceEvents) ServerPoweredOff,
    ServerPoweredOn; Dell iDRAC (IDRAC) SYS1001 (Off), SYS1000 (On), SYS1003 (Reset), also as IDRAC.<id> or the
    bare id of iDRAC9 before 6.x.
  - A record is refused (one event with the single key nodeguard_refused, the reason with the value escaped) when
    the endpoint names no mapped node, the token is missing or wrong, OriginOfCondition is present and not the
    mapped system, the MessageId is not a known power message, the record is a test event, or a field has the
    wrong form. A payload with template syntax anywhere, deeper nesting than an Event, or a non-string in a string
    property of the Event schema (Context, Name, Id, a record's Message, Severity, ...; MessageArgs a list of
    strings or null) is refused whole.
options:
  vars_file_env:
    description:
      - Environment variable that holds the path of the YAML vars file with C(nodeguard_power_event_bmcs)
        (a list of node, system). Unset, missing or malformed -> every event is refused.
    type: str
    default: NODEGUARD_POWER_EVENT_VARS
  token_env:
    description:
      - Environment variable that holds the key the per-BMC tokens are made with, a secret of its own. Unset or empty,
        or the same value as O(webhook_token_env) -> every event is refused.
    type: str
    default: NODEGUARD_BMC_TOKEN_KEY
  webhook_token_env:
    description:
      - Environment variable of the bearer token Alertmanager sends to the node-failover rulebook. When it holds the
        same value as O(token_env), every event is refused (values not shown): whoever can read Alertmanager's
        configuration could make every BMC's token. Unset, nothing is compared.
    type: str
    default: NODEGUARD_EDA_TOKEN
"""

EXAMPLES = r"""
- eda.builtin.webhook:
    host: 0.0.0.0
    port: 5001
  filters:
    - nodeguard.failover.redfish_power_events:
        vars_file_env: NODEGUARD_POWER_EVENT_VARS
        token_env: NODEGUARD_BMC_TOKEN_KEY
"""


def _load(relative: str, name: str):
    """A pure module of the collection (plugins/module_utils/<relative>). ansible-rulebook runs this file by path,
    outside Ansible's collection loader, so the module is loaded by path too."""
    path = Path(__file__).resolve().parents[4] / "plugins" / "module_utils" / relative
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_names = _load("k8s/names.py", "nodeguard_k8s_names")  # the collection's one rule for Kubernetes names
_messages = _load("power/redfish_messages.py", "nodeguard_redfish_messages")  # the vendors' power messages

MAPPING_VARIABLE = "nodeguard_power_event_bmcs"
TOKEN_HEADER = "X-Nodeguard-Token"
TOKEN_PURPOSE = b"nodeguard power events\x00"  # keeps these tokens apart from any other use of the key
EVENT_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
SYSTEM_PATH = re.compile(r"/redfish/v1/Systems/[A-Za-z0-9._:-]{1,128}")
# RFC 3339, and the offset without its colon (-0800) that iDRAC sends
RFC3339 = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?([Zz]|([+-])([0-9]{2}):?([0-9]{2}))")
MAX_RECORDS = 64
# payload / Events / record / OriginOfCondition / value is 4 deep; vendors' Oem sections add a few levels
MAX_DEPTH = 8
TEMPLATE_MARKS = ("{{", "{%", "{#")  # what starts a Jinja expression, statement or comment
# The Event schema's (DSP0268 Event v1_x) string properties that the filter does not read itself: a payload where one
# of them is not a string is refused whole. The fields the filter reads (MessageId, EventId, EventTimestamp,
# OriginOfCondition) are checked per record, with their own refusals.
PAYLOAD_STRINGS = ("@odata.context", "@odata.id", "@odata.type", "Context", "Description", "Id", "Name")
RECORD_STRINGS = ("@odata.type", "Context", "EventType", "MemberId", "Message", "MessageSeverity", "Severity")

# vars_file_env -> (node -> system, problem or ""): the mapping, read once per process.
_mapping: dict[str, Any] = {}


def bmc_token(key: str, node: str) -> str:
    """The credential of the BMC of ``node``: HMAC-SHA256(key, purpose + node), hex. The same in
    plugins/module_utils/power/redfish_events.py, which sends it in the subscription's HttpHeaders."""
    return hmac.new(key.encode(), TOKEN_PURPOSE + node.encode(), hashlib.sha256).hexdigest()


def refusal(why: str) -> dict[str, Any]:
    """The event for a record or payload that is not acted on; ``why`` must already be inert (values through _names.shown)."""
    return {"nodeguard_refused": f"power event refused, nothing runs for it: {why}"}


def _read_mapping(vars_file_env: str) -> tuple[dict[str, str], str]:
    """node -> system from the vars file, or ({}, problem). Every value is checked here once."""
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
    by_node: dict[str, str] = {}
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or set(entry) != {"node", "system"}:
            return {}, f"{MAPPING_VARIABLE} entry {number} must have exactly the keys node, system"
        system, node = entry["system"], entry["node"]
        if not isinstance(system, str) or not SYSTEM_PATH.fullmatch(system):
            return {}, f"{MAPPING_VARIABLE} entry {number}: system {_names.shown(system)} is not a path /redfish/v1/Systems/<id>"
        why = _names.why_not_node_name(node)
        if why:
            return {}, f"{MAPPING_VARIABLE} entry {number}: {why}"
        if by_node.get(node, system) != system:
            return {}, f"{MAPPING_VARIABLE}: node {node} is mapped to two systems ({by_node[node]}, {system})"
        by_node[node] = system
    return by_node, ""


def _mapping_for(vars_file_env: str) -> tuple[dict[str, str], str]:
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


def _wrong_type(payload: dict, records: list) -> str:
    """Why the payload does not have the Event schema's types, or "": a string property that is not a string, or
    MessageArgs that is not a list of strings (null is accepted: iDRAC sends it)."""
    places = [("", payload, PAYLOAD_STRINGS)] + [(f"event record {n} ", r, RECORD_STRINGS) for n, r in enumerate(records, 1) if isinstance(r, dict)]
    for where, fields, names in places:
        for name in names:
            if name in fields and not isinstance(fields[name], str):
                return f"{where}{name} must be a string, not {type(fields[name]).__name__}"
        args = fields.get("MessageArgs") if where else None
        if args is not None and not (isinstance(args, list) and all(isinstance(arg, str) for arg in args)):
            return f"{where}MessageArgs must be a list of strings"
    return ""


def normalised_time(value: Any) -> str:
    """``value`` (RFC 3339, or an offset without colon) as the same instant in UTC: ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``
    (fraction only when not zero, microseconds, trailing zeros dropped). Empty when it is not such a time.

    A time in whole seconds (iLO, iDRAC and bmcweb write no fraction) says "some moment within that second": it
    becomes the second's last microsecond, so that node-outage does not take a Lease renewed earlier in that same
    second, before the power went, for a sign of life after the event (a refusal one power-off in ten otherwise)."""
    found = RFC3339.fullmatch(value) if isinstance(value, str) else None
    if not found:
        return ""
    year, month, day, hour, minute, second = (int(found.group(n)) for n in range(1, 7))  # a leap second 60 counts as 59
    micro = int(found.group(7)[1:7].ljust(6, "0")) if found.group(7) else 999999
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


power_state = _messages.power_state
_is_test_event = _messages.is_test_event


def _origin_path(record: dict) -> tuple[str | None, bool]:
    """(the OriginOfCondition path or None when absent, well formed). A link object is the schema's form; a plain
    string is iLO's; absent is what log-based events (OpenBMC, iDRAC) may send."""
    if "OriginOfCondition" not in record:
        return None, True
    origin = record["OriginOfCondition"]
    link = origin.get("@odata.id") if isinstance(origin, dict) else origin
    return (link, True) if isinstance(link, str) else (None, False)


def _checked(payload: dict, record: Any, node: str, system: str) -> tuple[dict[str, str] | None, str]:
    """(power event, "") for a record of ``node``'s BMC whose every field has its form, (None, why) otherwise."""
    if not isinstance(record, dict):
        return None, "an event record that is not an object"
    message_id = record.get("MessageId")
    if not isinstance(message_id, str):
        return None, f"MessageId must be a string, not {type(message_id).__name__}"
    if _is_test_event(payload, record):
        return None, f"a test event from the BMC of node {node} ({_names.shown(message_id)}), and a test event never starts a run"
    state = power_state(message_id)
    if not state:
        return None, f"MessageId {_names.shown(message_id)} of node {node} is not a known power message (docs/power-events.md)"
    link, well_formed = _origin_path(record)
    if not well_formed:
        return None, "OriginOfCondition must be a link to the system (an object with an @odata.id string, or the path)"
    if link is not None and link.rstrip("/") != system:
        return None, f"OriginOfCondition {_names.shown(link)} is not {system}, the system of node {node}"
    time = normalised_time(record.get("EventTimestamp"))
    if not time:
        return None, f"EventTimestamp {_names.shown(record.get('EventTimestamp'))} of node {node} is not an RFC 3339 time"
    event_id = record.get("EventId")
    if isinstance(event_id, int) and not isinstance(event_id, bool) and event_id >= 0:
        event_id = str(event_id)  # a number, as some firmware sends it
    if not isinstance(event_id, str) or not EVENT_ID.fullmatch(event_id):
        return None, f"EventId {_names.shown(event_id)} of node {node} is not 1 to 64 of A-Z a-z 0-9 . _ : -"
    return {"node": node, "state": state, "time": time, "event_id": event_id, "source": "redfish-event"}, ""


def _header(meta: Any, name: str) -> Any:
    headers = meta.get("headers") if isinstance(meta, dict) else None
    if not isinstance(headers, dict):
        return None
    return next((value for key, value in headers.items() if isinstance(key, str) and key.lower() == name.lower()), None)


def _sender(event: dict, mapping: dict[str, str], key: str) -> tuple[str, str]:
    """(node, "") when the POST came to a mapped node's endpoint with that node's token, ("", why) otherwise."""
    meta = event.get("meta")
    endpoint = meta.get("endpoint") if isinstance(meta, dict) else None
    if not isinstance(endpoint, str):
        return "", "the webhook gave no endpoint: the BMC is known by the path it posts to (<destination>/<node>)"
    node = endpoint.rstrip("/").rsplit("/", 1)[-1]
    if node not in mapping:
        return "", f"endpoint {_names.shown(endpoint)} does not end with a mapped node (unknown BMC)"
    token = _header(meta, TOKEN_HEADER)
    if not isinstance(token, str) or not hmac.compare_digest(token.encode(), bmc_token(key, node).encode()):
        return "", f"the {TOKEN_HEADER} header is missing or is not the token of the BMC of node {node} (value not shown)"
    return node, ""


def _token_key(token_env: str, webhook_token_env: str) -> tuple[str, str]:
    """(the key of the BMCs' tokens, "") or ("", why not). The key is a secret of its own: the same value as the
    webhook's bearer token, which Alertmanager's configuration holds, would let whoever reads it make every BMC's token."""
    key = os.environ.get(token_env, "")
    if not key:
        return "", f"environment variable {token_env} (the key of the BMCs' tokens) is not set: it is a secret of its own, not {webhook_token_env}"
    if hmac.compare_digest(key.encode(), os.environ.get(webhook_token_env, "").encode()):
        return "", (
            f"environment variable {token_env} is the same as {webhook_token_env} (Alertmanager's bearer token), so whoever "
            "reads Alertmanager's configuration could make every BMC's token: give the key a value of its own and subscribe "
            "the BMCs again (power_event_subscriptions_force=true), values not shown"
        )
    return key, ""


def main(
    event: dict[str, Any],
    vars_file_env: str = "NODEGUARD_POWER_EVENT_VARS",
    token_env: str = "NODEGUARD_BMC_TOKEN_KEY",
    webhook_token_env: str = "NODEGUARD_EDA_TOKEN",
) -> list[dict[str, Any]]:
    """Return one checked power event per record of a Redfish Event payload, or refusal events."""
    mapping, problem = _mapping_for(vars_file_env)
    if problem:
        return [refusal(f"the BMC mapping is unusable: {problem}")]
    key, problem = _token_key(token_env, webhook_token_env)
    if problem:
        return [refusal(problem)]
    node, why = _sender(event, mapping, key)
    if why:
        return [refusal(why)]
    payload = event.get("payload")
    records = payload.get("Events") if isinstance(payload, dict) else None
    if not isinstance(records, list) or not records:
        return [refusal(f"not a Redfish Event (no Events list), from the BMC of node {node}")]
    if len(records) > MAX_RECORDS:
        return [refusal(f"{len(records)} event records in one POST, more than {MAX_RECORDS}")]
    junk = _junk(payload)
    if junk:
        return [refusal(f"the payload holds {junk}")]
    wrong = _wrong_type(payload, records)
    if wrong:
        return [refusal(f"the payload does not have the Event schema's types: {wrong}")]
    events = []
    for record in records:
        fields, why = _checked(payload, record, node, mapping[node])
        events.append({"nodeguard_power_event": fields} if fields else refusal(why))
    # No meta: the webhook's (request headers, the token) is not passed on; ansible-rulebook adds its own after this filter.
    return events
