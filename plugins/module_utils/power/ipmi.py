# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IPMI chassis power status through ipmitool; the password travels in IPMI_PASSWORD (-E), not argv."""

from __future__ import annotations

import os

from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import (
    OFF,
    ON,
    UNKNOWN,
    PowerError,
    PowerReading,
    last_line,
    run_process,
)


class IpmiReader:
    method = "ipmi"

    def __init__(self, config: dict, run=run_process):
        if not config.get("address"):
            raise PowerError("ipmi needs address")
        self.config = config
        self.timeout = float(config.get("timeout") or 10)
        self.run = run

    def _ipmitool(self, *command) -> str:
        c = self.config
        argv = ["ipmitool", "-I", c.get("interface") or "lanplus", "-H", c["address"]]
        if c.get("port"):
            argv += ["-p", str(c["port"])]
        if c.get("cipher") is not None:
            argv += ["-C", str(c["cipher"])]
        argv += ["-U", c.get("username") or "", "-E", "-N", str(int(self.timeout)), "-R", "1"]
        env = dict(os.environ, IPMI_PASSWORD=c.get("password") or "")
        rc, out, err = self.run(argv + list(command), "", env, self.timeout * 2 + 5)
        if rc != 0:
            message = last_line(err) or last_line(out) or f"exit code {rc}"
            raise PowerError(f"ipmitool {c['address']}: {message}")
        return out

    def status(self) -> PowerReading:
        line = last_line(self._ipmitool("chassis", "power", "status"))
        lowered = line.lower()
        state = OFF if lowered.endswith(" off") else ON if lowered.endswith(" on") else UNKNOWN
        return PowerReading(state, self.method, f"{self.config['address']}: {line}")

    def power_off(self) -> None:
        self._ipmitool("chassis", "power", "off")

    def power_on(self) -> None:
        self._ipmitool("chassis", "power", "on")
