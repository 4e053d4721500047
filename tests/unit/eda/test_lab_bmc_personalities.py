"""The lab BMC's event personalities (lab/bmc/redfish_events.py) send each vendor's shape, and the shipped filter
turns each one's power-off into the same checked power event: the lab test runs once per personality on this.

The comparison with the vendor fixtures (fixtures/redfish_events, written from the vendors' registries) keeps the
emulator honest: the same keys at the root and in the record, the same MessageId registry.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import importlib.util
import json
import runpy
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
FILTER = REPO / "extensions" / "eda" / "plugins" / "event_filter" / "redfish_power_events.py"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redfish_events"
KEY = "lab-key-3f"
WHEN = datetime.datetime(2026, 11, 23, 8, 0, 0, 250000, tzinfo=datetime.UTC)
FIXTURE_OF = {"dmtf": "dmtf-resourceevent-1.3-powered-off.json", "openbmc": "openbmc-dcpoweroff.json",
              "hpe": "hpe-ilo6-server-powered-off.json", "dell": "dell-idrac9-sys1001.json"}


def load_lab_events():
    spec = importlib.util.spec_from_file_location("lab_redfish_events", REPO / "lab" / "bmc" / "redfish_events.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["lab_redfish_events"] = module
    spec.loader.exec_module(module)
    return module


lab = load_lab_events()


@pytest.fixture
def main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    mapping = {"nodeguard_power_event_bmcs": [{"node": "ng-worker1", "system": "/redfish/v1/Systems/ng-worker1"}]}
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(mapping))
    monkeypatch.setenv("NODEGUARD_POWER_EVENT_VARS", str(tmp_path / "vars.yml"))
    monkeypatch.setenv("NODEGUARD_BMC_TOKEN_KEY", KEY)
    return runpy.run_path(str(FILTER))["main"]


def posted(payload: dict) -> dict:
    """The payload as the webhook hands it to the filter (through JSON, as on the wire)."""
    token = hmac.new(KEY.encode(), b"nodeguard power events\x00ng-worker1", hashlib.sha256).hexdigest()
    return {"payload": json.loads(json.dumps(payload)), "meta": {"endpoint": "redfish-events/ng-worker1", "headers": {"X-Nodeguard-Token": token}}}


@pytest.mark.parametrize("personality", sorted(lab.PERSONALITIES))
def test_each_personalitys_power_off_becomes_an_off_event(main, personality: str) -> None:
    record = lab.event_record("ng-worker1", "Off", WHEN, personality)
    (out,) = main(posted(lab.event_payload(record, "nodeguard:ng-worker1", personality)))
    fields = out["nodeguard_power_event"]
    assert (fields["node"], fields["state"]) == ("ng-worker1", "Off")
    assert fields["time"] in ("2026-11-23T08:00:00.25Z", "2026-11-23T08:00:00.999999Z")  # whole seconds: the second's end


@pytest.mark.parametrize("personality", sorted(lab.PERSONALITIES))
def test_each_personalitys_power_on_only_logs_and_only_dmtf_reports_powering_off(main, personality: str) -> None:
    record = lab.event_record("ng-worker1", "On", WHEN, personality)
    (out,) = main(posted(lab.event_payload(record, "nodeguard:ng-worker1", personality)))
    assert out["nodeguard_power_event"]["state"] == "On"
    assert (lab.event_record("ng-worker1", "PoweringOff", WHEN, personality) is None) == (personality != "dmtf")


@pytest.mark.parametrize("personality", sorted(lab.PERSONALITIES))
def test_each_personality_has_its_vendors_shape(personality: str) -> None:
    fixture = json.loads((FIXTURES / FIXTURE_OF[personality]).read_text())
    record = lab.event_record("ng-worker1", "Off", WHEN, personality)
    payload = lab.event_payload(record, "nodeguard:ng-worker1", personality)
    assert ("Context" in payload) == ("Context" in fixture)
    assert set(payload["Events"][0]) == set(fixture["Events"][0])
    assert payload["Events"][0]["MessageId"].split(".")[0] == fixture["Events"][0]["MessageId"].split(".")[0]
    assert type(payload["Events"][0]["OriginOfCondition"] if "OriginOfCondition" in fixture["Events"][0] else None) is type(
        fixture["Events"][0].get("OriginOfCondition"))
    assert type(payload["Events"][0]["EventId"]) is type(fixture["Events"][0]["EventId"])


def test_the_personality_file_chooses_and_says_what_it_imitates(tmp_path: Path) -> None:
    path = tmp_path / "event-personality"
    assert lab.personality_from(str(path))[0] == "dmtf"  # missing: DMTF
    path.write_text("dell\n")
    name, personality = lab.personality_from(str(path))
    assert name == "dell" and personality.registry == "IDRAC"
    assert "iDRAC9" in lab.event_service_resource(name)["Description"]
    assert lab.event_service_resource(name)["RegistryPrefixes"] == ["IDRAC"]
    path.write_text("acme\n")
    with pytest.raises(ValueError, match="unknown event personality 'acme'"):
        lab.personality_from(str(path))


def test_a_subscription_may_ask_only_for_the_personalitys_registry() -> None:
    body = {"Destination": "https://127.0.0.1:5001/x/ng-worker1", "RegistryPrefixes": ["OpenBMC"]}
    assert lab.parse_subscription(body, ["ng-worker1"], "OpenBMC")["RegistryPrefixes"] == ["OpenBMC"]
    with pytest.raises(lab.InvalidRequest, match="the only registry this service uses is ResourceEvent"):
        lab.parse_subscription(body, ["ng-worker1"], "ResourceEvent")
    sub = lab.parse_subscription(body, ["ng-worker1"], "OpenBMC")
    assert lab.matches(sub, "ng-worker1", "OpenBMC") and not lab.matches(sub, "ng-worker1", "IDRAC")


def load_lab_stream(monkeypatch: pytest.MonkeyPatch):
    """lab/bmc/sse_stream.py, which imports redfish_events by its name (the lab BMC runs from lab/bmc)."""
    monkeypatch.setitem(sys.modules, "redfish_events", lab)
    spec = importlib.util.spec_from_file_location("lab_sse_stream", REPO / "lab" / "bmc" / "sse_stream.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_openbmc_personality_streams_bmcwebs_records_without_origin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SSE stream has the personality's shape too: bmcweb's event-log record, no OriginOfCondition, which the SSE
    source keeps for the BMC's only system (issue 38 item 1; tests/integration/eda/test_redfish_sse_lab.py)."""
    stream = load_lab_stream(monkeypatch).EventStream(tmp_path / "sse-events.json", keepalive=0, stall=False, personality=lambda: "openbmc")
    stream.publish("ng-worker1", "Off", WHEN)
    stream.publish("ng-worker1", "PoweringOff", WHEN)  # bmcweb reports no PoweringOff: nothing streamed
    ((number, data),) = json.loads((tmp_path / "sse-events.json").read_text())
    payload = json.loads(data)
    assert (number, payload["Id"], payload["Name"]) == (1, "1", "Event Log")
    (record,) = payload["Events"]
    assert "OriginOfCondition" not in record and record["MessageId"] == "OpenBMC.0.1.DCPowerOff"
    source = runpy.run_path(str(REPO / "extensions" / "eda" / "plugins" / "event_source" / "redfish_sse.py"))
    found = source["sort_records"](payload, {"/redfish/v1/Systems/ng-worker1": "ng-worker1"}, "ng-worker1", repr)
    assert found.kept == [("ng-worker1", "Off")]
