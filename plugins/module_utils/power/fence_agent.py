# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A ClusterLabs fence agent (fence_redfish, fence_ipmilan, ...), the agents Pacemaker and medik8s run.

Options go to the agent on stdin as key=value lines (the agents' stonith interface), so the password
never appears in the process list. ``status`` exits 0 for ON and 2 for OFF; 2 also means "bad
arguments", so OFF is only believed together with the agent's "Status: OFF" line.

The action is ours alone: ``agent_options`` cannot set ``action`` (or its old name ``option``), and no
key or value may contain a line break (it would add options of its own). The agent runs with a scrubbed
environment: INHERITED_ENVIRONMENT plus REQUESTS_CA_BUNDLE when ca_cert is set.
Identity: the plug of this node (``agent_options.plug``, or ``system_id`` for fence_redfish); the agents
cannot report which machine a plug is, so without a plug nothing shows the device is this node's.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import (
    OFF,
    ON,
    Identity,
    PowerError,
    PowerReading,
    check_address,
    last_line,
    redact,
    run_process,
    scrubbed_env,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import is_uuid

_SAFE_AGENT = "fence_"
_RESERVED_OPTIONS = ("action", "option")  # "option" is the agents' old name for action
_PLUG_OPTIONS = ("plug", "port")  # "port" is the agents' old name for plug (ipport is the TCP port)


class FenceAgentReader:
    method = "fence_agent"

    def __init__(self, config: dict, run=run_process):
        self.agent = config.get("agent") or "fence_redfish"
        if not os.path.basename(self.agent).startswith(_SAFE_AGENT):
            raise PowerError(f"fence agent must be a fence_* program, got {self.agent!r}")
        check_address(config.get("address") or "")
        for key, value in (config.get("agent_options") or {}).items():
            if str(key).strip().lower() in _RESERVED_OPTIONS:
                raise PowerError(f"agent_options cannot set {key!r}: the action is chosen by nodeguard (status, off, on), never by the mapping")
            if any(c in f"{key}{value}" for c in "\r\n\0") or "=" in str(key):
                raise PowerError(f"agent_options {key!r}: keys and values must be single lines (and keys without '=')")
            if str(key).strip().lower() == "cipher" and str(value).strip() == "0":
                raise PowerError("agent_options cipher 0 refused: IPMI cipher suite 0 needs no password at all")
            if str(key).strip().lower() == "lanplus" and str(value).strip().lower() in ("0", "false", "no", "off"):
                raise PowerError("agent_options lanplus off refused: IPMI v1.5 sessions can be forged and read")
        for key in ("username", "password", "system_id"):
            if any(c in str(config.get(key) or "") for c in "\r\n\0"):
                raise PowerError(f"power.{key} must be a single line")
        self.config = config
        self.timeout = float(config.get("timeout") or 60)
        self.run = run

    def _plug(self) -> str:
        options = self.config.get("agent_options") or {}
        for key in _PLUG_OPTIONS:
            if str(options.get(key) or "").strip():
                return str(options[key]).strip()
        if self.config.get("system_id") and os.path.basename(self.agent) == "fence_redfish":
            return str(self.config["system_id"])
        return ""

    def identify(self) -> Identity:
        plug = self._plug()
        if not plug:
            raise PowerError(f"{self.agent} has no plug for this node (agent_options.plug, or system_id for fence_redfish)")
        kind = "system-uuid" if is_uuid(plug) else "plug"
        return Identity(kind, plug, f"{self.agent} plug {plug!r}")

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
        options["action"] = action  # last, and agent_options cannot name it (checked above)
        return options

    def _run(self, action: str) -> tuple:
        stdin_text = "".join(f"{k}={v}\n" for k, v in self._options(action).items())
        extra = {}
        if self.config.get("ca_cert"):
            extra["REQUESTS_CA_BUNDLE"] = self.config["ca_cert"]  # fence_redfish verifies through requests
        rc, out, err = self.run([self.agent], stdin_text, scrubbed_env(extra), self.timeout)
        secrets = (self.config.get("password"),)
        return rc, redact(out, secrets), redact(err, secrets)

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
