"""The event source nodeguard.failover.bmc_power_poll: events on power transitions only, bounded concurrency, its
interval, an unreadable BMC is not "Off", no credential in an event or a log, and its configuration checks."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import runpy
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.power import base

REPO = Path(__file__).resolve().parents[3]
SOURCE = REPO / "extensions" / "eda" / "plugins" / "event_source" / "bmc_power_poll.py"
PASSWORD = "pw-never-shown-4711"
REDFISH = {"type": "redfish", "address": "https://bmc-w1.example", "system_id": "w1", "username": "admin", "password": PASSWORD}
EVENT_KEYS = {"node", "state", "time", "event_id", "source"}


@pytest.fixture
def source() -> dict:
    """The source's namespace, loaded as ansible-rulebook loads it (runpy)."""
    return runpy.run_path(str(SOURCE))


class Scripted:
    """A reader that answers a fixed sequence: "on", "off", "unknown" or an exception to raise."""

    method = "fake"

    def __init__(self, answers):
        self.answers = list(answers)

    def status(self):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return base.PowerReading(answer, "fake", f"reads {answer}")


class Done(Exception):
    """Raised by the fake sleep to end the poll loop."""


def run_polls(source: dict, bmcs, rounds: int, interval: float = 5.0, max_concurrency: int = 4):
    """Poll every BMC ``rounds`` times (the fake sleep stops it then); returns (events, sleeps asked for)."""
    events, sleeps = [], []

    class Queue:
        async def put(self, item):
            events.append(item)

    async def sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) >= rounds * len(bmcs):
            raise Done

    async def go():
        with pytest.raises(Done):
            await source["poll"](Queue(), bmcs, interval, max_concurrency, base, lambda: 1795420800.2, sleep)

    asyncio.run(go())
    return events, sleeps


def bmc(source: dict, node: str, answers, power=None):
    return source["Bmc"](node, power or dict(REDFISH), Scripted(answers))


def test_events_only_on_transitions_never_at_the_first_reading(source) -> None:
    events = run_polls(source, [bmc(source, "ng-w1", ["on", "on", "off", "off", "on", "on"])], rounds=6)[0]
    assert [e["nodeguard_power_event"]["state"] for e in events] == ["Off", "On"]
    first = events[0]["nodeguard_power_event"]
    assert set(first) == EVENT_KEYS
    assert (first["node"], first["source"], first["time"]) == ("ng-w1", "poll", "2026-11-23T08:00:01Z")  # rounded up
    assert re.fullmatch(r"[A-Za-z0-9._:-]{1,64}", first["event_id"])
    assert events[0]["nodeguard_power_event"]["event_id"] != events[1]["nodeguard_power_event"]["event_id"]


def test_a_first_reading_of_off_is_not_an_event(source) -> None:
    events = run_polls(source, [bmc(source, "ng-w1", ["off", "off", "off"])], rounds=3)[0]
    assert events == []


@pytest.mark.parametrize("answers, states", [
    (["on", "unknown", "on"], []),
    (["on", base.PowerError("redfish https://bmc-w1.example unreachable: timed out"), "on"], []),
    (["on", "unknown", "off"], ["Off"]),  # the change is from the last clear reading
    (["unknown", "off", "on"], ["On"]),  # unreadable at first: the first clear reading is the baseline
    (["off", RuntimeError("boom"), "unknown", "off"], []),
])
def test_an_unreadable_bmc_is_neither_on_nor_off(source, answers, states) -> None:
    events = run_polls(source, [bmc(source, "ng-w1", answers)], rounds=len(answers))[0]
    assert [e["nodeguard_power_event"]["state"] for e in events] == states


def test_an_unreadable_bmc_is_logged_once_per_reason_not_every_interval(source, caplog: pytest.LogCaptureFixture) -> None:
    timeout = base.PowerError("redfish https://bmc-w1.example unreachable: timed out")
    refused = base.PowerError("redfish https://bmc-w1.example: credentials refused (HTTP 401)")
    caplog.set_level(logging.INFO)
    run_polls(source, [bmc(source, "ng-w1", ["on", timeout, timeout, timeout, refused, refused, "on", timeout])], rounds=8)
    assert caplog.text.count("unreachable: timed out") == 2  # once, and once again after it was readable
    assert caplog.text.count("credentials refused") == 1
    assert caplog.text.count("ng-w1: power readable again") == 1


def test_each_bmc_is_read_every_interval(source) -> None:
    sleeps = run_polls(source, [bmc(source, "ng-w1", ["on"] * 4)], rounds=4, interval=7.0)[1]
    assert len(sleeps) == 4
    assert all(6.5 < s <= 7.0 for s in sleeps)  # the interval minus the (tiny) time of the read


def test_a_slow_read_is_taken_from_the_interval(source) -> None:
    class Slow(Scripted):
        def status(self):
            time.sleep(0.3)
            return super().status()

    sleeps = run_polls(source, [source["Bmc"]("ng-w1", dict(REDFISH), Slow(["on", "on"]))], rounds=2, interval=1.0)[1]
    assert all(0 <= s <= 0.7 for s in sleeps)  # at least the 0.3 s of the read was taken off


def test_no_more_than_max_concurrency_reads_at_a_time(source) -> None:
    active, peak, reads = [0], [0], [0]
    lock = threading.Lock()

    class Blocking:
        method = "fake"

        def status(self):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.2)
            with lock:
                active[0] -= 1
                reads[0] += 1
            return base.PowerReading("on", "fake", "")

    bmcs = [source["Bmc"](f"ng-w{n}", {**REDFISH, "system_id": f"w{n}"}, Blocking()) for n in range(10)]
    started = time.monotonic()
    run_polls(source, bmcs, rounds=1, max_concurrency=3)
    assert reads[0] >= 10  # every BMC read (a fast one may already have read again)
    assert peak[0] == 3
    assert time.monotonic() - started >= 0.2 * 4 - 0.05  # 10 reads, 3 at a time: 4 waves


