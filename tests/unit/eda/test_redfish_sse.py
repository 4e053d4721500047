"""The event source nodeguard.failover.redfish_sse against a fake BMC: the stream format, the client-side filter,
resume with Last-Event-ID, reconnect with backoff, the fall-back to polling when the stream is down or silent,
no secret in a log, and the argument schema (TLS verified, https only)."""

from __future__ import annotations

import io
import logging
import runpy
import threading
from pathlib import Path

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.power import base

REPO = Path(__file__).resolve().parents[3]
SOURCE = REPO / "extensions" / "eda" / "plugins" / "event_source" / "redfish_sse.py"
PASSWORD = "pw-never-shown-4711"
W1 = {"type": "redfish", "address": "https://bmc.example", "system_id": "w1", "username": "admin", "password": PASSWORD}
W2 = {**W1, "system_id": "w2"}
SETTINGS = {"silence_seconds": 30, "poll_interval": 5, "reconnect_max": 8, "read_interval": 120}


@pytest.fixture(scope="module")
def source() -> dict:
    return runpy.run_path(str(SOURCE))


@pytest.fixture(scope="module")
def api(source) -> dict:
    return source["_import_collection"]()


def event(number: int, system: str, message_id: str, origin_as_string: bool = False, name: str = "Power event") -> bytes:
    import json

    origin = f"/redfish/v1/Systems/{system}"
    record = {"EventId": str(number), "MessageId": message_id, "OriginOfCondition": origin if origin_as_string else {"@odata.id": origin}}
    return f"id: {number}\ndata: {json.dumps({'Name': name, 'Events': [record]})}\n\n".encode()


class Reader:
    """A PowerState reader with a scripted answer ("on", "off", or an exception)."""

    def __init__(self, answer="on", then=None):
        self.answer = answer
        self.then = then  # the answer from the second reading on
        self.reads = 0

    def status(self):
        self.reads += 1
        if self.reads == 2 and self.then:
            self.answer = self.then
        if isinstance(self.answer, Exception):
            raise self.answer
        return base.PowerReading(self.answer, "redfish", f"PowerState={self.answer}")


class Answer(io.BytesIO):
    """A stream answer: its lines, then the end (b"") or a timeout (the silence)."""

    def __init__(self, data: bytes, then_silent: bool = False):
        super().__init__(data)
        self.then_silent = then_silent
        self.on_end = None  # set on the last answer: the test ends when it has been read

    def readline(self, limit=-1):
        return self._ended(super().readline(limit))

    def read1(self, size=-1):
        return self._ended(super().read1(size))

    def _ended(self, data: bytes) -> bytes:
        if not data and self.on_end:
            self.on_end()
        if not data and self.then_silent:
            raise TimeoutError("The read operation timed out")
        return data


class Trickle(Answer):
    """A stream answer whose bytes arrive ``step`` seconds apart on the fake monotonic clock ``now`` (each read gets
    one byte), the way a stalled or hostile BMC can keep every single recv under the socket timeout."""

    def __init__(self, data: bytes, now: list, step: float):
        super().__init__(data)
        self.now, self.step = now, step

    def read1(self, size=-1):
        self.now[0] += self.step
        return self._ended(super().read(1))

    def readline(self, limit=-1):
        line = super().readline(limit)
        self.now[0] += self.step * len(line)
        return self._ended(line)


class FakeSession:
    """RedfishSession's surface: fetch the EventService, open the stream; scripted per connection."""

    address = "https://bmc.example"
    secrets = (PASSWORD,)

    def __init__(self, answers: list, stop: threading.Event, service: dict | None = None, systems: tuple = ("w1", "w2")):
        self.answers = list(answers)
        self.stop = stop
        self.service = {"ServerSentEventUri": "/redfish/v1/EventService/SSE"} if service is None else service
        self.systems = {"Members": [{"@odata.id": f"/redfish/v1/Systems/{system}"} for system in systems]}
        self.headers: list[dict] = []

    def fetch(self, method, path):
        assert method == "GET" and path in ("/redfish/v1/EventService", "/redfish/v1/Systems")
        return self.service if path == "/redfish/v1/EventService" else self.systems

    def open_stream(self, path, headers, timeout):
        assert path == "/redfish/v1/EventService/SSE" and timeout == SETTINGS["silence_seconds"]
        self.headers.append(dict(headers))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            if not self.answers:
                self.stop.set()
            raise answer
        if not self.answers:
            answer.on_end = self.stop.set
        return answer


