"""The event filter nodeguard.failover.redfish_power_events: which Redfish Events become power events, and which are refused.

The BMC is identified by the endpoint it posts to (<destination>/<node>) and its own token (X-Nodeguard-Token,
HMAC of the node under the rulebook's key); the record's OriginOfCondition, when present, must be the node's mapped
system. Every emitted value is checked or made by the filter (ansible-rulebook copies event fields into extra vars,
which Ansible evaluates as templates); everything else becomes an inert refusal. The vendor fixtures
(fixtures/redfish_events) are written from each vendor's public registry and documentation.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import runpy
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
FILTER = REPO / "extensions" / "eda" / "plugins" / "event_filter" / "redfish_power_events.py"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redfish_events"
KEY = "rulebook-key-5b1f"  # the rulebook's NODEGUARD_BMC_TOKEN_KEY: the key of the BMCs' tokens, never sent by a BMC
W1 = {"system": "/redfish/v1/Systems/ng-worker1", "node": "ng-worker1"}
W2 = {"system": "/redfish/v1/Systems/1", "node": "ng-worker2"}
W3 = {"system": "/redfish/v1/Systems/1", "node": "ng-worker3"}  # same system path, another BMC


def token(node: str, key: str = KEY) -> str:
    """Written here from the documented rule (docs/power-events.md), not imported: HMAC-SHA256(key, purpose + node)."""
    return hmac.new(key.encode(), b"nodeguard power events\x00" + node.encode(), hashlib.sha256).hexdigest()


def write_mapping(path: Path, entries) -> Path:
    path.write_text(yaml.safe_dump({"nodeguard_power_event_bmcs": entries, "nodeguard_allow_nodes": []}))
    return path


@pytest.fixture
def mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """main() of a fresh copy of the filter (as ansible-rulebook loads it: runpy), reading ``entries`` as the mapping."""

    def load(entries=(W1, W2, W3)):
        monkeypatch.setenv("NODEGUARD_POWER_EVENT_VARS", str(write_mapping(tmp_path / "vars.yml", entries if isinstance(entries, str) else list(entries))))
        monkeypatch.setenv("NODEGUARD_BMC_TOKEN_KEY", KEY)
        return runpy.run_path(str(FILTER))["main"]

    return load


def record(message="ResourcePoweredOff", origin="/redfish/v1/Systems/ng-worker1", timestamp="2026-11-23T08:00:00.000Z", event_id="ev-1") -> dict:
    return {
        "EventId": event_id,
        "EventTimestamp": timestamp,
        "MessageSeverity": "Warning",
        "Message": "The resource has been powered off.",
        "MessageId": f"ResourceEvent.1.3.0.{message}",
        "MessageArgs": [],
        "OriginOfCondition": {"@odata.id": origin},
    }


def event(*records, node="ng-worker1", endpoint=None, headers=None) -> dict:
    """What eda.builtin.webhook hands the filter for a POST to /redfish-events/<node> (it drops Authorization)."""
    payload = {"@odata.type": "#Event.v1_7_0.Event", "Id": "1", "Name": "Power event", "Context": f"nodeguard:{node}", "Events": list(records)}
    if headers is None:
        headers = {"Content-Type": "application/json", "X-Nodeguard-Token": token(node)}
    return {"payload": payload, "meta": {"endpoint": endpoint if endpoint is not None else f"redfish-events/{node}", "headers": headers}}


def posted(fixture: str, node: str = "ng-worker1") -> dict:
    """A vendor fixture as the webhook hands it over, POSTed by the BMC of ``node`` to its own endpoint."""
    payload = json.loads((FIXTURES / fixture).read_text())
    payload.pop("_about")
    return {"payload": payload, "meta": {"endpoint": f"redfish-events/{node}", "headers": {"x-nodeguard-token": token(node)}}}


def refused(out: list) -> str:
    (only,) = out
    assert set(only) == {"nodeguard_refused"}
    text = only["nodeguard_refused"]
    assert text.startswith("power event refused, nothing runs for it: ")
    assert not set("{}%#\n$;") & set(text), text  # inert: no template syntax, newline, shell or vault marker
    return text


@pytest.mark.parametrize("message, state", [("ResourcePoweredOff", "Off"), ("ResourcePoweringOff", "PoweringOff"), ("ResourcePoweredOn", "On")])
def test_each_power_message_becomes_one_event_of_checked_values_only(mapped, message: str, state: str) -> None:
    (out,) = mapped()(event(record(message=message)))
    assert out == {
        "nodeguard_power_event": {"node": "ng-worker1", "state": state, "time": "2026-11-23T08:00:00Z", "event_id": "ev-1", "source": "redfish-event"}
    }  # no payload, no Message, no request headers (the bearer token)


def test_later_registry_versions_are_power_messages_too(mapped) -> None:
    rec = record()
    rec["MessageId"] = "ResourceEvent.1.10.1.ResourcePoweredOff"
    (out,) = mapped()(event(rec))
    assert out["nodeguard_power_event"]["state"] == "Off"


@pytest.mark.parametrize("message_id", ["ResourceEvent.1.0.ResourceChanged", "Base.1.0.ResourcePoweredOff", "ResourceEvent.2.0.ResourcePoweredOff",
                                        "ResourcePoweredOff", "ResourceEvent.1.0.ResourcePoweredOffX", ""])
def test_other_messages_are_refused(mapped, message_id: str) -> None:
    rec = record()
    rec["MessageId"] = message_id
    assert "is not a known power message" in refused(mapped()(event(rec)))


def test_each_record_of_a_post_is_one_event(mapped) -> None:
    out = mapped()(event(record(message="ResourcePoweringOff", event_id="a"), record(event_id="b")))
    assert [(e["nodeguard_power_event"]["state"], e["nodeguard_power_event"]["event_id"]) for e in out] == [("PoweringOff", "a"), ("Off", "b")]


@pytest.mark.parametrize("timestamp, normalised", [
    ("2026-11-23T09:00:00.5+01:00", "2026-11-23T08:00:00.5Z"),
    ("2026-11-23T02:30:00.000-05:30", "2026-11-23T08:00:00Z"),
    ("2026-11-23T00:00:00.000-0800", "2026-11-23T08:00:00Z"),  # iDRAC's offset without colon
    # whole seconds: the last microsecond of that second (the power went some time within it)
    ("2026-11-23T09:00:00+01:00", "2026-11-23T08:00:00.999999Z"),
    ("2026-11-23T00:00:00-0800", "2026-11-23T08:00:00.999999Z"),
    ("2026-11-23T08:00:00.250Z", "2026-11-23T08:00:00.25Z"),
    ("2026-11-23T08:00:00.000Z", "2026-11-23T08:00:00Z"),
    ("2026-11-23t08:00:00.123456789z", "2026-11-23T08:00:00.123456Z"),
    ("2026-12-31T23:59:60.000Z", "2026-12-31T23:59:59Z"),
    ("2027-01-01T00:30:00.000+01:00", "2026-12-31T23:30:00Z"),
])
def test_the_time_is_normalised_to_rfc3339_utc(mapped, timestamp: str, normalised: str) -> None:
    (out,) = mapped()(event(record(timestamp=timestamp)))
    assert out["nodeguard_power_event"]["time"] == normalised


@pytest.mark.parametrize("timestamp", ["2026-11-23 08:00:00Z", "2026-11-23T08:00:00", "2026-02-30T08:00:00Z", "2026-11-23T24:00:00Z",
                                       "2026-11-23T08:00:61Z", "2026-11-23T08:00:00+25:00", "now", 1763884800, None, ["2026-11-23T08:00:00Z"]])
def test_a_time_that_is_not_rfc3339_is_refused(mapped, timestamp) -> None:
    assert "EventTimestamp" in refused(mapped()(event(record(timestamp=timestamp))))


def test_an_endpoint_of_no_mapped_node_is_refused(mapped) -> None:
    text = refused(mapped()(event(record(), node="ng-spare")))
    assert "endpoint 'redfish-events/ng-spare' does not end with a mapped node (unknown BMC)" in text


@pytest.mark.parametrize("headers", [{}, {"X-Nodeguard-Token": ""}, {"X-Nodeguard-Token": token("ng-worker2")},
                                     {"X-Nodeguard-Token": token("ng-worker1", key="another-key")}, {"Authorization": f"Bearer {KEY}"}])
def test_a_bmc_without_its_own_token_is_refused(mapped, headers) -> None:
    """Another BMC's token, a token made with another key, the key itself as a bearer token: none is this BMC's."""
    text = refused(mapped()(event(record(), headers=headers)))
    assert "X-Nodeguard-Token header is missing or is not the token of the BMC of node ng-worker1 (value not shown)" in text
    assert KEY not in text and token("ng-worker1") not in text


def test_a_bmc_posting_for_another_node_is_refused_whatever_the_payload_says(mapped) -> None:
    """ng-worker2's BMC posts to ng-worker1's endpoint with its own token and a payload naming ng-worker1 throughout."""
    forged = event(record(), headers={"X-Nodeguard-Token": token("ng-worker2")})
    assert "not the token of the BMC of node ng-worker1" in refused(mapped()(forged))


def test_no_endpoint_is_refused(mapped) -> None:
    posted_event = event(record())
    del posted_event["meta"]["endpoint"]
    assert "no endpoint" in refused(mapped()(posted_event))


def test_no_key_refuses_every_event(mapped, monkeypatch: pytest.MonkeyPatch) -> None:
    main = mapped()
    monkeypatch.delenv("NODEGUARD_BMC_TOKEN_KEY")
    assert "NODEGUARD_BMC_TOKEN_KEY (the key of the BMCs' tokens) is not set" in refused(main(event(record())))


def test_a_node_mapped_to_two_systems_is_unusable(mapped) -> None:
    other_system = {**W1, "system": "/redfish/v1/Systems/ng-worker9"}
    assert "node ng-worker1 is mapped to two systems" in refused(mapped([W1, other_system])(event(record())))


def test_the_same_entry_twice_is_one_mapping(mapped) -> None:
    (out,) = mapped([W1, dict(W1)])(event(record()))
    assert out["nodeguard_power_event"]["node"] == "ng-worker1"


def test_the_same_system_path_behind_two_bmcs_is_told_apart_by_endpoint_and_token(mapped) -> None:
    main = mapped()
    (out,) = main(event(record(origin="/redfish/v1/Systems/1"), node="ng-worker3"))
    assert out["nodeguard_power_event"]["node"] == "ng-worker3"


def test_the_payload_context_does_not_matter(mapped) -> None:
    """bmcweb sends no Context at the payload root; a Context naming another node changes nothing either."""
    main = mapped()
    for context in (None, "nodeguard:ng-worker2", ""):
        posted_event = event(record())
        if context is None:
            del posted_event["payload"]["Context"]
        else:
            posted_event["payload"]["Context"] = context
        (out,) = main(posted_event)
        assert out["nodeguard_power_event"]["node"] == "ng-worker1"


VENDORS = [
    # fixture, node, system, state, event_id, time (UTC)
    ("dmtf-resourceevent-1.3-powered-off.json", "ng-worker1", "/redfish/v1/Systems/ng-worker1", "Off", "4711", "2026-11-23T08:00:00.999999Z"),
    ("openbmc-dcpoweroff.json", "ng-worker1", "/redfish/v1/Systems/system", "Off", "6", "2026-11-23T08:00:00.999999Z"),
    ("hpe-ilo6-server-powered-off.json", "ng-worker1", "/redfish/v1/Systems/1", "Off", "2c7b0b4c-0f8d-4f5e-9b8d-7a0a3c2f1e10",
     "2026-11-23T08:00:00.999999Z"),
    ("dell-idrac9-sys1001.json", "ng-worker1", "/redfish/v1/Systems/System.Embedded.1", "Off", "2312", "2026-11-23T08:00:00.999999Z"),
]


@pytest.mark.parametrize("fixture, node, system, state, event_id, time", VENDORS)
def test_each_vendors_power_off_becomes_one_power_event(mapped, fixture, node, system, state, event_id, time) -> None:
    """No Context (OpenBMC), OriginOfCondition a string with a slash (iLO), a numeric EventId and -0800 (iDRAC)."""
    (out,) = mapped([{"node": node, "system": system}])(posted(fixture, node))
    assert out == {"nodeguard_power_event": {"node": node, "state": state, "time": time, "event_id": event_id, "source": "redfish-event"}}


@pytest.mark.parametrize("message_id, state", [
    ("ResourceEvent.1.3.0.ResourcePoweringOff", "PoweringOff"), ("ResourceEvent.1.4.1.ResourcePoweredOn", "On"),
    ("OpenBMC.0.1.DCPowerOn", "On"), ("OpenBMC.0.4.DCPowerOff", "Off"),
    ("iLOResourceEvents.1.0.ServerPoweredOn", "On"), ("iLOEvents.2.1.ServerPoweredOff", "Off"),
    ("IDRAC.2.9.SYS1000", "On"), ("IDRAC.2.8.SYS1003", "Reset"), ("IDRAC.2.8.SYS1001", "Off"),
    ("SYS1001", "Off"), ("IDRAC.SYS1001", "Off"), ("SYS1000", "On"),  # iDRAC9 before 6.x: bare ids (docs/power-events.md)
])
def test_the_vendors_power_messages_and_their_states(mapped, message_id: str, state: str) -> None:
    rec = record()
    rec["MessageId"] = message_id
    (out,) = mapped()(event(rec))
    assert out["nodeguard_power_event"]["state"] == state


@pytest.mark.parametrize("message_id", ["OpenBMC.0.1.PowerButtonPressed", "OpenBMC.1.0.DCPowerOff", "IDRAC.2.8.SYS1002",
                                        "IDRAC.2.8.SYS100", "iLOResourceEvents.1.0.ServerPoweredOffX", "TMP0120",
                                        "PWR1004", "DCPowerOff",
                                        "Dell.1.0.SYS1001", "ResourceEvent.1.3.0.ResourceChanged"])
def test_other_vendor_messages_are_refused(mapped, message_id: str) -> None:
    rec = record()
    rec["MessageId"] = message_id
    assert "is not a known power message" in refused(mapped()(event(rec)))


def test_a_submitted_test_event_never_starts_a_run(mapped) -> None:
    text = refused(mapped()(posted("submit-test-event.json")))
    assert "a test event from the BMC of node ng-worker1" in text and "never starts a run" in text


@pytest.mark.parametrize("where, value", [("EventType", "TestEvent"), ("Name", "Test Event"), ("Message", "test event"),
                                          ("MessageId", "OpenBMC.0.2.TestEventLog")])
def test_every_mark_of_a_test_event_refuses_it_whatever_its_message(mapped, where: str, value: str) -> None:
    rec = record()
    rec[where] = value
    assert "a test event" in refused(mapped()(event(rec)))


@pytest.mark.parametrize("event_id, shown", [(2312, "2312"), (0, "0")])
def test_a_numeric_event_id_is_accepted_as_its_digits(mapped, event_id, shown: str) -> None:
    (out,) = mapped()(event(record(event_id=event_id)))
    assert out["nodeguard_power_event"]["event_id"] == shown


@pytest.mark.parametrize("event_id", [True, -1, 1.5])
def test_other_event_id_types_are_refused(mapped, event_id) -> None:
    assert "EventId" in refused(mapped()(event(record(event_id=event_id))))


def test_the_vendor_fixtures_are_not_changed_by_the_filter(mapped) -> None:
    main = mapped([{"node": "ng-worker1", "system": "/redfish/v1/Systems/System.Embedded.1"}])
    posted_event = posted("dell-idrac9-sys1001.json")
    before = copy.deepcopy(posted_event)
    main(posted_event)
    assert posted_event == before


@pytest.mark.parametrize("origin", [{"@odata.id": "/redfish/v1/Systems/ng-worker2"}, {"@odata.id": "/redfish/v1/Chassis/ng-worker1"},
                                    {"@odata.id": "/redfish/v1/Systems/ng-worker1/Bios"}, "/redfish/v1/Systems/ng-worker2", {}, None, 7])
def test_origin_of_condition_must_be_the_mapped_system(mapped, origin) -> None:
    rec = record()
    rec["OriginOfCondition"] = origin
    assert "OriginOfCondition" in refused(mapped()(event(rec)))


def test_a_trailing_slash_on_the_origin_is_the_same_system(mapped) -> None:
    (out,) = mapped()(event(record(origin="/redfish/v1/Systems/ng-worker1/")))
    assert out["nodeguard_power_event"]["node"] == "ng-worker1"


@pytest.mark.parametrize("payload", [
    {"Context": "nodeguard:ng-worker1"},
    {"Context": "nodeguard:ng-worker1", "Events": []},
    {"Context": "nodeguard:ng-worker1", "Events": {"0": record()}},
    ["not", "an", "object"],
    "ResourcePoweredOff",
    None,
])
def test_a_payload_that_is_not_a_redfish_event_is_refused(mapped, payload) -> None:
    posted_event = event(record())
    posted_event["payload"] = payload
    assert "not a Redfish Event" in refused(mapped()(posted_event))


@pytest.mark.parametrize("field, value", [("EventId", None), ("EventId", ""), ("EventId", "a b"), ("EventId", "x" * 65), ("EventId", 1.5),
                                          ("MessageId", 5), ("MessageId", None)])
def test_malformed_fields_are_refused(mapped, field: str, value) -> None:
    rec = record()
    rec[field] = value
    assert field in refused(mapped()(event(rec)))


@pytest.mark.parametrize(("where", "field", "value"), [
    ("payload", "Context", 7), ("payload", "Context", {"node": "ng-worker1"}), ("payload", "Context", None), ("payload", "Name", ["x"]),
    ("record", "Context", 7), ("record", "Context", {"@odata.id": "x"}), ("record", "Message", 1), ("record", "Severity", True),
    ("record", "MessageArgs", "ng-worker1"), ("record", "MessageArgs", [1]),
])
def test_a_non_string_where_the_event_schema_has_a_string_refuses_the_whole_post(mapped, where: str, field: str, value) -> None:
    """As docs/eda.md says: the Event schema's string properties, also those the filter does not use (Context)."""
    posted_event = event(record(), record(event_id="ev-2"))
    (posted_event["payload"] if where == "payload" else posted_event["payload"]["Events"][1])[field] = value
    text = refused(mapped()(posted_event))
    assert f"{field} must be " in text


