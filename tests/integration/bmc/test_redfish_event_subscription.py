"""nodeguard.failover.redfish_event_subscription(_info) against the lab BMC's EventService (issue 13).

The modules run for real (`ansible localhost -m ...`) against a private lab BMC (Redfish only, own state
directory and port) that trusts an HTTPS receiver running in this test. Proven: check mode sends nothing;
the subscription is created once (idempotent); the BMC then POSTs a standard power Event for the node's
system with the bearer token the module set; `force` rotates the token (one subscription, new token on the
next Event); `absent` removes it and no Event follows; no password or token in any module output.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator

import pytest
import requests
from bmclib import REPO, Bmc, podman, running_machine, start_bmc
from test_bmc_events import Receiver, make_ca_and_server_cert

HTTP_TIMEOUT = 60
QUIET_SECONDS = 8  # no Event within this long after a power change counts as "none sent" (delivery takes ~1 s)
OFF, ON = "ResourceEvent.1.3.0.ResourcePoweredOff", "ResourceEvent.1.3.0.ResourcePoweredOn"
OLD_TOKEN, NEW_TOKEN = "subscription-test-token-one", "subscription-test-token-two"


@pytest.fixture(scope="module")
def receiver(tmp_path_factory) -> Iterator[tuple[Receiver, str]]:
    """(an HTTPS receiver, the CA file its certificate chains to)."""
    ca, cert, key = make_ca_and_server_cert(tmp_path_factory.mktemp("subscription-receiver"), "event receiver", "IP:127.0.0.1")
    receiver = Receiver(cert, key)
    yield receiver, str(ca)
    receiver.server.shutdown()


@pytest.fixture(scope="module")
def sub_bmc(tmp_path_factory, receiver) -> Iterator[Bmc]:
    node = f"ng-bmcsub-{os.getpid()}"
    bmc = start_bmc(tmp_path_factory.mktemp("bmc-subscription") / "state", [node], ipmi=False,
                    extra_env={"NODEGUARD_BMC_EVENT_CA": receiver[1]})
    try:
        yield bmc
    finally:
        bmc.sh("down", check=False)
        podman("rm", "--force", "--time", "0", node, check=False)


@pytest.fixture
def machine(sub_bmc: Bmc, test_image: str) -> Iterator[str]:
    with running_machine(sub_bmc.nodes[0], test_image) as name:
        yield name


def module(name: str, args: dict, check: bool = False) -> dict:
    """One real `ansible localhost -m nodeguard.failover.<name>` run: its host result."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOCALHOST_WARNING="0")
    command = [str(REPO / ".venv" / "bin" / "ansible"), "localhost", "-c", "local", "-m", f"nodeguard.failover.{name}",
               "-a", json.dumps(args), "-e", f"ansible_python_interpreter={REPO / '.venv' / 'bin' / 'python'}", "--diff"]
    if check:
        command.append("--check")
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False)
    result = json.loads(done.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    result["_output"] = done.stdout + done.stderr
    return result


def connection(bmc: Bmc) -> dict:
    username, password = bmc.auth
    return {"address": bmc.base_url, "username": username, "password": password, "ca_cert": bmc.ca_cert}


def subscription(bmc: Bmc, receiver: Receiver, node: str, token: str, **changes) -> dict:
    args = dict(connection(bmc), destination=receiver.url("/redfish-events"), context=f"nodeguard:{node}",
                origin_resources=[f"/redfish/v1/Systems/{node}"], http_headers={"Authorization": f"Bearer {token}"})
    args.update(changes)
    return args


def listed(bmc: Bmc, node: str) -> list:
    result = module("redfish_event_subscription_info", dict(connection(bmc), context=f"nodeguard:{node}"))
    assert not result.get("failed"), result["_output"]
    return result["subscriptions"]


def reset(bmc: Bmc, node: str, reset_type: str) -> None:
    response = requests.post(f"{bmc.base_url}/redfish/v1/Systems/{node}/Actions/ComputerSystem.Reset",
                             json={"ResetType": reset_type}, auth=bmc.auth, verify=bmc.ca_cert, timeout=HTTP_TIMEOUT)
    assert response.status_code == 204, response.text


def authorization(record: dict) -> str:
    return {name.lower(): value for name, value in record["_headers"].items()}["authorization"]


def test_the_modules_subscription_delivers_power_events_with_its_token_rotates_and_goes(sub_bmc, receiver, machine):
    receiver, _ca = receiver
    node, context = machine, f"nodeguard:{machine}"
    outputs = []

    checked = module("redfish_event_subscription", subscription(sub_bmc, receiver, node, OLD_TOKEN), check=True)
    outputs.append(checked["_output"])
    assert checked["changed"] and checked["created"] and not checked.get("failed"), checked["_output"]
    assert listed(sub_bmc, node) == []  # check mode sent nothing

    created = module("redfish_event_subscription", subscription(sub_bmc, receiver, node, OLD_TOKEN))
    again = module("redfish_event_subscription", subscription(sub_bmc, receiver, node, OLD_TOKEN))
    outputs += [created["_output"], again["_output"]]
    assert created["changed"] and created["subscription"]["path"].startswith("/redfish/v1/EventService/Subscriptions/"), created["_output"]
    assert not again["changed"] and again["subscription"]["path"] == created["subscription"]["path"], again["_output"]
    (shown,) = listed(sub_bmc, node)
    assert shown["origin_resources"] == [f"/redfish/v1/Systems/{node}"] and shown["registry_prefixes"] == ["ResourceEvent"]

    reset(sub_bmc, node, "ForceOff")
    off = receiver.wait_for_event(context, OFF)
    assert off["OriginOfCondition"] == {"@odata.id": f"/redfish/v1/Systems/{node}"}
    assert authorization(off) == f"Bearer {OLD_TOKEN}"

    rotated = module("redfish_event_subscription", subscription(sub_bmc, receiver, node, NEW_TOKEN, force=True))
    outputs.append(rotated["_output"])
    assert rotated["changed"] and rotated["deleted"] == [created["subscription"]["path"]], rotated["_output"]
    assert [s["path"] for s in listed(sub_bmc, node)] == [rotated["subscription"]["path"]]
    seen = len(receiver.events(context))
    reset(sub_bmc, node, "On")
    on = receiver.wait_for_event(context, ON, after=seen)
    assert authorization(on) == f"Bearer {NEW_TOKEN}"
    assert all(authorization(r) == f"Bearer {NEW_TOKEN}" for r in receiver.events(context)[seen:])

    removed = module("redfish_event_subscription", subscription(sub_bmc, receiver, node, NEW_TOKEN, state="absent"))
    gone = module("redfish_event_subscription", subscription(sub_bmc, receiver, node, NEW_TOKEN, state="absent"))
    outputs += [removed["_output"], gone["_output"]]
    assert removed["changed"] and not gone["changed"] and listed(sub_bmc, node) == []
    seen = len(receiver.events(context))
    reset(sub_bmc, node, "ForceOff")
    time.sleep(QUIET_SECONDS)
    assert receiver.events(context)[seen:] == []

    password = sub_bmc.auth[1]
    for output in outputs:
        assert OLD_TOKEN not in output and NEW_TOKEN not in output and password not in output


def test_plain_http_destination_is_refused_and_nothing_is_created(sub_bmc, receiver):
    receiver, _ca = receiver
    node = sub_bmc.nodes[0]
    result = module("redfish_event_subscription",
                    subscription(sub_bmc, receiver, node, OLD_TOKEN, destination=f"http://127.0.0.1:{receiver.port}/redfish-events"))
    assert result.get("failed") and "destination must be an https URL" in result["msg"], result["_output"]
    assert listed(sub_bmc, node) == [] and OLD_TOKEN not in result["_output"]
