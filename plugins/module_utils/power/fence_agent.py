# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A ClusterLabs fence agent (fence_redfish, fence_ipmilan, ...), the agents Pacemaker and medik8s run.

Options go to the agent on stdin as key=value lines (the agents' stonith interface), so the password
never appears in the agent's argv. ``status`` exits 0 for ON and 2 for OFF; 2 also means "bad
arguments", so OFF is only believed together with the agent's "Status: OFF" line.

Held to the standard of the native readers (redfish.py, ipmi.py):
- The action is ours alone: ``agent_options`` cannot set ``action`` (or its old name ``option``).
- No value the agent gets may contain whitespace or a shell metacharacter, the password excepted:
  several agents paste values into a command line (fence_ipmilan: ``-C <cipher>`` in an ipmitool line
  split by shlex), so ``cipher: "3 chassis power cycle"`` would add a command of its own.
- The IPMI agents (fence_ipmilan and its aliases) always get ``lanplus=1`` (IPMI v2.0) and only a cipher
  suite that ipmi.py accepts; their own defaults are IPMI v1.5 (``-I lan``) and any cipher.
- Identity: a plug, port or ``system_id`` is an address (``System.Embedded.1``, ``1``, ``Self`` are the same
  on every BMC of a vendor), not an identity. A fence agent shows which machine a plug is only when its
  ``list`` action reports a UUID on the plug's line (``plug,alias``: fence_vmware_soap prints
  ``name,<BIOS UUID>``, fence_xenapi ``<uuid>,name``, fence_vbox ``name,<uuid>``). Without that the node's
  mapping needs ``identity_unverifiable_reason`` (identity.py).
The agent runs with a scrubbed environment: INHERITED_ENVIRONMENT plus REQUESTS_CA_BUNDLE when ca_cert is set.
"""

from __future__ import annotations

import os
import re
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
    secret_values,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import is_uuid
from ansible_collections.nodeguard.failover.plugins.module_utils.power.ipmi import check_ipmi_cipher

_SAFE_AGENT = "fence_"
_RESERVED_OPTIONS = ("action", "option")  # "option" is the agents' old name for action
_PLUG_OPTIONS = ("plug", "port")  # "port" is the agents' old name for plug (ipport is the TCP port)
# fence_ipmilan and the names it is installed under (fence-agents ships them as copies or links).
IPMI_AGENTS = ("fence_ipmilan", "fence_ipmilanplus", "fence_idrac", "fence_ilo3", "fence_ilo4", "fence_ilo5", "fence_imm")
# Whitespace and what a shell or shlex gives a meaning: quotes, escapes, separators, expansions, redirections.
_UNSAFE_VALUE = re.compile(r"[\s'\"\\`$;&|<>(){}\[\]*?!#~\x00-\x1f\x7f]")
# Only the password travels quoted by every agent (fence_ipmilan shell-quotes it; the others send it in a
# request or a login prompt), and passwords legitimately contain any character.
_PASSWORD_OPTIONS = ("password", "passwd")


def _is_ipmi_agent(agent: str) -> bool:
    return os.path.basename(agent) in IPMI_AGENTS


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
        self._options("status")  # every value checked now, before any agent runs

    def _plug(self) -> str:
        options = self.config.get("agent_options") or {}
        for key in _PLUG_OPTIONS:
            if str(options.get(key) or "").strip():
                return str(options[key]).strip()
        return ""

    def identify(self) -> Identity:
        """The UUID the agent's ``list`` action reports on this node's plug line; PowerError when it reports none."""
        plug = self._plug()
        if not plug:
            where = f"system_id {self.config['system_id']!r} is" if self.config.get("system_id") else "no plug is set, and an address is"
            raise PowerError(
                f"{self.agent} reports no UUID for this node: {where} an address, not an identity "
                f"(the native readers, type redfish or ipmi, read the machine's UUID)"
            )
        rc, out, err = self._run("list")
        separator = str((self.config.get("agent_options") or {}).get("separator") or ",")
        lines = [line.strip().split(separator) for line in out.splitlines() if line.strip()]
        mine = [fields for fields in lines if plug in (field.strip() for field in fields)]
        if rc != 0 or not mine:
            said = last_line(err) or last_line(out) or "nothing"
            raise PowerError(f"{self.agent} list (exit {rc}) does not report plug {plug!r} with a UUID ({said}): a plug is an address, not an identity")
        if len(mine) > 1:
            raise PowerError(f"{self.agent} list reports plug {plug!r} on {len(mine)} lines: which machine it is stays unclear")
        uuids = [field.strip() for field in mine[0] if is_uuid(field.strip())]
        if len(uuids) != 1:
            raise PowerError(f"{self.agent} list reports plug {plug!r} without a UUID ({separator.join(mine[0])}): a plug is an address, not an identity")
        return Identity("system-uuid", uuids[0], f"{self.agent} list reports plug {plug!r} as UUID {uuids[0]}")

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
        if _is_ipmi_agent(self.agent) and c.get("cipher") is not None:
            options["cipher"] = str(c["cipher"])
        for key, value in (c.get("agent_options") or {}).items():
            options[key] = str(value)
        if _is_ipmi_agent(self.agent):
            options["lanplus"] = "1"  # IPMI v2.0: fence_ipmilan's default is v1.5 (-I lan)
        if action == "list":
            for key in _PLUG_OPTIONS:
                options.pop(key, None)  # the whole list, then our plug's line in it
        options["action"] = action  # last, and agent_options cannot name it (checked above)
        for key, value in options.items():
            if key not in _PASSWORD_OPTIONS and _UNSAFE_VALUE.search(f"{key}{value}"):
                shown = "a value" if key in (c.get("agent_options") or {}) else repr(value)
                raise PowerError(
                    f"{self.agent} option {key!r} has whitespace or a shell metacharacter in {shown}; refused before the agent runs "
                    "(several agents paste option values into a command line)"
                )
        if _is_ipmi_agent(self.agent) and "cipher" in options:
            check_ipmi_cipher(options["cipher"], f"{os.path.basename(self.agent)} cipher suite")
        return options

    def _run(self, action: str) -> tuple:
        stdin_text = "".join(f"{k}={v}\n" for k, v in self._options(action).items())
        extra = {}
        if self.config.get("ca_cert"):
            extra["REQUESTS_CA_BUNDLE"] = self.config["ca_cert"]  # fence_redfish verifies through requests
        rc, out, err = self.run([self.agent], stdin_text, scrubbed_env(extra), self.timeout)
        secrets = secret_values(self.config)  # an agent that echoes its password or token shows it nowhere
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
