"""redfish_event_subscription(_info) against a fake Redfish EventService on loopback (issue 13, power events in).

The fake speaks plain http (the modules' allow_insecure_http, as the transport tests do); it records every
request, so each test can prove what was and was not sent.
"""

import hashlib
import hmac
import json
import os
import pathlib
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish_args import REDFISH_SERVICE_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish_events import check_desired, plan
from ansible_collections.nodeguard.failover.plugins.modules import redfish_event_subscription, redfish_event_subscription_info

REPO = pathlib.Path(__file__).resolve().parents[3]
PASSWORD = "bmc-Pa55-never-shown"
TOKEN = "rulebook-token-never-shown"
SUBS = "/redfish/v1/EventService/Subscriptions"
DEST = "https://eda.example:5443/endpoint"
SYSTEM = "/redfish/v1/Systems/ng-worker1"


class FakeEventService(BaseHTTPRequestHandler):
    """The EventService part of a Redfish service. ``server.subs``: id -> stored subscription (with its headers)."""

    def log_message(self, *args):
        pass

    def _answer(self, status, body=None, headers=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if data:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.server.requests.append((self.command, self.path, body, dict(self.headers)))
        return body

    def _shown(self, sid):
        sub = dict(self.server.subs[sid], **{"@odata.id": f"{SUBS}/{sid}", "Id": sid})
        sub["HttpHeaders"] = sub["HttpHeaders"] if self.server.shows_headers else []
        return sub

    def do_GET(self):
        self._record()
        if self.path == "/redfish/v1/EventService":
            return self._answer(200, {"Id": "EventService", "ServiceEnabled": self.server.enabled, "EventFormatTypes": ["Event"],
                                      "RegistryPrefixes": ["ResourceEvent"], "Subscriptions": {"@odata.id": SUBS}})
        if self.path == SUBS:
            members = [self._shown(sid) if self.server.inline else {"@odata.id": f"{SUBS}/{sid}"} for sid in sorted(self.server.subs)]
            members += [{"@odata.id": link} for link in self.server.extra_links]
            return self._answer(200, {"Members": members, "Members@odata.count": len(members)})
        sid = self.path.rsplit("/", 1)[-1]
        if self.path.startswith(SUBS + "/") and sid in self.server.subs:
            return self._answer(200, self._shown(sid))
        return self._answer(404, {"error": {"message": "not found"}})

    def do_POST(self):
        body = self._record()
        if self.path != SUBS:
            return self._answer(405)
        if self.server.refuse_post:  # a service that echoes what it got in its error: must be redacted
            echo = json.dumps(body) if self.server.refuse_post == "body" else f"token {TOKEN} unknown"
            return self._answer(400, {"error": {"message": f"refused {echo}"}})
        sid = str(max([0, *map(int, self.server.subs)]) + 1)
        self.server.subs[sid] = dict(body, HttpHeaders=body.get("HttpHeaders", []))
        return self._answer(201, self._shown(sid), {"Location": f"{SUBS}/{sid}"})

    def do_DELETE(self):
        self._record()
        sid = self.path.rsplit("/", 1)[-1]
        if self.path.startswith(SUBS + "/") and self.server.subs.pop(sid, None) is not None:
            return self._answer(204)
        return self._answer(404, {"error": {"message": "not found"}})


@pytest.fixture
def bmc():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeEventService)
    server.subs, server.requests = {}, []
    server.enabled, server.inline, server.shows_headers, server.refuse_post, server.extra_links = True, False, False, False, []
    server.url = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def stored(context="nodeguard:ng-worker1", destination=DEST, origin=(SYSTEM,), prefixes=("ResourceEvent",)):
    return {"Destination": destination, "Context": context, "Protocol": "Redfish", "EventFormatType": "Event",
            "RegistryPrefixes": list(prefixes), "OriginResources": [{"@odata.id": p} for p in origin],
            "HttpHeaders": [{"Authorization": "Bearer old-token"}]}


def args(bmc, **overrides):
    values = {"address": bmc.url, "username": "admin", "password": PASSWORD, "allow_insecure_http": True, "timeout": 5,
              "destination": DEST, "context": "nodeguard:ng-worker1", "origin_resources": [SYSTEM],
              "http_headers": {"Authorization": f"Bearer {TOKEN}"}}
    values.update(overrides)
    return values