def make_stream(source, api, session, readers: dict, stop, now: list | None = None):
    nodes = [source["Node"](name, f"/redfish/v1/Systems/{name}", reader) for name, reader in readers.items()]
    emitted, slept = [], []
    now = [0.0] if now is None else now

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    stream = source["Stream"](api, session, nodes, SETTINGS, emitted.append, sleep=sleep, clock=lambda: 1_800_000_000.0, monotonic=lambda: now[0])
    return stream, emitted, slept


def states(emitted) -> list[tuple]:
    return [(e["nodeguard_power_event"]["node"], e["nodeguard_power_event"]["state"], e["nodeguard_power_event"]["source"]) for e in emitted]


def test_the_stream_format(source) -> None:
    parser = source["SseParser"]()
    lines = [": keep-alive", "", "id: 7", "event: message", 'data: {"a":', "data: 1}", "", "retry: 10", "data:x", ""]
    assert [parser.feed(line + "\n") for line in lines] == [None, None, None, None, None, None, ("7", '{"a":\n1}'), None, None, ("7", "x")]


def test_only_known_power_messages_of_mapped_systems_count(source, api) -> None:
    systems = {"/redfish/v1/Systems/w1": "w1"}

    def changes(payload, sole=None):
        return source["sort_records"](payload, systems, sole, api["names"].shown).kept

    def payload(message_id, origin="/redfish/v1/Systems/w1", name="Power event"):
        return {"Name": name, "Events": [{"MessageId": message_id, "OriginOfCondition": {"@odata.id": origin}}]}

    assert changes(payload("ResourceEvent.1.3.ResourcePoweredOff")) == [("w1", "Off")]
    assert changes({"Events": [{"MessageId": "OpenBMC.0.4.DCPowerOff"}]}, sole="w1") == [("w1", "Off")]  # bmcweb: no origin
    assert changes(payload("iLOResourceEvents.2.1.ServerPoweredOn")) == [("w1", "On")]
    assert changes({"Events": [{"MessageId": "iLOResourceEvents.2.1.ServerPoweredOff", "OriginOfCondition": "/redfish/v1/Systems/w1/"}]}) == [("w1", "Off")]
    assert changes({"Events": [{"MessageId": "SYS1001"}]}, sole="w1") == [("w1", "Off")]  # iDRAC9 before 6.x, one system
    assert changes({"Events": [{"MessageId": "OpenBMC.0.1.DCPowerOff"}]}) == []  # no origin, and not the only system
    assert changes(payload("ResourceEvent.1.3.ResourcePoweringOff"), sole="w1") == []  # not a power state
    assert changes(payload("ResourceEvent.1.3.ResourcePoweredOff", "/redfish/v1/Systems/w9"), sole="w1") == []  # another system
    assert changes(payload("ResourceEvent.1.3.ResourcePoweredOff", "/redfish/v1/Chassis/w1"), sole="w1") == []
    assert changes(payload("ResourceEvent.1.3.ResourcePoweredOff", name="Test Event"), sole="w1") == []
    assert changes(payload("Base.1.0.SubmitTestEvent"), sole="w1") == []
    assert changes({"Events": "x"}) == []
    many = source["sort_records"]({"Events": [{}] * 65}, systems, "w1", api["names"].shown)
    assert many.kept == [] and "65 records, more than 64" in many.unknown[0]  # a power record past 64 leads to a reading


def test_events_resume_with_last_event_id_after_the_bmc_ends_the_stream(source, api) -> None:
    stop = threading.Event()
    session = FakeSession(
        [
            Answer(event(1, "w1", "ResourceEvent.1.3.ResourcePoweredOff") + event(2, "w2", "iLOResourceEvents.1.0.ServerPoweredOff", origin_as_string=True)),
            Answer(event(3, "w1", "ResourceEvent.1.3.ResourcePoweredOn")),
        ],
        stop,
    )
    stream, emitted, _slept = make_stream(source, api, session, {"w1": Reader("on", then="off"), "w2": Reader("on", then="off")}, stop)
    stream.run(stop)
    assert session.headers == [{}, {"Last-Event-ID": "2"}]
    assert states(emitted) == [("w1", "Off", "sse"), ("w2", "Off", "sse"), ("w1", "On", "sse")]
    assert all("{{" not in repr(e) for e in emitted)


