# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pluggable method for clouds and anything else: a command hook.

Contract (docs/runbooks/node-outage.md, "Cloud and custom power methods"):
- the program in ``command`` (an argv list, no shell) is run once per action;
- it reads one JSON object on stdin: {"action": "status"|"off"|"on", "node", "system_id", "address",
  "username", "password", "options"} (secrets only here, never in argv);
- it prints one JSON object on stdout: {"power": "on"|"off"|"unknown", "detail": "...", "system_uuid": "..."}
  and exits 0; ``system_uuid`` (optional, for "status") is the machine's SMBIOS UUID as the cloud reports it,
  compared with the Node's systemUUID (identity.py); a hook that cannot report one needs the node's
  identity_unverifiable_reason;
- any other exit code is an error, its last stderr line is shown;
- the password and every secret-like ``options`` value (base.secret_values) are masked in whatever it says;
- it runs with a scrubbed environment (INHERITED_ENVIRONMENT in base.py), nothing else of ours.
"""

from __future__ import annotations

import json

from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import (
    OFF,
    ON,
    UNKNOWN,
    Identity,
    PowerError,
    PowerReading,
    check_address,
    last_line,
    redact,
    run_process,
    scrubbed_env,
    secret_values,
)


class CommandReader:
    method = "command"

    def __init__(self, config: dict, node: str, run=run_process):
        self.argv = list(config.get("command") or [])
        if not self.argv:
            raise PowerError("power type 'command' needs command (an argv list)")
        check_address(config.get("address") or "")
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
        rc, out, err = self.run(self.argv, json.dumps(request), scrubbed_env(), self.timeout)
        if rc != 0:
            message = last_line(err) or last_line(out)
            raise PowerError(redact(f"{self.argv[0]} {action} failed (exit {rc}): {message}", secret_values(c)))
        try:
            answer = json.loads(out)
        except ValueError:
            raise PowerError(f"{self.argv[0]} {action}: stdout is not one JSON object") from None
        if not isinstance(answer, dict):
            raise PowerError(f"{self.argv[0]} {action}: stdout is not one JSON object")
        return answer

    def status(self) -> PowerReading:
        answer = self._call("status")
        raw = str(answer.get("power", "")).lower()
        state = raw if raw in (ON, OFF) else UNKNOWN
        detail = redact(answer.get("detail") or raw, secret_values(self.config))
        return PowerReading(state, self.method, f"{self.argv[0]}: {detail}")

    def identify(self) -> Identity:
        reported = redact(str(self._call("status").get("system_uuid") or "").strip(), secret_values(self.config))
        if not reported:
            raise PowerError(f"{self.argv[0]} reports no system_uuid for {self.node}")
        return Identity("system-uuid", reported, f"{self.argv[0]} system_uuid {reported}")

    def power_off(self) -> None:
        self._call("off")

    def power_on(self) -> None:
        self._call("on")
