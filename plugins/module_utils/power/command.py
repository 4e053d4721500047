# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pluggable method for clouds and anything else: a command hook.

Contract (docs/runbooks/node-outage.md, "Cloud and custom power methods"):
- the program in ``command`` (an argv list, no shell) is run once per action;
- it reads one JSON object on stdin: {"action": "status"|"off"|"on", "node", "system_id", "address",
  "username", "password", "options"} (secrets only here, never in argv);
- it prints one JSON object on stdout: {"power": "on"|"off"|"unknown", "detail": "..."} and exits 0;
- any other exit code is an error, its last stderr line is shown.
"""

from __future__ import annotations

import json

from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import (
    OFF,
    ON,
    UNKNOWN,
    PowerError,
    PowerReading,
    last_line,
    run_process,
)


class CommandReader:
    method = "command"

    def __init__(self, config: dict, node: str, run=run_process):
        self.argv = list(config.get("command") or [])
        if not self.argv:
            raise PowerError("power type 'command' needs command (an argv list)")
        self.config = config
        self.node = node
        self.timeout = float(config.get("timeout") or 60)
        self.run = run

    def _call(self, action: str) -> dict:
        c = self.config
        request = {
            "action": action,
            "node": self.node,
            "system_id": c.get("system_id"),
            "address": c.get("address"),
            "username": c.get("username"),
            "password": c.get("password"),
            "options": c.get("agent_options") or {},
        }
        rc, out, err = self.run(self.argv, json.dumps(request), None, self.timeout)
        if rc != 0:
            raise PowerError(f"{self.argv[0]} {action} failed (exit {rc}): {last_line(err) or last_line(out)}")
        try:
            answer = json.loads(out)
        except ValueError as e:
            raise PowerError(f"{self.argv[0]} {action}: stdout is not one JSON object") from e
        if not isinstance(answer, dict):
            raise PowerError(f"{self.argv[0]} {action}: stdout is not one JSON object")
        return answer

    def status(self) -> PowerReading:
        answer = self._call("status")
        raw = str(answer.get("power", "")).lower()
        state = raw if raw in (ON, OFF) else UNKNOWN
        return PowerReading(state, self.method, f"{self.argv[0]}: {answer.get('detail') or raw}")

    def power_off(self) -> None:
        self._call("off")

    def power_on(self) -> None:
        self._call("on")
