# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is a restarted component healthy on this node? (module component_health_info)

A restarted component is healthy when it is a stable process (the same PID, not restarted, over the stable
time: a component that refuses its configuration exits at once and its supervisor starts it again and again)
and it answers "ok" on its health endpoint, and is still that same process after it answered. The checks
run on the node; what the API server sees (a renewed Lease, a Ready node) is checked from the controller.

Durations are measured on this node's monotonic clock, by the collection's one poll loop and Clock
(k8s/waiters.py). The reader of the process and the health endpoint are passed in, so tests give fakes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.waiters import Clock, wait_until
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers.flags import processes_with_flags


class ComponentHealthError(NodeguardError):
    """The restarted component is not healthy; the message says what was seen."""


@dataclass(frozen=True)
class ProcessState:
    """systemd's view of a unit (systemctl show): ActiveState, SubState, MainPID, NRestarts."""

    active_state: str
    sub_state: str
    main_pid: int
    restarts: int

    @classmethod
    def parse(cls, text: str) -> ProcessState:
        """The output of `systemctl show -p ActiveState -p SubState -p MainPID -p NRestarts UNIT`."""
        fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)

        def number(name):
            value = fields.get(name, "").strip()
            return int(value) if value.isdigit() else 0

        return cls(fields.get("ActiveState", "unknown"), fields.get("SubState", "unknown"), number("MainPID"), number("NRestarts"))

    def running(self) -> bool:
        return self.active_state == "active" and self.main_pid > 0

    def same_process(self, first: ProcessState) -> bool:
        return self.running() and self.main_pid == first.main_pid and self.restarts == first.restarts

    def shown(self) -> str:
        return f"PID {self.main_pid} ({self.active_state}/{self.sub_state}, NRestarts={self.restarts})"

    def as_dict(self) -> dict:
        return {"active_state": self.active_state, "sub_state": self.sub_state, "main_pid": self.main_pid, "restarts": self.restarts}


@dataclass(frozen=True)
class Answer:
    """What the health endpoint answered: the HTTP status (0 without an answer), the body, or why there is none."""

    status: int
    body: str = ""
    error: str = ""

    def ok(self) -> bool:
        return self.status == 200 and self.body.strip() == "ok"

    def shown(self) -> str:
        if self.error:
            return self.error
        return f"HTTP {self.status}: {self.body.strip()[:200]}"


def check_stable(label: str, read_process, stable_seconds: float, clock: Clock | None = None) -> ProcessState:
    """Read the process, wait stable_seconds, read it again: the same running process, or ComponentHealthError.

    label names the process in messages (the systemd unit)."""
    clock = clock or Clock()
    first = read_process()
    clock.sleep(stable_seconds)
    later = read_process()
    if not first.running() or not later.same_process(first):
        raise ComponentHealthError(
            f"{label} is not a stable process: {first.shown()} after the restart, {later.shown()} {stable_seconds:g} s later "
            f"(it exited and was started again: crash-looping)"
        )
    return first


def check_same_process(label: str, read_process, first: ProcessState, when: str) -> ProcessState:
    """The process is still the first one (read at `when`), or ComponentHealthError."""
    now = read_process()
    if not now.same_process(first):
        raise ComponentHealthError(
            f"{label} is not a stable process: {first.shown()} after the restart, {now.shown()} {when} (it exited and was started again)"
        )
    return now


def wait_until_ok(name: str, url: str, ask, timeout: float, interval: float = 2, clock: Clock | None = None) -> Answer:
    """Ask the health endpoint until it answers 200 "ok"; ComponentHealthError with its last answer after timeout s."""
    answer = None

    def answered_ok() -> bool:
        nonlocal answer
        answer = ask(url)
        return answer.ok()

    if not wait_until(answered_ok, timeout, interval, clock):
        raise ComponentHealthError(f"the {name} did not answer ok on {url} within {timeout:g} s ({answer.shown()})")
    return answer


def check(name: str, label: str, read_process, stable_seconds: float, url: str, ask, timeout: float, clock: Clock | None = None) -> dict:
    """The whole node-side check of the restarted component `name` (its process named `label`): a stable process,
    then ok on the health endpoint (when url is given), then still the same process.
    Returns the process and the answer; raises ComponentHealthError with what it saw."""
    clock = clock or Clock()
    first = check_stable(label, read_process, stable_seconds, clock)
    answer = wait_until_ok(name, url, ask, timeout, clock=clock) if url else None
    last = check_same_process(label, read_process, first, "once it answered ok" if url else "at the end")
    return {"process": last.as_dict(), "answer": answer.body.strip() if answer else ""}


def check_still(label: str, read_process, pid: int, when: str) -> dict:
    """The process is still PID `pid` (read at `when`, for example once the node was Ready), or ComponentHealthError."""
    now = read_process()
    if not (now.running() and now.main_pid == pid):
        raise ComponentHealthError(f"{label} is not a stable process: PID {pid} after the restart, {now.shown()} {when} (it exited and was started again)")
    return {"process": now.as_dict(), "answer": ""}


# ---------------------------------------------------------------- a process found by its flags (static pods, RKE2)
#
# A static pod's component has no unit of its own: the process is the one whose command line carries the new
# flags (renderers.flags.processes_with_flags), read from `pgrep -a -f <component>` lines (PID, then the words).
# An old process can still answer the health endpoint while the kubelet has not yet picked up the new manifest,
# so the endpoint answering is not enough. The check is made in two steps so the controller can wait for the
# controller-manager's leader lease in between: answers() then still().


def answers(name: str, url: str, ask, read_lines, flags: dict | None, timeout: float, interval: float, clock: Clock | None = None) -> dict:
    """Wait until the endpoint answers ok (when url), then until a process runs with `flags` (when read_lines).

    Returns the process as {"main_pid", "argv"} (empty without read_lines) and the answer."""
    clock = clock or Clock()
    answer = wait_until_ok(name, url, ask, timeout, interval, clock) if url else None
    process = {}
    if read_lines is not None:

        def runs_with_flags() -> bool:
            nonlocal process
            found = processes_with_flags(read_lines(), flags, name)
            if found:
                process = {"main_pid": int(found[0][0]), "argv": found[0][1:]}
            return bool(found)

        if not wait_until(runs_with_flags, timeout, interval, clock):
            # The command lines are not quoted: they can carry secrets.
            raise ComponentHealthError(f"no {name} process runs with the new flags within {timeout:g} s")
    return {"process": process, "answer": answer.body.strip() if answer else ""}


def still(name: str, pid: int | None, read_lines, url: str, ask, stable_seconds: float, after: str = "", clock: Clock | None = None) -> dict:
    """After stable_seconds, process `pid` still runs (when pid) and the endpoint still answers ok (when url)."""
    clock = clock or Clock()
    clock.sleep(stable_seconds)
    if pid is not None:
        pids = {line.split()[0] for line in read_lines() if line.split()}
        if str(pid) not in pids:
            counted_from = f"after {after}; " if after else ""
            raise ComponentHealthError(
                f"{name} is not a stable process: PID {pid} answered its health endpoint with the new flags but no longer runs "
                f"{stable_seconds:g} s later ({counted_from}it exited or was restarted: crash-looping)."
            )
    answer = None
    if url:
        answer = ask(url)
        if not answer.ok():
            raise ComponentHealthError(f"the {name} no longer answers ok on {url} {stable_seconds:g} s after it did ({answer.shown()})")
    return {"process": {"main_pid": pid} if pid is not None else {}, "answer": answer.body.strip() if answer else ""}
