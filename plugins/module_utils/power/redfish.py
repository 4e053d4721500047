# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Redfish ComputerSystem PowerState, natively over HTTPS with basic auth and verified TLS."""

from __future__ import annotations

import json

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import OFF, ON, UNKNOWN, PowerError, PowerReading

SYSTEMS = "/redfish/v1/Systems"


class RedfishReader:
    method = "redfish"

    def __init__(self, config: dict, fetch=None):
        self.address = (config.get("address") or "").rstrip("/")
        if not self.address.startswith(("https://", "http://")):
            raise PowerError(f"redfish address must be a URL like https://bmc.example:443, got {self.address!r}")
        self.system_id = config.get("system_id")
        self.username = config.get("username")
        self.password = config.get("password")
        self.validate_certs = config.get("validate_certs", True) is not False
        self.ca_cert = config.get("ca_cert")
        self.timeout = float(config.get("timeout") or 10)
        self.off_reset_type = config.get("off_reset_type") or "ForceOff"
        self.fetch = fetch or self._fetch

    def _fetch(self, method: str, path: str, body=None):
        url = path if path.startswith("http") else self.address + path
        try:
            response = open_url(
                url,
                method=method,
                data=json.dumps(body) if body is not None else None,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
                url_username=self.username,
                url_password=self.password,
                force_basic_auth=True,
                validate_certs=self.validate_certs,
                ca_path=self.ca_cert,
                timeout=self.timeout,
                use_proxy=False,
                use_netrc=False,
            )
            text = response.read()
        except HTTPError as e:
            if e.code in (401, 403):
                raise PowerError(f"redfish {self.address}: credentials refused (HTTP {e.code})") from e
            raise PowerError(f"redfish {method} {url}: HTTP {e.code} {e.reason}") from e
        except URLError as e:
            raise PowerError(f"redfish {self.address} unreachable: {e.reason}") from e
        except (OSError, ValueError) as e:  # timeouts, TLS errors, bad URL
            raise PowerError(f"redfish {self.address} unreachable: {e}") from e
        if not text:
            return {}
        try:
            return json.loads(text)
        except ValueError as e:
            raise PowerError(f"redfish {method} {url}: answer is not JSON") from e

    def _system_path(self) -> str:
        if self.system_id:
            return f"{SYSTEMS}/{self.system_id}"
        members = self.fetch("GET", SYSTEMS).get("Members") or []
        if len(members) != 1:
            raise PowerError(f"redfish {self.address} has {len(members)} systems; set system_id")
        return members[0]["@odata.id"]

    def status(self) -> PowerReading:
        path = self._system_path()
        system = self.fetch("GET", path)
        raw = system.get("PowerState")
        state = {"Off": OFF, "On": ON, "PoweringOn": ON, "PoweringOff": ON}.get(raw, UNKNOWN)
        return PowerReading(state, self.method, f"{self.address}{path} PowerState={raw}")

    def _reset(self, reset_type: str) -> None:
        path = self._system_path()
        system = self.fetch("GET", path)
        action = (system.get("Actions") or {}).get("#ComputerSystem.Reset") or {}
        target = action.get("target") or f"{path}/Actions/ComputerSystem.Reset"
        allowed = action.get("ResetType@Redfish.AllowableValues")
        if allowed and reset_type not in allowed:
            raise PowerError(f"redfish system {path} does not allow ResetType {reset_type} (allows {allowed})")
        self.fetch("POST", target, {"ResetType": reset_type})

    def power_off(self) -> None:
        self._reset(self.off_reset_type)

    def power_on(self) -> None:
        self._reset("On")