def test_message_args_null_is_accepted_as_dell_sends_it(mapped) -> None:
    """iDRAC (PowerEdge R470, dell/iDRAC-Redfish-Scripting issue 353) sends "MessageArgs": null in an Alert."""
    rec = record()
    rec["MessageArgs"] = None
    (out,) = mapped()(event(rec))
    assert out["nodeguard_power_event"]["state"] == "Off"


def test_a_record_that_is_not_an_object_is_refused_and_others_still_pass(mapped) -> None:
    out = mapped()(event("ResourcePoweredOff", record()))
    assert "not an object" in out[0]["nodeguard_refused"]
    assert out[1]["nodeguard_power_event"]["node"] == "ng-worker1"


def test_too_many_records_are_refused_whole(mapped) -> None:
    assert "more than 64" in refused(mapped()(event(*[record(event_id=f"e{n}") for n in range(65)])))


INJECTIONS = [
    ("Context", "nodeguard:{{ lookup('pipe', 'id') }}"),
    ("Message", "{{ lookup('pipe', 'touch /tmp/x') }}"),
    ("EventId", "{% if true %}x{% endif %}"),
    ("MessageArgs", ["{# c #}"]),
    ("Oem", {"{{ 7*7 }}": 1}),
]


@pytest.mark.parametrize("field, value", INJECTIONS)
def test_template_syntax_anywhere_refuses_the_whole_post(mapped, field: str, value) -> None:
    rec = record()
    payload_event = event(rec, record(event_id="ev-2"))
    if field == "Context":
        payload_event["payload"]["Context"] = value
    else:
        rec[field] = value
    text = refused(mapped()(payload_event))
    assert "template syntax in " in text and "\\x7b" in text  # the value shown escaped