def changes(bmc):
    return [(method, path) for method, path, _body, _headers in bmc.requests if method in ("POST", "DELETE", "PATCH", "PUT")]


def no_secret(*things):
    text = json.dumps(things, default=str)
    return PASSWORD not in text and TOKEN not in text and "old-token" not in text


# -- create, idempotency, check mode, diff --------------------------------------------------------------------------------


def test_creates_the_subscription_with_its_headers_then_changes_nothing(run_module, bmc):
    result = run_module(redfish_event_subscription, args(bmc))
    assert not result["failed"] and result["changed"] and result["created"] and result["deleted"] == []
    assert result["subscription"]["path"] == f"{SUBS}/1" and result["subscription"]["origin_resources"] == [SYSTEM]
    (posted,) = [body for method, _path, body, _headers in bmc.requests if method == "POST"]
    assert posted == {"Destination": DEST, "Context": "nodeguard:ng-worker1", "Protocol": "Redfish", "EventFormatType": "Event",
                      "RegistryPrefixes": ["ResourceEvent"], "OriginResources": [{"@odata.id": SYSTEM}],
                      "HttpHeaders": [{"Authorization": f"Bearer {TOKEN}"}]}
    assert all(headers.get("Authorization", "").startswith("Basic ") for _m, _p, _b, headers in bmc.requests)

    bmc.requests.clear()
    again = run_module(redfish_event_subscription, args(bmc))
    assert not again["failed"] and not again["changed"] and not again["created"] and again["deleted"] == []
    assert changes(bmc) == [] and again["subscription"]["path"] == f"{SUBS}/1"
    assert again["diff"]["before"] == again["diff"]["after"]
    assert no_secret(result, again)


def test_check_mode_sends_nothing_and_the_diff_shows_the_new_subscription_without_header_values(run_module, bmc):
    result = run_module(redfish_event_subscription, args(bmc), check_mode=True)
    assert not result["failed"] and result["changed"] and result["created"]
    assert changes(bmc) == [] and bmc.subs == {}
    assert result["diff"]["before"] == {"subscriptions": []}
    (after,) = result["diff"]["after"]["subscriptions"]
    assert after["destination"] == DEST and after["origin_resources"] == [SYSTEM]
    assert after["http_headers"] == "set: Authorization (values not shown)"
    assert no_secret(result)


def test_inline_members_and_a_destination_spelled_differently_are_the_same_subscription(run_module, bmc):
    bmc.inline = True
    bmc.subs["7"] = stored(destination="https://EDA.example:5443/endpoint")
    result = run_module(redfish_event_subscription, args(bmc))
    assert not result["failed"] and not result["changed"] and result["subscription"]["path"] == f"{SUBS}/7"
    assert [path for method, path, _b, _h in bmc.requests if method == "GET"] == ["/redfish/v1/EventService", SUBS]


def test_changed_settings_recreate_it_new_one_first_and_the_diff_says_so(run_module, bmc):
    bmc.subs["7"] = stored(origin=("/redfish/v1/Systems/ng-worker2",))
    checked = run_module(redfish_event_subscription, args(bmc), check_mode=True)
    assert checked["changed"] and checked["created"] and checked["deleted"] == [f"{SUBS}/7"] and changes(bmc) == []
    assert checked["diff"]["before"]["subscriptions"][0]["origin_resources"] == ["/redfish/v1/Systems/ng-worker2"]
    assert checked["diff"]["after"]["subscriptions"][0]["origin_resources"] == [SYSTEM]

    result = run_module(redfish_event_subscription, args(bmc))
    assert result["changed"] and result["deleted"] == [f"{SUBS}/7"]
    assert changes(bmc) == [("POST", SUBS), ("DELETE", f"{SUBS}/7")]  # never a moment without a subscription
    assert list(bmc.subs) == ["8"] and bmc.subs["8"]["OriginResources"] == [{"@odata.id": SYSTEM}]


def test_headers_cannot_be_compared_so_force_recreates_to_rotate_the_token(run_module, bmc):
    bmc.subs["7"] = stored()
    assert not run_module(redfish_event_subscription, args(bmc))["changed"]  # old token stays: it cannot be read back
    assert bmc.subs["7"]["HttpHeaders"] == [{"Authorization": "Bearer old-token"}]

    result = run_module(redfish_event_subscription, args(bmc, force=True))
    assert result["changed"] and result["created"] and result["deleted"] == [f"{SUBS}/7"]
    assert changes(bmc) == [("POST", SUBS), ("DELETE", f"{SUBS}/7")]
    assert [s["HttpHeaders"] for s in bmc.subs.values()] == [[{"Authorization": f"Bearer {TOKEN}"}]]
    assert result["diff"]["before"]["subscriptions"][0]["http_headers"] == "(write-only, not readable)"
    assert no_secret(result)


