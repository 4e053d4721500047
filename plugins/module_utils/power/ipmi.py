# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IPMI chassis power status and system GUID through ipmitool.

IPMI v2.0 (``lanplus``) only, with a cipher suite that authenticates, checks integrity and encrypts:
v1.5 (``lan``) and cipher suite 0 let anyone on the BMC network forge or read the session.
The password travels in IPMI_PASSWORD (-E), not argv; ipmitool gets a scrubbed environment.
"""

from __future__ import annotations

import re

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

# RAKP-HMAC-SHA1/MD5/SHA256 with an integrity algorithm and AES-CBC-128 confidentiality.
SAFE_CIPHER_SUITES = (3, 8, 12, 17)
_GUID = re.compile(r"GUID\s*:\s*([0-9a-fA-F-]{32,36})")


def check_ipmi_cipher(cipher, what: str) -> None:
    """Refuse a cipher suite that is not one of SAFE_CIPHER_SUITES (also for fence_ipmilan, fence_agent.py)."""
    text = str(cipher).strip()
    if not text.isdigit() or int(text) not in SAFE_CIPHER_SUITES:
        shown = text if text.isdigit() else "that is not a number"
        raise PowerError(
            f"{what} {shown} refused: it lacks authentication, integrity or encryption "
            f"(cipher 0 needs no password at all); use one of {', '.join(map(str, SAFE_CIPHER_SUITES))}"
        )


class IpmiReader:
    method = "ipmi"

    def __init__(self, config: dict, run=run_process):
        if not config.get("address"):
            raise PowerError("ipmi needs address")
        check_address(config["address"])
        interface = config.get("interface") or "lanplus"
        if interface != "lanplus":
            raise PowerError(f"ipmi interface {interface!r} refused: only lanplus (IPMI v2.0); v1.5 'lan' sessions can be forged and read")
        if config.get("cipher") is not None:
            check_ipmi_cipher(config["cipher"], "ipmi cipher suite")
        self.config = config
        self.timeout = float(config.get("timeout") or 10)
        self.run = run

    def _ipmitool(self, *command) -> str:
        c = self.config
        argv = ["ipmitool", "-I", "lanplus", "-H", c["address"]]
        if c.get("port"):
            argv += ["-p", str(c["port"])]
        if c.get("cipher") is not None:
            argv += ["-C", str(c["cipher"])]
        argv += ["-U", c.get("username") or "", "-E", "-N", str(int(self.timeout)), "-R", "1"]
        env = scrubbed_env({"IPMI_PASSWORD": c.get("password") or ""})
        rc, out, err = self.run(argv + list(command), "", env, self.timeout * 2 + 5)
        if rc != 0:
            message = last_line(err) or last_line(out) or f"exit code {rc}"
            raise PowerError(redact(f"ipmitool {c['address']}: {message}", secret_values(c)))
        return out

    def identify(self) -> Identity:
        """The BMC's system GUID (Get System GUID, ``ipmitool mc guid``)."""
        out = self._ipmitool("mc", "guid")
        found = _GUID.search(out)
        if not found:
            raise PowerError(f"ipmitool {self.config['address']}: no system GUID in the answer to mc guid")
        return Identity("system-uuid", found.group(1), f"ipmi {self.config['address']} system GUID {found.group(1)}")

    def status(self) -> PowerReading:
        line = redact(last_line(self._ipmitool("chassis", "power", "status")), secret_values(self.config))
        lowered = line.lower()
        state = OFF if lowered.endswith(" off") else ON if lowered.endswith(" on") else UNKNOWN
        return PowerReading(state, self.method, f"{self.config['address']}: {line}")

    def power_off(self) -> None:
        self._ipmitool("chassis", "power", "off")

    def power_on(self) -> None:
        self._ipmitool("chassis", "power", "on")