def test_a_vendor_oem_section_is_not_junk(mapped) -> None:
    rec = record()
    rec["Oem"] = {"Dell": {"@odata.type": "#DellEvent.v1_0_0.DellEvent", "ServerHostname": "w1", "Extra": {"Ids": ["a"]}}}
    (out,) = mapped()(event(rec))
    assert out["nodeguard_power_event"]["state"] == "Off"


def test_closing_braces_alone_are_not_template_syntax(mapped) -> None:
    rec = record()
    rec["Message"] = "powered off }} %} #}"
    (out,) = mapped()(event(rec))
    assert out["nodeguard_power_event"]["node"] == "ng-worker1"


def test_nesting_deeper_than_an_event_is_refused(mapped) -> None:
    rec = record()
    deep: dict = {}
    rec["Oem"] = {"a": {"b": {"c": {"d": deep}}}}
    deep["e"] = ["f"]
    assert "nested deeper than a Redfish Event" in refused(mapped()(event(rec)))


@pytest.mark.parametrize("entries, problem", [
    ("not a list", "has no list nodeguard_power_event_bmcs"),
    ([{"system": "/redfish/v1/Systems/1"}], "exactly the keys node, system"),
    ([{**W1, "context": "nodeguard:ng-worker1"}], "exactly the keys node, system"),
    ([{**W1, "extra": 1}], "exactly the keys node, system"),
    ([{**W1, "node": "{{ lookup('pipe', 'id') }}"}], "is not a Kubernetes node name"),
    ([{**W1, "node": 123}], "must be a string"),
    ([{**W1, "system": "/redfish/v1/Chassis/1"}], "is not a path /redfish/v1/Systems/"),
])
def test_a_malformed_mapping_refuses_every_event(mapped, entries, problem: str) -> None:
    text = refused(mapped(entries)(event(record())))
    assert "the BMC mapping is unusable" in text and problem in text


def test_no_vars_file_refuses_every_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODEGUARD_POWER_EVENT_VARS", raising=False)
    main = runpy.run_path(str(FILTER))["main"]
    assert "NODEGUARD_POWER_EVENT_VARS" in refused(main(event(record())))
    monkeypatch.setenv("NODEGUARD_POWER_EVENT_VARS", "/nonexistent/vars.yml")
    main = runpy.run_path(str(FILTER))["main"]
    assert "cannot read nodeguard_power_event_bmcs from '/nonexistent/vars.yml'" in refused(main(event(record())))


def test_the_shipped_vars_file_maps_nothing_and_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEGUARD_POWER_EVENT_VARS", str(REPO / "extensions" / "eda" / "vars" / "power-events.yml"))
    monkeypatch.setenv("NODEGUARD_BMC_TOKEN_KEY", KEY)
    main = runpy.run_path(str(FILTER))["main"]
    assert "does not end with a mapped node (unknown BMC)" in refused(main(event(record())))