def test_duplicates_are_reduced_to_one_and_other_subscriptions_are_never_touched(run_module, bmc):
    bmc.subs.update({"1": stored(), "2": stored(), "3": stored(context="nodeguard:ng-worker2"), "4": stored(destination="https://other.example/x")})
    result = run_module(redfish_event_subscription, args(bmc))
    assert result["changed"] and not result["created"] and result["deleted"] == [f"{SUBS}/2"]
    assert sorted(bmc.subs) == ["1", "3", "4"]


def test_absent_deletes_every_matching_one_only_and_check_mode_deletes_nothing(run_module, bmc):
    bmc.subs.update({"1": stored(), "2": stored(), "3": stored(context="nodeguard:ng-worker2")})
    checked = run_module(redfish_event_subscription, args(bmc, state="absent"), check_mode=True)
    assert checked["changed"] and checked["deleted"] == [f"{SUBS}/1", f"{SUBS}/2"] and changes(bmc) == []
    assert checked["diff"]["after"] == {"subscriptions": []} and len(checked["diff"]["before"]["subscriptions"]) == 2

    result = run_module(redfish_event_subscription, args(bmc, state="absent"))
    assert result["changed"] and result["subscription"] is None and sorted(bmc.subs) == ["3"]
    assert not run_module(redfish_event_subscription, args(bmc, state="absent"))["changed"]


# -- refusals: nothing sent or nothing changed, nothing secret said --------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"destination": "http://eda.example:5000/endpoint"}, "destination must be an https URL"),
        ({"destination": "https://user:pw@eda.example/endpoint"}, "must not contain user information"),
        ({"context": ""}, "context must be 1 to 256"),
        ({"context": "x" * 257}, "context must be 1 to 256"),
        ({"context": "nodeguard:a\nb"}, "context must be 1 to 256"),
        ({"origin_resources": ["/redfish/v1/Chassis/1/../../Systems/x"]}, "is not a system path"),
        ({"http_headers": {"Authorization": f"Bearer {TOKEN}\r\nX-Evil: 1"}}, "value not shown"),
        ({"http_headers": {"Bad Name": TOKEN}}, "is not an HTTP header name"),
    ],
)
def test_bad_input_is_refused_before_any_request(run_module, bmc, change, message):
    result = run_module(redfish_event_subscription, args(bmc, **change))
    assert result["failed"] and message in result["msg"] and not result.get("changed")
    assert bmc.requests == [] and no_secret(result)


def test_plain_http_bmc_is_refused_without_the_loud_option(run_module, bmc):
    result = run_module(redfish_event_subscription, args(bmc, allow_insecure_http=False))
    assert result["failed"] and "plain http" in result["msg"] and bmc.requests == []


@pytest.mark.parametrize("echo", ["body", "token alone"])
def test_a_refused_create_changes_nothing_and_its_echo_is_redacted(run_module, bmc, echo):
    bmc.subs["7"] = stored()
    bmc.refuse_post = echo
    result = run_module(redfish_event_subscription, args(bmc, force=True))
    assert result["failed"] and "HTTP 400" in result["msg"] and "refused" in result["msg"]
    assert changes(bmc) == [("POST", SUBS)] and list(bmc.subs) == ["7"]  # the old one is still there
    assert TOKEN not in result["msg"] and "********" in result["msg"] and no_secret(result)


def test_a_disabled_event_service_is_refused_for_present(run_module, bmc):
    bmc.enabled = False
    result = run_module(redfish_event_subscription, args(bmc))
    assert result["failed"] and "ServiceEnabled false" in result["msg"] and changes(bmc) == []


def test_a_member_link_to_another_origin_gets_no_credentials(run_module, bmc):
    bmc.extra_links = ["https://elsewhere.example/redfish/v1/EventService/Subscriptions/9"]
    result = run_module(redfish_event_subscription, args(bmc))
    assert result["failed"] and "credentials are sent only to the configured origin" in result["msg"] and changes(bmc) == []