def test_a_change_while_the_stream_was_down_is_read_when_it_comes_back(source, api) -> None:
    stop = threading.Event()
    w1 = Reader("on")
    session = FakeSession([Answer(b": keep-alive\n\n"), base.PowerError("redfish https://bmc.example unreachable: refused"), Answer(b"")], stop)
    stream, emitted, _slept = make_stream(source, api, session, {"w1": w1}, stop)
    original = stream.poll_for

    def poll_for(seconds, stop_event):
        w1.answer = "off"  # the node lost power while the BMC restarted
        original(seconds, stop_event)

    stream.poll_for = poll_for
    stream.run(stop)
    assert states(emitted) == [("w1", "Off", "poll")]  # seen by the fall-back's reading, once
    assert session.headers == [{}, {}, {}]


def test_silence_falls_back_to_polling_and_says_so(source, api, caplog) -> None:
    stop = threading.Event()
    w1 = Reader("on")
    session = FakeSession([Answer(b": nodeguard\n\n", then_silent=True), Answer(b"", then_silent=True), Answer(b"")], stop)
    stream, _emitted, _slept = make_stream(source, api, session, {"w1": w1}, stop)
    with caplog.at_level(logging.INFO, logger="nodeguard.failover.redfish_sse"):
        stream.run(stop)
    assert "no event or keep-alive for 30 s; falling back to polling every 5 s, reconnecting in 1 s" in caplog.text
    assert caplog.text.count("WARNING") == 1  # said once; the same reason again is info
    assert "event stream open again; polling stops" in caplog.text
    assert w1.reads >= 3


def test_no_server_sent_event_uri_polls_and_backs_off_to_the_limit(source, api, caplog) -> None:
    stop = threading.Event()
    w1 = Reader("on")
    session = FakeSession([], stop, service={})
    stream, _emitted, _slept = make_stream(source, api, session, {"w1": w1}, stop)
    original = stream.poll_for
    rounds = []

    def poll_for(seconds, stop_event):
        rounds.append(seconds)
        if len(rounds) == 6:
            stop_event.set()
        original(seconds, stop_event)

    stream.poll_for = poll_for
    with caplog.at_level(logging.INFO, logger="nodeguard.failover.redfish_sse"):
        stream.run(stop)
    assert rounds == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert "the EventService has no ServerSentEventUri); falling back to polling every 5 s, reconnecting in 1 s" in caplog.text
    assert caplog.text.count("WARNING") == 1


def test_no_secret_in_a_log(source, api, caplog) -> None:
    stop = threading.Event()
    failing = Reader(base.PowerError(f"redfish https://bmc.example unreachable: user admin:{PASSWORD} refused"))
    session = FakeSession([base.PowerError(f"redfish https://bmc.example: HTTP 500 {PASSWORD}"), Answer(b"")], stop)
    stream, _emitted, _slept = make_stream(source, api, session, {"w1": failing}, stop)
    with caplog.at_level(logging.DEBUG, logger="nodeguard.failover.redfish_sse"):
        stream.run(stop)
    assert "power not readable" in caplog.text and "HTTP 500" in caplog.text
    assert PASSWORD not in caplog.text


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ({"bmcs": []}, "bmcs"),
        ({"bmcs": [{"node": "w1", "power": {**W1, "validate_certs": False}}]}, "bmcs/0/power/validate_certs"),
        ({"bmcs": [{"node": "w1", "power": {**W1, "address": "http://bmc.example"}}]}, "bmcs/0/power/address"),
        ({"bmcs": [{"node": "w1", "power": {**W1, "type": "ipmi"}}]}, "bmcs/0/power/type"),
        ({"bmcs": [{"node": "w1", "power": {k: v for k, v in W1.items() if k != "system_id"}}]}, "bmcs/0/power"),
        ({"bmcs": [{"node": "w1", "power": W1}], "silence_seconds": 1}, "silence_seconds"),
        ({"bmcs": [{"node": "w1", "power": W1}], "webhook": True}, "arguments"),
    ],
)
def test_the_arguments_are_checked_against_the_schema(source, api, args: dict, where: str) -> None:
    with pytest.raises(ValueError, match=f"redfish_sse: {where}: does not match") as raised:
        source["checked_config"](args, api)
    assert PASSWORD not in str(raised.value)


def test_nodes_of_one_bmc_share_a_stream_and_names_are_checked(source, api) -> None:
    streams, settings = source["checked_config"]({"bmcs": [{"node": "w1", "power": W1}, {"node": "w2", "power": W2}]}, api)
    assert settings == {"silence_seconds": 60, "poll_interval": 5, "reconnect_max": 60, "read_interval": 300}
    ((_session, nodes),) = streams
    assert [n.system_path for n in nodes] == ["/redfish/v1/Systems/w1", "/redfish/v1/Systems/w2"]
    with pytest.raises(ValueError, match="same Redfish system"):
        source["checked_config"]({"bmcs": [{"node": "w1", "power": W1}, {"node": "w3", "power": W1}]}, api)
    with pytest.raises(ValueError, match="bmcs entry 1"):
        source["checked_config"]({"bmcs": [{"node": "{{ x }}", "power": W1}]}, api)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(source["ARGS_SCHEMA"])


