# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A ClusterLabs fence agent (fence_redfish, fence_ipmilan, ...), the agents Pacemaker and medik8s run.

Options go to the agent on stdin as key=value lines (the agents' stonith interface), so the password
never appears in the process list. ``status`` exits 0 for ON and 2 for OFF; 2 also means "bad
arguments", so OFF is only believed together with the agent's "Status: OFF" line.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import (
    OFF,
    ON,
    PowerError,
    PowerReading,
    last_line,
    run_process,
)

_SAFE_AGENT = "fence_"


class FenceAgentReader:
    method = "fence_agent"

    def __init__(self, config: dict, run=run_process):
        self.agent = config.get("agent") or "fence_redfish"
        if not os.path.basename(self.agent).startswith(_SAFE_AGENT):
            raise PowerError(f"fence agent must be a fence_* program, got {self.agent!r}")
        self.config = config
        self.timeout = float(config.get("timeout") or 60)
        self.run = run

    def _options(self, action: str) -> dict:
        c = self.config
        options = {"action": action}
        address = c.get("address") or ""
        if "://" in address:
            parts = urlsplit(address)
            options["ip"] = parts.hostname
            if parts.port:
                options["ipport"] = str(parts.port)
            if parts.scheme == "https":
                options["ssl_secure" if c.get("validate_certs", True) is not False else "ssl_insecure"] = "1"
        elif address:
            options["ip"] = address
        if c.get("port"):
            options["ipport"] = str(c["port"])
        if c.get("username"):
            options["username"] = c["username"]
        if c.get("password"):
            options["password"] = c["password"]
        if c.get("system_id") and os.path.basename(self.agent) == "fence_redfish":
            options["systems_uri"] = f"/redfish/v1/Systems/{c['system_id']}"
        for key, value in (c.get("agent_options") or {}).items():
            options[key] = str(value)
        return options

    def _run(self, action: str) -> tuple:
        stdin_text = "".join(f"{k}={v}\n" for k, v in self._options(action).items())
        env = dict(os.environ)
        if self.config.get("ca_cert"):
            env["REQUESTS_CA_BUNDLE"] = self.config["ca_cert"]  # fence_redfish verifies through requests
        return self.run([self.agent], stdin_text, env, self.timeout)

    def status(self) -> PowerReading:
        rc, out, err = self._run("status")
        line = last_line(out)
        if rc == 0 and "Status: ON" in out:
            return PowerReading(ON, self.method, f"{self.agent}: {line}")
        if rc == 2 and "Status: OFF" in out:
            return PowerReading(OFF, self.method, f"{self.agent}: {line}")
        raise PowerError(f"{self.agent} status failed (exit {rc}): {last_line(err) or line or 'no output'}")

    def _act(self, action: str) -> None:
        rc, out, err = self._run(action)
        if rc != 0:
            raise PowerError(f"{self.agent} {action} failed (exit {rc}): {last_line(err) or last_line(out)}")

    def power_off(self) -> None:
        self._act("off")

    def power_on(self) -> None:
        self._act("on")