def test_a_service_that_shows_headers_does_not_leak_them(run_module, bmc):
    bmc.shows_headers = True
    bmc.subs["7"] = stored()
    info = run_module(redfish_event_subscription_info, {"address": bmc.url, "password": PASSWORD, "allow_insecure_http": True})
    result = run_module(redfish_event_subscription, args(bmc, force=True), check_mode=True)
    assert not info["failed"] and not result["failed"] and no_secret(info, result)


def test_password_and_headers_are_no_log():
    assert REDFISH_SERVICE_ARGUMENT_SPEC["password"]["no_log"] is True
    assert redfish_event_subscription.OPTIONS["http_headers"]["no_log"] is True


# -- list -------------------------------------------------------------------------------------------------------------------


def test_info_lists_the_service_and_its_subscriptions_and_filters_by_context(run_module, bmc):
    bmc.subs.update({"1": stored(), "2": stored(context="nodeguard:ng-worker2")})
    result = run_module(redfish_event_subscription_info, {"address": bmc.url, "password": PASSWORD, "allow_insecure_http": True})
    assert not result["failed"] and not result["changed"]
    assert result["service"] == {"service_enabled": True, "event_format_types": ["Event"], "registry_prefixes": ["ResourceEvent"]}
    assert [(s["id"], s["context"]) for s in result["subscriptions"]] == [("1", "nodeguard:ng-worker1"), ("2", "nodeguard:ng-worker2")]
    only = run_module(redfish_event_subscription_info, {"address": bmc.url, "allow_insecure_http": True, "context": "nodeguard:ng-worker2"})
    assert [s["path"] for s in only["subscriptions"]] == [f"{SUBS}/2"] and changes(bmc) == []


# -- the plan alone ---------------------------------------------------------------------------------------------------------


def summary(path, **fields):
    value = {"path": path, "id": path[-1], "destination": DEST, "context": "c", "protocol": "Redfish", "event_format_type": "",
             "registry_prefixes": ["ResourceEvent"], "origin_resources": []}
    value.update(fields)
    return value


def test_plan_keeps_an_up_to_date_one_among_stale_duplicates():
    desired = check_desired(DEST, "c", ["ResourceEvent"], [], {})
    stale, good = summary(f"{SUBS}/1", protocol="SNMPv3"), summary(f"{SUBS}/2")
    steps = plan([stale, good], desired, "present", force=False)
    assert (steps.create, steps.delete, steps.keep) == (False, [f"{SUBS}/1"], good)
    forced = plan([stale, good], desired, "present", force=True)
    assert (forced.create, forced.delete, forced.keep) == (True, [f"{SUBS}/1", f"{SUBS}/2"], None)


def test_through_real_ansible_the_token_and_password_never_reach_the_output(ansible_adhoc, bmc):
    result = ansible_adhoc("redfish_event_subscription", args(bmc), check=True)
    assert result.get("changed") is True and not result.get("failed"), result
    assert no_secret(result)


def own_token(node: str, key: str = TOKEN) -> str:
    """The documented rule (docs/power-events.md), written out here: HMAC-SHA256(key, purpose + node)."""
    return hmac.new(key.encode(), b"nodeguard power events\x00" + node.encode(), hashlib.sha256).hexdigest()


def test_token_key_gives_the_bmc_its_own_token_and_never_the_key(run_module, bmc):
    result = run_module(redfish_event_subscription, args(bmc, http_headers={}, token_key=TOKEN, token_node="ng-worker1"))
    assert not result["failed"] and result["changed"], result
    (posted,) = [body for method, _path, body, _headers in bmc.requests if method == "POST"]
    assert posted["HttpHeaders"] == [{"X-Nodeguard-Token": own_token("ng-worker1")}]
    assert no_secret(result) and own_token("ng-worker1") not in json.dumps(result)


def test_the_filter_and_the_module_make_the_same_token():
    import runpy

    from ansible_collections.nodeguard.failover.plugins.module_utils.power.redfish_events import bmc_token

    filter_main = runpy.run_path(str(REPO / "extensions" / "eda" / "plugins" / "event_filter" / "redfish_power_events.py"))
    assert bmc_token(TOKEN, "ng-worker1") == filter_main["bmc_token"](TOKEN, "ng-worker1") == own_token("ng-worker1")
    assert bmc_token(TOKEN, "ng-worker1") != bmc_token(TOKEN, "ng-worker2")