def test_the_stream_is_opened_only_on_the_configured_origin(api) -> None:
    """A ServerSentEventUri on another origin is refused before any connection: the credentials stay with the BMC."""
    session = api["redfish"].RedfishSession(W1)
    for elsewhere in ("https://evil.example/redfish/v1/EventService/SSE", "//evil.example/sse", "http://bmc.example/sse"):
        with pytest.raises(base.PowerError, match="credentials are sent only to the configured origin"):
            session.open_stream(elsewhere, {}, 5)


def test_the_source_and_the_webhook_filter_read_one_table_of_power_messages(source) -> None:
    """One declaration: the SSE source knows exactly the webhook filter's vendor messages (plus nothing of its own),
    including the registry prefix and major version: a bare key, or one of an unknown major version, is no power event."""
    from ansible_collections.nodeguard.failover.plugins.module_utils.power import redfish_messages

    for prefix, messages in redfish_messages.POWER_MESSAGES.items():
        major = redfish_messages.MAJOR_VERSIONS[prefix] or "1"
        for key, state in messages.items():
            expected = state if state in ("On", "Off") else None
            assert source["message_state"](f"{prefix}.{major}.0.{key}") == expected
    assert source["message_state"]("DCPowerOff") is None
    assert source["message_state"]("ResourceEvent.2.0.ResourcePoweredOff") is None


# --- bmcweb's own power records (issue 38 item 1) ---------------------------------------------------------------


def bmcweb_event(number: int, message_id: str = "OpenBMC.0.1.DCPowerOff") -> bytes:
    """An Event as bmcweb streams it (written from the OpenBMC message registry OpenBMC.0.1.0 and bmcweb's event log
    records: "Name" "Event Log", a Message record without OriginOfCondition; a stream has no subscription Context)."""
    import json

    record = {
        "@odata.type": "#Message.v1_1_1.Message",
        "EventId": str(number),
        "EventTimestamp": "2026-11-23T08:00:00+00:00",
        "EventType": "Event",
        "Message": "Host system DC power is off",
        "MessageArgs": [],
        "MessageId": message_id,
        "MessageSeverity": "OK",
    }
    payload = {"@odata.type": "#Event.v1_4_0.Event", "Id": str(number), "Name": "Event Log", "Events": [record]}
    return f"id: {number}\ndata: {json.dumps(payload)}\n\n".encode()


def test_bmcwebs_power_off_without_origin_is_kept_when_the_bmc_has_only_the_mapped_system(source, api) -> None:
    stop = threading.Event()
    session = FakeSession([Answer(bmcweb_event(1))], stop, systems=("w1",))
    stream, emitted, _slept = make_stream(source, api, session, {"w1": Reader("on")}, stop)
    stream.run(stop)
    assert states(emitted) == [("w1", "Off", "sse")]


def test_a_power_message_without_origin_on_a_bmc_of_several_systems_leads_to_a_reading(source, api, caplog) -> None:
    stop = threading.Event()
    w1, w2 = Reader("on", then="off"), Reader("on")
    session = FakeSession([Answer(bmcweb_event(1))], stop)
    stream, emitted, _slept = make_stream(source, api, session, {"w1": w1, "w2": w2}, stop)
    with caplog.at_level(logging.INFO, logger="nodeguard.failover.redfish_sse"):
        stream.run(stop)
    assert states(emitted) == [("w1", "Off", "poll")]  # the reading right after the record
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "OpenBMC.0.1.DCPowerOff" in warning.getMessage() and "no OriginOfCondition" in warning.getMessage()
    assert "reading PowerState" in warning.getMessage()


def test_one_mapped_node_on_a_bmc_with_more_systems_is_no_proof_of_the_origin(source, api) -> None:
    stop = threading.Event()
    w1 = Reader("on", then="on")
    session = FakeSession([Answer(bmcweb_event(1))], stop, systems=("w1", "w9"))
    stream, emitted, _slept = make_stream(source, api, session, {"w1": w1}, stop)
    stream.run(stop)
    assert states(emitted) == []  # read On again: the Off was another system's
    assert w1.reads == 2  # on connecting, and for the record it could not attribute


