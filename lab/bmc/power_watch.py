"""Notice every power change of the lab's nodes, including those behind the BMC's back.

A node's power is its container (container_power.py). The watcher follows `podman events`: a
container's `died` is a power-off (a Redfish ForceOff, `podman kill`, a crash, IPMI), its `start` a
power-on, each with podman's own timestamp, within a fraction of a second. Events are read in
order in one thread, so a quick off-and-on is reported as both, in that order.

The first reading of each node is the baseline, not an event. Every RECONCILE_SECONDS (and
whenever `podman events` has to be restarted) the same thread reads each container's state and
reports what changed since, so a lost podman event makes a late event, not a missing one.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable

import container_power

RECONCILE_SECONDS = 10.0
RESTART_PAUSE_SECONDS = 1.0
# podman event status -> power state; the others (create, init, kill, cleanup, remove, pause...) change no power.
POWER_OF_STATUS = {"start": "On", "died": "Off"}
PODMAN_EVENTS = ("podman", "events", "--filter", "type=container", "--format", "{{json .}}")
# bmc.sh stops the emulator with TERM (KILL after 5 s): neither runs our cleanup, and an orphaned
# `podman events` would run until its next write fails. The kernel kills it when its parent (our
# watcher thread, which lives as long as the process) is gone: PR_SET_PDEATHSIG, set by util-linux's
# setpriv before it executes podman.
DIE_WITH_US = ("setpriv", "--pdeathsig", "KILL", "--")

log = logging.getLogger("nodeguard.bmc.events")


def event_time(text: object) -> datetime.datetime:
    """podman's RFC 3339 time with nanoseconds ('2026-11-23T07:52:37.541611658Z'); now if unreadable."""
    if isinstance(text, str):
        head, dot, rest = text.partition(".")
        if dot:  # keep microseconds: Python parses at most 6 digits
            digits = len(rest) - len(rest.lstrip("0123456789"))
            text = f"{head}.{rest[:min(digits, 6)]}{rest[digits:]}"
        try:
            return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(datetime.UTC)
        except ValueError:
            pass
    return datetime.datetime.now(datetime.UTC)


class PowerWatcher(threading.Thread):
    """Calls on_change(system, "On"|"Off", when) for each power change of the watched containers."""

    def __init__(self, containers: dict[str, str],
                 on_change: Callable[[str, str, datetime.datetime], None]):
        super().__init__(name="power-watch", daemon=True)
        self.containers = dict(containers)  # container name -> system name
        self.on_change = on_change
        self.power: dict[str, str] = {}  # container -> last known power; absent until the baseline

    def run(self) -> None:
        while True:
            try:
                self._follow_podman_events()
            except Exception as e:  # noqa: BLE001 - keep watching; the reconcile after the restart catches up
                log.error("power watch: %s: %s", type(e).__name__, e)
            time.sleep(RESTART_PAUSE_SECONDS)

    def _follow_podman_events(self) -> None:
        process = subprocess.Popen([*DIE_WITH_US, *PODMAN_EVENTS], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        try:
            buffer = b""
            next_reconcile = 0.0  # now: podman events is (being) subscribed, no change falls between the two
            while True:
                if time.monotonic() >= next_reconcile:
                    self.reconcile()
                    next_reconcile = time.monotonic() + RECONCILE_SECONDS
                ready, _w, _x = select.select([process.stdout], [], [], RECONCILE_SECONDS)
                if not ready:
                    continue
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:
                    raise RuntimeError(f"podman events exited ({process.wait()})")
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    self.handle(line)
        finally:
            process.kill()
            process.wait()

    def handle(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        if not isinstance(event, dict) or event.get("Type", "container") != "container":
            return
        container, power = event.get("Name"), POWER_OF_STATUS.get(event.get("Status"))
        if container in self.containers and power:
            self._observe(container, power, event_time(event.get("Time")))

    def reconcile(self) -> None:
        for container in self.containers:
            try:
                power = "On" if container_power.is_powered(container) else "Off"
            except container_power.PowerError as e:
                log.warning("power watch: %s", e)
                continue
            self._observe(container, power, datetime.datetime.now(datetime.UTC))

    def _observe(self, container: str, power: str, when: datetime.datetime) -> None:
        before = self.power.get(container)
        self.power[container] = power
        if before is not None and before != power:
            try:
                self.on_change(self.containers[container], power, when)
            except Exception as e:  # noqa: BLE001 - one unpublished change must not stop the watch
                log.error("power watch: %s %s not published: %s: %s", container, power, type(e).__name__, e)
