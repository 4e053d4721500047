"""Two secrets (issue 38 item 10): the key of the BMCs' tokens is NODEGUARD_BMC_TOKEN_KEY, not Alertmanager's bearer
token NODEGUARD_EDA_TOKEN. Anyone who can read Alertmanager's configuration holds the bearer token; with one secret
for both, they could mint every BMC's token. Equal values are refused, by the filter and by the subscription
playbook, without showing either value."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import runpy
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
FILTER = REPO / "extensions" / "eda" / "plugins" / "event_filter" / "redfish_power_events.py"
BMC_KEY = "bmc-key-7c2e"  # NODEGUARD_BMC_TOKEN_KEY
WEBHOOK_TOKEN = "alertmanager-bearer-41d9"  # NODEGUARD_EDA_TOKEN, as Alertmanager's configuration holds it
NODE = "ng-worker1"


def token(node: str, key: str) -> str:
    """From the documented rule (docs/power-events.md): hex HMAC-SHA256(key, "nodeguard power events" NUL node)."""
    return hmac.new(key.encode(), b"nodeguard power events\x00" + node.encode(), hashlib.sha256).hexdigest()


def post(own_token: str) -> dict:
    """What eda.builtin.webhook makes of a BMC's POST: a DMTF ResourceEvent 1.x ResourcePoweredOff record (DSP0266
    Event, DSP8011 ResourceEvent registry) to the node's own endpoint with its token header."""
    record = {
        "EventType": "Alert",
        "EventId": "1",
        "MessageId": "ResourceEvent.1.0.ResourcePoweredOff",
        "EventTimestamp": "2026-11-23T08:00:00Z",
        "OriginOfCondition": {"@odata.id": f"/redfish/v1/Systems/{NODE}"},
    }
    return {
        "payload": {"@odata.type": "#Event.v1_7_0.Event", "Id": "1", "Name": "Event", "Events": [record]},
        "meta": {"endpoint": f"redfish-events/{NODE}", "headers": {"X-Nodeguard-Token": own_token}},
    }


@pytest.fixture
def main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    mapping = {"nodeguard_power_event_bmcs": [{"node": NODE, "system": f"/redfish/v1/Systems/{NODE}"}]}
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(mapping))
    monkeypatch.setenv("NODEGUARD_POWER_EVENT_VARS", str(tmp_path / "vars.yml"))
    monkeypatch.delenv("NODEGUARD_BMC_TOKEN_KEY", raising=False)
    monkeypatch.delenv("NODEGUARD_EDA_TOKEN", raising=False)
    return runpy.run_path(str(FILTER))["main"]


def refusal(events: list) -> str:
    (only,) = events
    return only.get("nodeguard_refused", "")


def test_the_bmc_tokens_are_made_with_their_own_key(main, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEGUARD_BMC_TOKEN_KEY", BMC_KEY)
    monkeypatch.setenv("NODEGUARD_EDA_TOKEN", WEBHOOK_TOKEN)
    (accepted,) = main(post(token(NODE, BMC_KEY)))
    assert accepted["nodeguard_power_event"]["node"] == NODE and accepted["nodeguard_power_event"]["state"] == "Off"


def test_a_token_minted_with_alertmanagers_bearer_token_is_refused(main, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEGUARD_BMC_TOKEN_KEY", BMC_KEY)
    monkeypatch.setenv("NODEGUARD_EDA_TOKEN", WEBHOOK_TOKEN)
    assert "is not the token of the BMC of node ng-worker1" in refusal(main(post(token(NODE, WEBHOOK_TOKEN))))


def test_equal_values_are_refused_without_showing_them(main, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEGUARD_BMC_TOKEN_KEY", WEBHOOK_TOKEN)
    monkeypatch.setenv("NODEGUARD_EDA_TOKEN", WEBHOOK_TOKEN)
    why = refusal(main(post(token(NODE, WEBHOOK_TOKEN))))
    assert "NODEGUARD_BMC_TOKEN_KEY is the same as NODEGUARD_EDA_TOKEN" in why and WEBHOOK_TOKEN not in why


def test_only_the_old_variable_set_is_refused_naming_the_new_one(main, monkeypatch: pytest.MonkeyPatch) -> None:
    """The breaking change: a rulebook that had only NODEGUARD_EDA_TOKEN refuses every event and says what to set."""
    monkeypatch.setenv("NODEGUARD_EDA_TOKEN", WEBHOOK_TOKEN)
    why = refusal(main(post(token(NODE, WEBHOOK_TOKEN))))
    assert "NODEGUARD_BMC_TOKEN_KEY (the key of the BMCs' tokens) is not set" in why and WEBHOOK_TOKEN not in why


@pytest.mark.parametrize("name", ["power-events", "power-events-controller"])
def test_the_rulebook_gives_the_filter_the_bmc_key(name: str) -> None:
    (ruleset,) = yaml.safe_load((REPO / "extensions" / "eda" / "rulebooks" / f"{name}.yml").read_text())
    (source,) = ruleset["sources"]
    (only,) = source["filters"]
    assert only["nodeguard.failover.redfish_power_events"]["token_env"] == "NODEGUARD_BMC_TOKEN_KEY"


def test_the_subscription_playbook_takes_the_bmc_key_and_refuses_equal_values(tmp_path: Path) -> None:
    """The check runs before any BMC is contacted (the BMC address here answers nothing)."""
    inventory = {
        "all": {
            "hosts": {
                NODE: {"bmc": {"type": "redfish", "address": "https://127.0.0.1:9", "system_id": NODE, "username": "admin", "password": "unused", "timeout": 2}}
            }
        }
    }
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        NODEGUARD_EDA_TOKEN=WEBHOOK_TOKEN,
        NODEGUARD_BMC_TOKEN_KEY=WEBHOOK_TOKEN,
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_PYTHON_INTERPRETER=str(REPO / ".venv" / "bin" / "python"),
    )
    extra = {"power_event_subscriptions_destination": "https://eda.example.internal:5001/redfish-events"}
    done = subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "ansible-playbook"),
            "-i",
            str(tmp_path / "inventory.json"),
            str(REPO / "playbooks" / "power_event_subscriptions.yml"),
            "-e",
            json.dumps(extra),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "the same as NODEGUARD_EDA_TOKEN" in output, output[-3000:]
    assert WEBHOOK_TOKEN not in output
    (play,) = yaml.safe_load((REPO / "playbooks" / "power_event_subscriptions.yml").read_text())
    assert "lookup('ansible.builtin.env', 'NODEGUARD_BMC_TOKEN_KEY')" in play["vars"]["power_event_subscriptions_secret"]
