"""The node watch's liveness signal (NODEGUARD_NODE_WATCH_LIVENESS_DIR): each kind's file gets a new time only when
that kind's watch makes progress, so a probe (deploy/rulebook/node-watch) sees a stuck or refused watch."""

from __future__ import annotations

import os
import runpy
import threading

import pytest
from test_node_watch import SOURCE, FakeServer, node


@pytest.fixture(scope="module")
def source() -> dict:
    """The source's namespace, loaded as ansible-rulebook loads it (runpy)."""
    return runpy.run_path(str(SOURCE))


def run(source, server: FakeServer, stop: threading.Event) -> list:
    """The Watch loop; returns, for each progress call, how many changes had been delivered by then."""
    delivered, marks = [], []
    watch = source["Watch"](
        "nodes", server.lister, server.watcher, lambda *change: delivered.append(change), sleep=lambda _s: None, progress=lambda: marks.append(len(delivered))
    )
    watch.run(stop)
    return marks


def test_progress_on_each_list_event_bookmark_and_ended_watch_never_on_a_failure(source) -> None:
    stop = threading.Event()
    server = FakeServer(
        [node("w1")],
        ["100"],
        [
            [
                {"type": "MODIFIED", "object": node("w1", "False", "105")},
                {"type": "BOOKMARK", "object": {"kind": "Node", "metadata": {"resourceVersion": "120"}}},
            ],
            ConnectionResetError(),
            [{"type": "ERROR", "object": {"code": 500}}],
            [],
        ],
        stop,
    )
    # the list and the event (each before its delivery), the bookmark, the watch's end; nothing for the two failures;
    # the last watch's end
    assert run(source, server, stop) == [0, 1, 2, 2, 2]


def test_a_watch_refused_every_time_makes_no_progress_after_its_list(source) -> None:
    stop = threading.Event()
    refused = type("ApiException", (Exception,), {"status": 403})
    server = FakeServer([node("w1")], ["7"], [refused(), refused(), refused()], stop)
    assert run(source, server, stop) == [0]


def test_liveness_sets_the_time_of_the_kinds_file(source, tmp_path) -> None:
    touch = source["liveness"](str(tmp_path), "leases")
    touch()
    path = tmp_path / "leases"
    os.utime(path, (1_000_000, 1_000_000))
    touch()
    assert path.stat().st_mtime > 1_000_000
    assert [p.name for p in tmp_path.iterdir()] == ["leases"]


def test_no_directory_no_file_and_an_unwritable_one_is_logged(source, tmp_path, caplog) -> None:
    source["liveness"]("", "nodes")()
    source["liveness"](None, "nodes")()
    source["liveness"](str(tmp_path / "missing"), "nodes")()
    assert "cannot write the liveness file" in caplog.text
    assert list(tmp_path.iterdir()) == []


def test_the_variable_name_is_the_one_the_deployment_sets(source) -> None:
    assert source["LIVENESS_ENV"] == "NODEGUARD_NODE_WATCH_LIVENESS_DIR"