def test_a_dropped_power_message_is_a_warning_with_its_reason(source, api, caplog) -> None:
    stop = threading.Event()
    session = FakeSession([Answer(event(1, "w9", "ResourceEvent.1.3.ResourcePoweredOff"))], stop)
    stream, emitted, _slept = make_stream(source, api, session, {"w1": Reader("on"), "w2": Reader("on")}, stop)
    with caplog.at_level(logging.INFO, logger="nodeguard.failover.redfish_sse"):
        stream.run(stop)
    assert emitted == []
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "/redfish/v1/Systems/w9" in warning.getMessage() and "no node is mapped" in warning.getMessage()


# --- state across reconnects (issue 38 item 2) --------------------------------------------------------------------


def test_a_fragment_left_by_a_broken_connection_is_not_glued_to_the_next_event(source, api) -> None:
    stop = threading.Event()
    session = FakeSession(
        [Answer(event(1, "w1", "ResourceEvent.1.3.ResourcePoweredOn") + b'id: 2\ndata: {"Events": [{"Mess'), Answer(bmcweb_event(3))], stop, systems=("w1",)
    )
    stream, emitted, _slept = make_stream(source, api, session, {"w1": Reader("on")}, stop)
    stream.run(stop)
    assert states(emitted) == [("w1", "Off", "sse")]
    assert session.headers == [{}, {"Last-Event-ID": "1"}]  # event 2 was never dispatched


def test_an_event_that_is_not_json_leads_to_a_reading(source, api, caplog) -> None:
    stop = threading.Event()
    session = FakeSession([Answer(b"id: 4\ndata: {not json\n\n")], stop)
    stream, emitted, _slept = make_stream(source, api, session, {"w1": Reader("on", then="off")}, stop)
    with caplog.at_level(logging.INFO, logger="nodeguard.failover.redfish_sse"):
        stream.run(stop)
    assert states(emitted) == [("w1", "Off", "poll")]
    assert "event '4' is not a Redfish Event in JSON; reading PowerState" in caplog.text


# --- stream bounds (issue 38 item 3) ---------------------------------------------------------------------------------


def test_a_trickling_stream_reaches_the_silence_deadline(source, api, caplog) -> None:
    """Every byte arrives within the socket timeout, but no line ends within silence_seconds (30 s)."""
    stop = threading.Event()
    now = [0.0]
    session = FakeSession([Trickle(b": " + b"x" * 40 + b"\n\n", now, step=1.0), Answer(b"")], stop)
    stream, _emitted, _slept = make_stream(source, api, session, {"w1": Reader("on")}, stop, now)
    with caplog.at_level(logging.INFO, logger="nodeguard.failover.redfish_sse"):
        stream.run(stop)
    assert "no event or keep-alive for 30 s; falling back to polling" in caplog.text


def test_empty_data_lines_count_toward_the_event_bound(source) -> None:
    parser = source["SseParser"]()
    with pytest.raises(ValueError, match="an event larger than"):
        for _line in range(source["MAX_EVENT"] + 1):
            parser.feed("data:\n")


def test_a_stream_that_ends_at_once_backs_off_and_only_an_event_resets_it(source, api) -> None:
    stop = threading.Event()
    w1 = Reader("on")
    session = FakeSession([Answer(b""), Answer(b""), Answer(b""), Answer(event(1, "w1", "ResourceEvent.1.3.ResourcePoweredOn")), Answer(b"")], stop)
    stream, _emitted, _slept = make_stream(source, api, session, {"w1": w1}, stop)
    original, rounds = stream.poll_for, []

    def poll_for(seconds, stop_event):
        rounds.append(seconds)
        original(seconds, stop_event)

    stream.poll_for = poll_for
    stream.run(stop)
    assert rounds == [1.0, 2.0, 4.0, 1.0]


def test_each_node_is_read_periodically_while_its_stream_looks_alive(source, api) -> None:
    """A stream that sends keep-alives but no power event: the reading every read_interval (120 s) sees the Off."""
    stop = threading.Event()
    now = [0.0]
    w1 = Reader("on", then="off")
    keepalives = Trickle(b": keep-alive\n\n" * 30, now, step=1.0)  # 14 bytes each: 420 s of keep-alives
    session = FakeSession([keepalives], stop)
    stream, emitted, _slept = make_stream(source, api, session, {"w1": w1}, stop, now)
    stream.run(stop)
    assert states(emitted) == [("w1", "Off", "poll")]
    assert w1.reads == 1 + 3  # on connecting, then at 120, 240 and 360 s
