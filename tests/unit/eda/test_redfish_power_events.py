"""The event filter nodeguard.failover.redfish_power_events: which Redfish Events become power events, and which are refused.

The BMC is identified by the subscription context and the record's OriginOfCondition, both mapped to one node in
the vars file. Every emitted value is checked or made by the filter (ansible-rulebook copies event fields into
extra vars, which Ansible evaluates as templates); everything else becomes an inert refusal.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
FILTER = REPO / "extensions" / "eda" / "plugins" / "event_filter" / "redfish_power_events.py"
W1 = {"context": "nodeguard:ng-worker1", "system": "/redfish/v1/Systems/ng-worker1", "node": "ng-worker1"}
W2 = {"context": "nodeguard:ng-worker2", "system": "/redfish/v1/Systems/1", "node": "ng-worker2"}
W3 = {"context": "nodeguard:ng-worker3", "system": "/redfish/v1/Systems/1", "node": "ng-worker3"}  # same system path, another BMC


def write_mapping(path: Path, entries) -> Path:
    path.write_text(yaml.safe_dump({"nodeguard_power_event_bmcs": entries, "nodeguard_allow_nodes": []}))
    return path


@pytest.fixture
def mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """main() of a fresh copy of the filter (as ansible-rulebook loads it: runpy), reading ``entries`` as the mapping."""

    def load(entries=(W1, W2, W3)):
        monkeypatch.setenv("NODEGUARD_POWER_EVENT_VARS", str(write_mapping(tmp_path / "vars.yml", entries if isinstance(entries, str) else list(entries))))
        return runpy.run_path(str(FILTER))["main"]

    return load


def record(message="ResourcePoweredOff", origin="/redfish/v1/Systems/ng-worker1", timestamp="2026-11-23T08:00:00Z", event_id="ev-1") -> dict:
    return {
        "EventId": event_id,
        "EventTimestamp": timestamp,
        "MessageSeverity": "Warning",
        "Message": "The resource has been powered off.",
        "MessageId": f"ResourceEvent.1.0.{message}",
        "MessageArgs": [],
        "OriginOfCondition": {"@odata.id": origin},
    }


def event(*records, context="nodeguard:ng-worker1") -> dict:
    payload = {"@odata.type": "#Event.v1_7_0.Event", "Id": "1", "Name": "Power event", "Context": context, "Events": list(records)}
    return {"payload": payload, "meta": {"endpoint": "redfish", "headers": {"Authorization": "Bearer secret-token-7"}}}


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
    rec["MessageId"] = "ResourceEvent.1.3.1.ResourcePoweredOff"
    (out,) = mapped()(event(rec))
    assert out["nodeguard_power_event"]["state"] == "Off"


@pytest.mark.parametrize("message_id", ["ResourceEvent.1.0.ResourceChanged", "Base.1.0.ResourcePoweredOff", "ResourceEvent.2.0.ResourcePoweredOff",
                                        "ResourcePoweredOff", "ResourceEvent.1.0.ResourcePoweredOffX", ""])
def test_other_messages_are_refused(mapped, message_id: str) -> None:
    rec = record()
    rec["MessageId"] = message_id
    assert "is not a ResourceEvent power message" in refused(mapped()(event(rec)))


def test_each_record_of_a_post_is_one_event(mapped) -> None:
    out = mapped()(event(record(message="ResourcePoweringOff", event_id="a"), record(event_id="b")))
    assert [(e["nodeguard_power_event"]["state"], e["nodeguard_power_event"]["event_id"]) for e in out] == [("PoweringOff", "a"), ("Off", "b")]


@pytest.mark.parametrize("timestamp, normalised", [
    ("2026-11-23T09:00:00+01:00", "2026-11-23T08:00:00Z"),
    ("2026-11-23T02:30:00-05:30", "2026-11-23T08:00:00Z"),
    ("2026-11-23T08:00:00.250Z", "2026-11-23T08:00:00.25Z"),
    ("2026-11-23T08:00:00.000Z", "2026-11-23T08:00:00Z"),
    ("2026-11-23t08:00:00.123456789z", "2026-11-23T08:00:00.123456Z"),
    ("2026-12-31T23:59:60Z", "2026-12-31T23:59:59Z"),
    ("2027-01-01T00:30:00+01:00", "2026-12-31T23:30:00Z"),
])
def test_the_time_is_normalised_to_rfc3339_utc(mapped, timestamp: str, normalised: str) -> None:
    (out,) = mapped()(event(record(timestamp=timestamp)))
    assert out["nodeguard_power_event"]["time"] == normalised


@pytest.mark.parametrize("timestamp", ["2026-11-23 08:00:00Z", "2026-11-23T08:00:00", "2026-02-30T08:00:00Z", "2026-11-23T24:00:00Z",
                                       "2026-11-23T08:00:61Z", "2026-11-23T08:00:00+25:00", "now", 1763884800, None, ["2026-11-23T08:00:00Z"]])
def test_a_time_that_is_not_rfc3339_is_refused(mapped, timestamp) -> None:
    assert "EventTimestamp" in refused(mapped()(event(record(timestamp=timestamp))))


def test_an_unknown_context_is_refused(mapped) -> None:
    text = refused(mapped()(event(record(), context="nodeguard:ng-spare")))
    assert "context 'nodeguard:ng-spare' is not mapped to a node (unknown BMC)" in text


def test_a_context_mapped_to_two_nodes_is_refused(mapped) -> None:
    twice = {**W1, "node": "ng-worker9"}
    text = refused(mapped([W1, twice, W2])(event(record())))
    assert "mapped more than once (ng-worker1, ng-worker9)" in text


def test_a_context_mapped_to_two_systems_is_refused(mapped) -> None:
    other_system = {**W1, "system": "/redfish/v1/Systems/ng-worker9"}
    assert "mapped more than once" in refused(mapped([W1, other_system])(event(record())))


def test_the_same_entry_twice_is_one_mapping(mapped) -> None:
    (out,) = mapped([W1, dict(W1)])(event(record()))
    assert out["nodeguard_power_event"]["node"] == "ng-worker1"


def test_the_same_system_path_behind_two_bmcs_is_told_apart_by_context(mapped) -> None:
    main = mapped()
    (out,) = main(event(record(origin="/redfish/v1/Systems/1"), context="nodeguard:ng-worker3"))
    assert out["nodeguard_power_event"]["node"] == "ng-worker3"


@pytest.mark.parametrize("origin", [{"@odata.id": "/redfish/v1/Systems/ng-worker2"}, {"@odata.id": "/redfish/v1/Chassis/ng-worker1"},
                                    {"@odata.id": "/redfish/v1/Systems/ng-worker1/Bios"}, "/redfish/v1/Systems/ng-worker1", {}, None])
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
    assert "not a Redfish Event" in refused(mapped()({"payload": payload, "meta": {}}))


@pytest.mark.parametrize("context", [None, 7, ["nodeguard:ng-worker1"], {"a": "b"}])
def test_a_context_that_is_not_a_string_is_refused(mapped, context) -> None:
    assert "Context must be a string" in refused(mapped()(event(record(), context=context)))


@pytest.mark.parametrize("field, value", [("EventId", None), ("EventId", ""), ("EventId", "a b"), ("EventId", "x" * 65), ("EventId", 12),
                                          ("MessageId", 5), ("MessageId", None)])
def test_malformed_fields_are_refused(mapped, field: str, value) -> None:
    rec = record()
    rec[field] = value
    assert field in refused(mapped()(event(rec)))


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
    ([{"context": "c", "system": "/redfish/v1/Systems/1"}], "exactly the keys context, system, node"),
    ([{**W1, "extra": 1}], "exactly the keys context, system, node"),
    ([{**W1, "node": "{{ lookup('pipe', 'id') }}"}], "is not a Kubernetes node name"),
    ([{**W1, "node": 123}], "must be a string"),
    ([{**W1, "system": "/redfish/v1/Chassis/1"}], "is not a path /redfish/v1/Systems/"),
    ([{**W1, "context": ""}], "context must be a string of 1 to 256"),
    ([{**W1, "context": "x" * 257}], "context must be a string of 1 to 256"),
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
    main = runpy.run_path(str(FILTER))["main"]
    assert "is not mapped to a node (unknown BMC)" in refused(main(event(record())))
