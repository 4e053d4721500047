# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-rulebook event source: watch Nodes and their Leases and emit node-down when a node's Ready condition
turns False or Unknown, node-up when it is True again.

Each kind (Nodes; Leases in kube-node-lease) is read the way Kubernetes controllers read it: one list, then a
watch from the list's resourceVersion. The watch asks for bookmarks (allowWatchBookmarks), so a quiet kind still
advances the resourceVersion; a watch that ends (the server's timeout, a dropped connection) resumes from the
last resourceVersion seen; a watch refused with 410 Gone (the version is no longer in the server's history)
lists again. The blocking reads run in one thread per kind; decisions are made in the event loop, in order.

Events carry only checked values: the node name (a valid Kubernetes node name, else the node is logged and
ignored), the Ready status (one of True, False, Unknown), the Lease state (renewing, silent or unknown, measured
on this process's monotonic clock: a renewal is a change of renewTime that this source saw, never a comparison of
the Lease's timestamp with our clock), an id and ``source: node_watch``. Nothing from an object is templated.

The storm rule is node-outage's own (incident/safety.check_storm, option max_unhealthy: a count or a share of all
nodes): a node-down while more nodes are unhealthy than max_unhealthy allows is emitted with ``refused: storm``.
Only nodes that have reported a Ready condition are counted: nodes still registering would otherwise make one
dead node look like a storm.

A node that stays down and has no out-of-service taint is reported again every ``rereport_interval`` seconds (on
this process's monotonic clock), its storm rule decided again: a run that failed for a transient reason, or a node
refused while a storm lasted, is not left down for good.

Liveness: when the environment variable NODEGUARD_NODE_WATCH_LIVENESS_DIR names a directory, each kind's thread
sets the time of the file of its name there (``nodes``, ``leases``) whenever it makes progress: a list answered, a
watch event or bookmark received, a watch request ended by the server. A probe that finds either file older than a
few watch requests knows that kind's watch is stuck or refused (deploy/rulebook/node-watch, docs/in-cluster-rulebooks.md).

Like bmc_power_poll, the source imports the collection's Python code (``ansible_collections.nodeguard.failover``)
from the collections path it is installed in: run it by FQCN, ``nodeguard.failover.node_watch``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

DOCUMENTATION = r"""
---
short_description: Watch Nodes and their Leases; emit node-down (Ready False or Unknown) and node-up (Ready True again).
description:
  - Emits C(nodeguard_node_event) with keys node, state (down or up), ready (True, False or Unknown), lease
    (renewing, silent or unknown), event_id and source (node_watch). A node-down while more nodes are unhealthy
    than I(max_unhealthy) allows also has refused (storm), nodes_down, nodes_total, allowed and down_nodes.
  - At start (and after a relist) every node that is already down is reported; a node is reported up only
    after it was reported down.
  - A node that stays down without the out-of-service taint (no run has acted on it) is reported down again every
    I(rereport_interval) seconds, its storm rule decided again.
  - The storm rule counts only nodes that have reported a Ready condition (a node still registering is neither
    healthy nor down).
  - Needs the collection installed in a collections path and the kubernetes Python client.
  - With the environment variable E(NODEGUARD_NODE_WATCH_LIVENESS_DIR) set to a directory, the files C(nodes) and
    C(leases) there get a new modification time whenever that kind's watch makes progress (a liveness signal).
options:
  kubeconfig:
    description: Path of a kubeconfig. Empty or absent, the in-cluster service account, else ~/.kube/config.
    type: str
  context:
    description: The kubeconfig context to use. Empty or absent, the current context.
    type: str
  max_unhealthy:
    description:
      - node-outage's storm rule and option of the same name, in its unit, a count (C(2)) or a share of all nodes
        (C(40%), rounded down). Give both the same value (node-watch.yml passes node_outage_max_unhealthy to both).
    type: str
    default: "40%"
  watch_timeout:
    description: Seconds one watch request lasts before the server ends it and the source resumes (30 to 3600).
    type: int
    default: 300
  rereport_interval:
    description:
      - Seconds between two reports of a node that stays down and untainted (60 to 86400). Longer than one
        node-outage run (its proof timeout and its steps), so a node is not reported again while its run goes on.
    type: int
    default: 300
"""

EXAMPLES = r"""
- nodeguard.failover.node_watch:
    kubeconfig: /etc/nodeguard/eda/kubeconfig
    max_unhealthy: "{{ node_outage_max_unhealthy }}"
"""

# The arguments' JSON schema (draft 2020-12), checked before anything connects.
ARGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "nodeguard.failover.node_watch arguments",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "kubeconfig": {"type": ["string", "null"], "maxLength": 4096},
        "context": {"type": ["string", "null"], "maxLength": 253},
        "max_unhealthy": {"type": ["string", "integer"], "pattern": r"^\s*\d+\s*%?\s*$", "minimum": 0, "default": "40%"},
        "watch_timeout": {"type": "integer", "minimum": 30, "maximum": 3600, "default": 300},
        "rereport_interval": {"type": "integer", "minimum": 60, "maximum": 86400, "default": 300},
    },
}

logger = logging.getLogger("nodeguard.failover.node_watch")

LEASE_NAMESPACE = "kube-node-lease"
READY_STATES = ("True", "False", "Unknown")
BACKOFF_FIRST, BACKOFF_MAX = 1.0, 30.0
RECHECK_SECONDS = 5.0  # how often the event loop looks for nodes due to be reported again when nothing else happens
LIVENESS_ENV = "NODEGUARD_NODE_WATCH_LIVENESS_DIR"


# extensions/eda/plugins/collection_code.py, loaded by its path: ansible-rulebook runs this file by path, not as a package
_spec = importlib.util.spec_from_file_location("nodeguard_eda_collection_code", Path(os.path.abspath(__file__)).parents[1] / "collection_code.py")
collection_code = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(collection_code)


def _import_collection() -> dict[str, Any]:
    """The collection's name rule, storm rule and cluster client, from the collections path this file is installed in."""
    found = collection_code.import_module_utils(
        __file__,
        "nodeguard.failover.node_watch",
        {"nodes": "incident.nodes", "safety": "incident.safety", "errors": "incident.errors", "client": "k8s.client", "names": "k8s.names"},
    )
    return {
        "names": found["names"],
        "nodes": found["nodes"],
        "safety": found["safety"],
        "RefusedError": found["errors"].RefusedError,
        "client": found["client"],
    }


def checked_args(args: dict, api: dict) -> dict[str, Any]:
    """The arguments with defaults, checked against ARGS_SCHEMA and the storm rule; ValueError naming what is wrong."""
    import jsonschema  # ansible-rulebook's own dependency

    given = {key: value for key, value in args.items() if not key.startswith("eda_")}  # ansible-rulebook's own (eda_feedback_queue)
    for key in ("kubeconfig", "context"):
        if given.get(key) == "":
            given[key] = None  # an empty variable means "not set"
    errors = sorted(jsonschema.Draft202012Validator(ARGS_SCHEMA).iter_errors(given), key=lambda e: list(e.path))
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "arguments"
        raise ValueError(f"node_watch: {where}: {errors[0].message[:300]}")
    checked = {key: spec.get("default") for key, spec in ARGS_SCHEMA["properties"].items()}
    checked.update(given)
    checked["max_unhealthy"] = str(checked["max_unhealthy"]).strip()
    try:
        api["safety"].allowed_unhealthy(checked["max_unhealthy"], 1)
    except api["RefusedError"] as e:
        raise ValueError(f"node_watch: max_unhealthy: {e}") from None
    return checked


class Gone(Exception):
    """The server no longer has the requested resourceVersion (HTTP 410, or a watch ERROR event with code 410)."""


class Watch:
    """List one kind, then watch it from the list's resourceVersion for ever (until ``stop`` is set).

    ``lister()`` returns (items, resourceVersion); ``watcher(resource_version)`` yields the watch's events as dicts
    ({"type", "object"}) and raises Gone on a 410. ``deliver(kind, type, obj)`` receives "LIST" with the items, then
    "ADDED", "MODIFIED" and "DELETED" with one object; bookmarks only move the resourceVersion on.
    ``progress()`` is called after each answered list, each event or bookmark, and each watch the server ended.
    """

    def __init__(
        self, kind: str, lister: Callable, watcher: Callable, deliver: Callable, sleep: Callable = time.sleep, progress: Callable[[], None] = lambda: None
    ):
        self.kind = kind
        self.lister = lister
        self.watcher = watcher
        self.deliver = deliver
        self.sleep = sleep
        self.progress = progress
        self.resource_version: str | None = None  # None: list (again) before watching
        self.backoff = BACKOFF_FIRST

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                if self.resource_version is None:
                    items, self.resource_version = self.lister()
                    logger.info("node_watch: listed %d %s at resourceVersion %s", len(items), self.kind, self.resource_version)
                    self.progress()
                    self.deliver(self.kind, "LIST", items)
                self._watch_once(stop)
                self.progress()
                self.backoff = BACKOFF_FIRST
            except Gone:
                logger.warning("node_watch: %s resourceVersion %s is gone (410); listing again", self.kind, self.resource_version)
                self.resource_version = None
            except Exception as e:  # noqa: BLE001 - any failure: wait, then resume from the last resourceVersion
                status = getattr(e, "status", None)  # an ApiException's HTTP status (403: the RBAC of docs/eda.md is missing)
                what = f"{type(e).__name__}, HTTP {status}" if isinstance(status, int) else type(e).__name__
                logger.warning("node_watch: %s watch failed (%s); retrying in %.0f s", self.kind, what, self.backoff)
                self.sleep(self.backoff)
                self.backoff = min(self.backoff * 2, BACKOFF_MAX)

    def _watch_once(self, stop: threading.Event) -> None:
        """One watch request from the current resourceVersion, until the server ends it."""
        for event in self.watcher(self.resource_version):
            if stop.is_set():
                return
            kind = event.get("type") if isinstance(event, dict) else None
            obj = event.get("object") if isinstance(event, dict) else None
            if not isinstance(obj, dict):
                continue
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise Gone()
                raise RuntimeError(f"watch ERROR {obj.get('code')}")
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if isinstance(version, str) and version:
                self.resource_version = version
            self.progress()
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self.deliver(self.kind, kind, obj)
            # BOOKMARK: only the resourceVersion moves on


class Tracker:
    """What the source knows of the cluster, and the events it decides on. Runs in the event loop only."""

    def __init__(self, api: dict, max_unhealthy: str, clock: Callable[[], float] = time.monotonic, rereport_seconds: float = 300):
        self.api = api
        self.max_unhealthy = max_unhealthy
        self.clock = clock
        self.rereport_seconds = rereport_seconds
        self.nodes: dict[str, dict] = {}  # checked name -> the Node object
        self.down: set[str] = set()  # nodes reported down (or refused as a storm) and not up since
        self.reported: dict[str, float] = {}  # node in down -> when it was last reported (our monotonic clock)
        self.leases: dict[str, dict] = {}  # node name -> {"renew", "changed" (monotonic or None), "since", "duration"}

    def handle(self, kind: str, change: str, obj: Any) -> list[dict]:
        if kind == "leases":
            if change == "LIST":
                self.leases = {}
                for lease in obj:
                    self._lease(lease, listed=True)
            elif change == "DELETED":
                self.leases.pop(((obj.get("metadata") or {}).get("name")), None)
            else:
                self._lease(obj, listed=False)
            return []
        if change == "LIST":
            self.nodes = {}
            for node in obj:
                name = self._name(node)
                if name:
                    self.nodes[name] = node
            self.down &= set(self.nodes)  # a node deleted while we did not watch is forgotten
            self.reported = {name: at for name, at in self.reported.items() if name in self.down}
            return [e for e in (self._decide(name) for name in sorted(self.nodes)) if e]
        name = self._name(obj)
        if not name:
            return []
        if change == "DELETED":
            self.nodes.pop(name, None)
            self.down.discard(name)
            self.reported.pop(name, None)
            logger.info("node_watch: %s deleted", name)
            return []
        self.nodes[name] = obj
        event = self._decide(name)
        return [event] if event else []

    def _name(self, obj: dict) -> str | None:
        name = (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None
        why = self.api["names"].why_not_node_name(name)
        if why:
            logger.warning("node_watch: ignoring a Node: %s", why)
            return None
        return name

    def _lease(self, lease: dict, listed: bool) -> None:
        name = (lease.get("metadata") or {}).get("name")
        spec = lease.get("spec") or {}
        if not isinstance(name, str):
            return
        now = self.clock()
        known = self.leases.get(name)
        renew = spec.get("renewTime")
        duration = spec.get("leaseDurationSeconds")
        duration = duration if isinstance(duration, int) and not isinstance(duration, bool) and duration > 0 else 40
        if known is None:
            self.leases[name] = {"renew": renew, "changed": None if listed else now, "since": now, "duration": duration}
        elif renew != known["renew"]:
            known.update(renew=renew, changed=now, duration=duration)

    def lease_state(self, name: str) -> str:
        """renewing: we saw a renewal within its duration; silent: we have seen none for longer than it; else unknown."""
        lease = self.leases.get(name)
        if lease is None:
            return "unknown"
        now = self.clock()
        if lease["changed"] is not None and now - lease["changed"] <= lease["duration"]:
            return "renewing"
        if now - (lease["changed"] if lease["changed"] is not None else lease["since"]) > lease["duration"]:
            return "silent"
        return "unknown"

    def _decide(self, name: str) -> dict | None:
        if self.api["nodes"].ready_condition(self.nodes[name]) is None:
            return None  # a Node not yet reported on (no Ready condition): the node controller sets Unknown in time
        ready = self.api["nodes"].ready_status(self.nodes[name])
        if ready not in READY_STATES:
            logger.warning("node_watch: %s: Ready status %s is not True, False or Unknown; ignored", name, self.api["names"].shown(ready))
            return None
        if ready == "True":
            if name not in self.down:
                return None
            self.down.discard(name)
            self.reported.pop(name, None)
            logger.info("node_watch: %s is Ready again: node-up", name)
            return self._event(name, "up", ready)
        if name in self.down:
            return None
        self.down.add(name)
        return self._report_down(name, ready, "node-down")

    def still_down(self) -> list[dict]:
        """node-down again for each node reported down at least rereport_seconds ago that is still not Ready and has
        no out-of-service taint (no run acted on it), its storm rule decided again."""
        now, found = self.clock(), []
        for name in sorted(self.down):
            node = self.nodes.get(name)
            if node is None or now - self.reported.get(name, now) < self.rereport_seconds:
                continue
            ready = self.api["nodes"].ready_status(node)
            if ready not in ("False", "Unknown") or self.api["nodes"].has_out_of_service_taint(node):
                continue
            found.append(self._report_down(name, ready, f"node-down again (down and untainted {self.rereport_seconds:.0f} s after the last report)"))
        return found

    def _report_down(self, name: str, ready: str, what: str) -> dict:
        self.reported[name] = self.clock()
        try:
            self.api["safety"].check_storm(self._counted(), self.max_unhealthy)
        except self.api["RefusedError"] as e:
            if e.rule != "storm":
                raise
            return self._storm(name, ready)
        logger.info("node_watch: %s is Ready=%s: %s", name, ready, what)
        return self._event(name, "down", ready)

    def _counted(self) -> list[dict]:
        """The nodes the storm rule counts: those that have reported a Ready condition (one still registering is
        neither healthy nor down)."""
        return [node for node in self.nodes.values() if self.api["nodes"].ready_condition(node) is not None]

    def _storm(self, name: str, ready: str) -> dict:
        is_ready = self.api["nodes"].is_ready
        counted = {n: node for n, node in self.nodes.items() if self.api["nodes"].ready_condition(node) is not None}
        down_nodes = sorted(n for n, node in counted.items() if not is_ready(node))
        allowed = self.api["safety"].allowed_unhealthy(self.max_unhealthy, len(counted))
        logger.warning(
            "node_watch: %s is Ready=%s, but %d of %d nodes are down, more than max_unhealthy=%s allows (%d): storm",
            name,
            ready,
            len(down_nodes),
            len(counted),
            self.max_unhealthy,
            allowed,
        )
        event = self._event(name, "down", ready)
        event["nodeguard_node_event"].update(
            refused="storm",
            nodes_down=len(down_nodes),
            nodes_total=len(counted),
            allowed=allowed,
            down_nodes=down_nodes,
        )
        return event

    def _event(self, name: str, state: str, ready: str) -> dict:
        return {
            "nodeguard_node_event": {
                "node": name,
                "state": state,
                "ready": ready,
                "lease": self.lease_state(name),
                "event_id": f"watch-{uuid.uuid4().hex}",
                "source": "node_watch",
            }
        }


def _lines(response: Any) -> Iterator[dict]:
    """The JSON objects of a streamed watch response, one per line."""
    from kubernetes.watch.watch import iter_resp_lines

    try:
        for line in iter_resp_lines(response):
            if line.strip():
                yield json.loads(line)
    finally:
        response.close()
        response.release_conn()


def api_readers(list_call: Callable, timeout: int) -> tuple[Callable, Callable]:
    """(lister, watcher) for a kubernetes client list call (CoreV1Api.list_node, ...), reading raw JSON."""
    from kubernetes.client.exceptions import ApiException

    def lister() -> tuple[list, str]:
        response = list_call(_preload_content=False, _request_timeout=60)
        body = json.loads(response.data)
        return body.get("items") or [], body["metadata"]["resourceVersion"]

    def watcher(resource_version: str) -> Iterable[dict]:
        try:
            response = list_call(
                watch=True,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout,
                _preload_content=False,
                _request_timeout=(30, timeout + 30),
            )
        except ApiException as e:
            if e.status == 410:
                raise Gone() from None
            raise
        return _lines(response)

    return lister, watcher


def liveness(directory: str | None, kind: str) -> Callable[[], None]:
    """``progress`` for the Watch of ``kind``: set the time of ``<directory>/<kind>`` (created if missing); nothing
    without a directory. A failed write is logged and the file goes stale, so the probe reports it."""
    if not directory:
        return lambda: None
    path = Path(directory) / kind

    def touch() -> None:
        try:
            path.touch()
        except OSError as e:
            logger.warning("node_watch: cannot write the liveness file %s (%s)", path, e.strerror)

    return touch


async def main(queue: Any, args: dict[str, Any]) -> None:
    """ansible-rulebook's entry point: check the arguments (stop with a clear error if wrong), then watch for ever."""
    api = _import_collection()
    config = checked_args(args, api)
    from kubernetes import client as k8s

    api_client = api["client"].build_api_client({"kubeconfig": config["kubeconfig"], "context": config["context"]})
    core, leases = k8s.CoreV1Api(api_client), k8s.CoordinationV1Api(api_client)
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()

    def deliver(kind: str, change: str, obj: Any) -> None:
        loop.call_soon_threadsafe(inbox.put_nowait, (kind, change, obj))

    timeout = config["watch_timeout"]
    stop = threading.Event()
    alive = os.environ.get(LIVENESS_ENV)
    watches = [
        Watch("nodes", *api_readers(core.list_node, timeout), deliver, progress=liveness(alive, "nodes")),
        Watch("leases", *api_readers(lambda **kw: leases.list_namespaced_lease(LEASE_NAMESPACE, **kw), timeout), deliver, progress=liveness(alive, "leases")),
    ]
    for watch in watches:
        threading.Thread(target=watch.run, args=(stop,), name=f"node_watch-{watch.kind}", daemon=True).start()
    tracker = Tracker(api, config["max_unhealthy"], rereport_seconds=config["rereport_interval"])
    logger.info("node_watch: watching Nodes and Leases (max_unhealthy=%s)", config["max_unhealthy"])
    try:
        while True:
            try:
                kind, change, obj = await asyncio.wait_for(inbox.get(), timeout=RECHECK_SECONDS)
                found = tracker.handle(kind, change, obj)
            except asyncio.TimeoutError:  # noqa: UP041 - ansible-rulebook may run on Python < 3.11; nothing changed meanwhile
                found = []
            for event in found + tracker.still_down():
                await queue.put(event)
    finally:
        stop.set()  # each thread ends after its current watch request (a daemon: it never holds the process)