def test_no_credential_in_events_or_logs(source, caplog: pytest.LogCaptureFixture) -> None:
    leaky = base.PowerError(f"redfish https://bmc-w1.example: odd answer mentioning {PASSWORD}")
    opaque = ValueError(f"something with {PASSWORD} in it")
    caplog.set_level(logging.DEBUG)
    events = run_polls(source, [bmc(source, "ng-w1", ["on", leaky, opaque, "off"])], rounds=4)[0]
    assert len(events) == 1
    assert PASSWORD not in repr(events)
    assert PASSWORD not in caplog.text and "admin" not in caplog.text
    assert "power not readable, no event (redfish https://bmc-w1.example: odd answer mentioning ********)" in caplog.text
    assert "ValueError while reading" in caplog.text


def config(source: dict, **args):
    api = source["_import_collection"]()
    return source["checked_config"](args, api)


def test_a_good_configuration_builds_readers_without_reading(source) -> None:
    ipmi = {"type": "ipmi", "address": "10.0.0.12", "username": "admin", "password": PASSWORD}
    bmcs, interval, concurrency = config(source, bmcs=[{"node": "ng-w1", "power": REDFISH}, {"node": "ng-w2", "power": ipmi}], interval=2)
    assert [(b.node, b.reader.method, b.last) for b in bmcs] == [("ng-w1", "redfish", None), ("ng-w2", "ipmi", None)]
    assert (interval, concurrency) == (2.0, 4)


@pytest.mark.parametrize("args, message", [
    ({"bmcs": []}, "non-empty list"),
    ({"bmcs": [{"node": "ng-w1"}]}, "exactly the keys node and power"),
    ({"bmcs": [{"node": "{{ lookup('pipe', 'id') }}", "power": REDFISH}]}, "is not a Kubernetes node name"),
    ({"bmcs": [{"node": "ng-w1", "power": REDFISH}, {"node": "ng-w1", "power": {**REDFISH, "system_id": "w2"}}]}, "ng-w1 is listed twice"),
    ({"bmcs": [{"node": "ng-w1", "power": REDFISH}, {"node": "ng-w2", "power": dict(REDFISH)}]}, "ng-w1 and ng-w2 have the same redfish BMC"),
    ({"bmcs": [{"node": "ng-w1", "power": {"type": "manual", "password": PASSWORD}}]}, "type one of redfish, ipmi, fence_agent, command"),
    ({"bmcs": [{"node": "ng-w1", "power": {**REDFISH, "pasword": PASSWORD}}]}, "unknown keys 'pasword'"),
    ({"bmcs": [{"node": "ng-w1", "power": {**REDFISH, "address": "http://bmc-w1.example"}}]}, "plain http"),
    ({"bmcs": [{"node": "ng-w1", "power": REDFISH}], "interval": 0.5}, "interval must be a number of seconds >= 1"),
    ({"bmcs": [{"node": "ng-w1", "power": REDFISH}], "interval": "5"}, "interval must be a number of seconds >= 1"),
    ({"bmcs": [{"node": "ng-w1", "power": REDFISH}], "max_concurrency": 0}, "max_concurrency must be an integer >= 1"),
])
def test_a_bad_configuration_stops_the_source_naming_the_problem_not_the_secret(source, args: dict, message: str) -> None:
    with pytest.raises(ValueError, match="bmc_power_poll: ") as raised:
        config(source, **args)
    assert message in str(raised.value)
    assert PASSWORD not in str(raised.value)


def test_main_polls_the_configured_bmcs(source, monkeypatch: pytest.MonkeyPatch) -> None:
    """main() wires the checked configuration to the poll loop (the readers replaced by scripted ones)."""
    seen = {}

    async def fake_poll(queue, bmcs, interval, max_concurrency, base_module):
        seen.update(nodes=[b.node for b in bmcs], interval=interval, max_concurrency=max_concurrency, base=base_module)

    monkeypatch.setitem(source["main"].__globals__, "poll", fake_poll)
    asyncio.run(source["main"](None, {"bmcs": [{"node": "ng-w1", "power": REDFISH}], "interval": 3, "max_concurrency": 2}))
    assert seen == {"nodes": ["ng-w1"], "interval": 3.0, "max_concurrency": 2, "base": base}


def test_installed_in_a_collections_path_it_imports_the_readers_from_there(tmp_path: Path) -> None:
    """As ansible-rulebook runs it: by path from <root>/ansible_collections/nodeguard/failover, with nothing else on
    sys.path (no conftest): the source finds the readers of the collection it is installed in."""
    link = tmp_path / "ansible_collections" / "nodeguard" / "failover"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO)
    installed = link / "extensions" / "eda" / "plugins" / "event_source" / "bmc_power_poll.py"
    script = (
        "import runpy, sys\n"
        f"ns = runpy.run_path({str(installed)!r})\n"
        "api = ns['_import_collection']()\n"
        "print(api['readers'].__file__)\n"
        f"print({str(tmp_path)!r} in sys.path)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    readers_file, on_path = done.stdout.split()
    assert readers_file == str(link / "plugins" / "module_utils" / "power" / "readers.py")
    assert on_path == "True"


def test_run_by_path_outside_a_collections_path_it_says_what_is_missing(tmp_path: Path) -> None:
    script = f"import runpy\nns = runpy.run_path({str(SOURCE)!r})\nns['_import_collection']()\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "needs the collection nodeguard.failover installed in a collections path" in done.stderr