@pytest.mark.parametrize(
    ("vendor", "registries"),
    [("dmtf", ["ResourceEvent"]), ("openbmc", ["OpenBMC"]), ("hpe", ["iLOResourceEvents"]), ("dell", ["IDRAC"])],
)
def test_the_vendor_chooses_the_registries_its_power_messages_come_from(run_module, bmc, vendor, registries):
    result = run_module(redfish_event_subscription, args(bmc, vendor=vendor))
    assert not result["failed"] and result["subscription"]["registry_prefixes"] == registries
    (posted,) = [body for method, _path, body, _headers in bmc.requests if method == "POST"]
    assert posted["RegistryPrefixes"] == registries


def test_vendor_and_registry_prefixes_together_are_refused(run_module, bmc):
    result = run_module(redfish_event_subscription, args(bmc, vendor="dell", registry_prefixes=["ResourceEvent"]))
    assert result["failed"] and "mutually exclusive" in result["msg"] and bmc.requests == []


# -- playbooks/power_event_subscriptions.yml, run for real against the fake -------------------------------------------------


def run_playbook(tmp_path, bmc, **extra):
    inventory = {"all": {"hosts": {
        "ng-worker1": {"bmc": {"type": "redfish", "address": bmc.url, "system_id": "ng-worker1", "username": "admin",
                               "password": PASSWORD, "allow_insecure_http": True, "timeout": 5}},
        "ng-worker2": {"bmc": {"type": "redfish", "address": bmc.url, "system_id": "ng-worker2", "username": "admin",
                               "password": PASSWORD, "allow_insecure_http": True, "timeout": 5}, "bmc_vendor": "openbmc"},
        "ng-worker3": {"bmc": {"type": "ipmi", "address": "127.0.0.1"}},
        "ng-cp1": {},
    }}}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), NODEGUARD_BMC_TOKEN_KEY=TOKEN, ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_PYTHON_INTERPRETER=str(REPO / ".venv" / "bin" / "python"))
    extra = dict({"power_event_subscriptions_destination": DEST}, **extra)
    done = subprocess.run([str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(tmp_path / "inventory.json"),
                           str(REPO / "playbooks" / "power_event_subscriptions.yml"), "--diff", "-e", json.dumps(extra)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False)
    return done.returncode, done.stdout + done.stderr


def test_the_playbook_subscribes_each_redfish_bmc_for_its_own_node_once(tmp_path, bmc):
    rc, output = run_playbook(tmp_path, bmc)
    assert rc == 0, output
    assert sorted((s["Destination"], s["Context"], s["OriginResources"][0]["@odata.id"], s["RegistryPrefixes"], s["HttpHeaders"])
                  for s in bmc.subs.values()) == [
        (f"{DEST}/ng-worker1", "nodeguard:ng-worker1", "/redfish/v1/Systems/ng-worker1", ["ResourceEvent"],
         [{"X-Nodeguard-Token": own_token("ng-worker1")}]),
        (f"{DEST}/ng-worker2", "nodeguard:ng-worker2", "/redfish/v1/Systems/ng-worker2", ["OpenBMC"],
         [{"X-Nodeguard-Token": own_token("ng-worker2")}]),
    ]  # each BMC its own path and token; the key itself is sent to none
    assert TOKEN not in json.dumps(bmc.subs) and TOKEN not in output and PASSWORD not in output
    assert own_token("ng-worker1") not in output

    bmc.requests.clear()
    rc, output = run_playbook(tmp_path, bmc)
    assert rc == 0 and changes(bmc) == [] and "changed=0" in output, output

    rc, output = run_playbook(tmp_path, bmc, power_event_subscriptions_state="absent", power_event_subscriptions_limit_nodes="ng-worker2")
    assert rc == 0, output
    assert [s["Context"] for s in bmc.subs.values()] == ["nodeguard:ng-worker1"]


def test_the_playbook_refuses_a_node_without_a_redfish_bmc_and_changes_nothing(tmp_path, bmc):
    rc, output = run_playbook(tmp_path, bmc, power_event_subscriptions_limit_nodes=["ng-worker1", "ng-worker3"])
    assert rc != 0 and "without an inventory host whose bmc has type redfish: ng-worker3" in output
    assert bmc.requests == []
