# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Redfish ComputerSystem PowerState and UUID, natively over HTTPS with basic auth and verified TLS.

Why not OpenStack's sushy: see the power doc fragment ("Redfish client"). In short, this reads three
resources (the Systems collection, one ComputerSystem, its Reset action); sushy would be a third-party
dependency of every controller and execution environment for that, and our own origin rule below would
still have to wrap it.

Credentials go only to the configured origin (scheme://host:port): a link from the BMC to any other origin
is refused, and redirects are not followed. Plain http only with allow_insecure_http. These rules live in
RedfishSession, the one Redfish transport of the collection (also used by redfish_events.py).
"""

from __future__ import annotations

import json
from typing import NamedTuple
from urllib.parse import urlsplit

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import (
    OFF,
    ON,
    UNKNOWN,
    Identity,
    PowerError,
    PowerReading,
    check_address,
    redact,
)

SYSTEMS = "/redfish/v1/Systems"
# Only these power a machine off without a reboot; PowerCycle, ForceRestart etc. would bring it back.
OFF_RESET_TYPES = ("ForceOff", "Off")


def _origin(url: str) -> tuple:
    parts = urlsplit(url)
    default = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


class RedfishHTTPError(PowerError):
    """The service answered with an HTTP error; ``status`` is its code (404: the resource is gone)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class RedfishAnswer(NamedTuple):
    status: int
    location: str  # the Location header (201 Created), "" when absent
    body: dict


def _service_message(error: HTTPError) -> str:
    """The Redfish error message of an HTTP error answer (``error.message`` or its first extended info), one line."""
    try:
        answer = json.loads(error.read() or b"{}")
    except (OSError, ValueError):
        return ""
    if not isinstance(answer, dict) or not isinstance(answer.get("error"), dict):
        return ""
    detail = answer["error"].get("@Message.ExtendedInfo") or []
    message = detail[0].get("Message") if detail and isinstance(detail[0], dict) else answer["error"].get("message")
    return " ".join(str(message or "").split())


class RedfishSession:
    """HTTPS requests to one Redfish service, by the collection's transport rules.

    Used by the power reader and the EventService subscriptions (redfish_events.py). ``secrets`` are more
    values (besides the password) that never appear in an error message, e.g. subscription headers.
    """

    def __init__(self, config: dict, secrets: tuple = ()):
        self.address = check_address((config.get("address") or "").rstrip("/"))
        scheme = urlsplit(self.address).scheme
        if scheme == "http" and not config.get("allow_insecure_http"):
            raise PowerError(
                f"redfish address {self.address} is plain http: the BMC password would cross the network readable; "
                "use https, or set allow_insecure_http: true for a lab that has no TLS"
            )
        if scheme not in ("https", "http") or not urlsplit(self.address).hostname:
            raise PowerError(f"redfish address must be a URL like https://bmc.example:443, got {self.address!r}")
        self.username = config.get("username")
        self.password = config.get("password")
        self.validate_certs = config.get("validate_certs", True) is not False
        self.ca_cert = config.get("ca_cert")
        self.timeout = float(config.get("timeout") or 10)
        self.secrets = (self.password, *secrets)

    def url(self, path: str) -> str:
        """Where ``path`` (from the config or from the BMC) points; only the configured origin is allowed."""
        if path.startswith("/") and not path.startswith("//"):
            return self.address + path
        if _origin(path) != _origin(self.address):
            shown = "{}://{}:{}".format(*_origin(path)) if "://" in path else "a relative link"
            raise PowerError(f"redfish {self.address} linked to {shown}: refused, credentials are sent only to the configured origin")
        return path

    def _open(self, method: str, url: str, data, headers: dict, timeout: float):
        """The open answer to one request by the transport rules (basic auth to the configured origin only, verified
        TLS, no proxy, no netrc, no redirect); errors as PowerError with every secret redacted."""
        try:
            return open_url(
                url,
                method=method,
                data=data,
                headers=headers,
                url_username=self.username,
                url_password=self.password,
                force_basic_auth=True,
                validate_certs=self.validate_certs,
                ca_path=self.ca_cert,
                timeout=timeout,
                use_proxy=False,
                use_netrc=False,
                follow_redirects="none",
            )
        except HTTPError as e:
            if e.code in (401, 403):
                raise RedfishHTTPError(f"redfish {self.address}: credentials refused (HTTP {e.code})", e.code) from None
            if 300 <= e.code < 400:
                raise RedfishHTTPError(f"redfish {method} {url}: HTTP {e.code} redirect not followed (credentials stay with {self.address})", e.code) from None
            said = redact(_service_message(e), self.secrets)[:300]  # redacted before it is cut: no half secret survives
            raise RedfishHTTPError(redact(f"redfish {method} {url}: HTTP {e.code} {e.reason}" + (f": {said}" if said else ""), self.secrets), e.code) from None
        except URLError as e:
            raise PowerError(redact(f"redfish {self.address} unreachable: {e.reason}", self.secrets)) from None
        except (OSError, ValueError) as e:  # timeouts, TLS errors, bad URL
            raise PowerError(redact(f"redfish {self.address} unreachable: {e}", self.secrets)) from None

    def open_stream(self, path: str, headers: dict, timeout: float):
        """GET ``path`` (a Server-Sent Events stream) by the same rules; the open answer, read and closed by the caller.
        ``timeout`` is also the longest silence a read waits for (then it raises a timeout, an OSError)."""
        return self._open("GET", self.url(path), None, {"Accept": "text/event-stream", **headers}, timeout)

    def request(self, method: str, path: str, body=None) -> RedfishAnswer:
        url = self.url(path)
        data = json.dumps(body) if body is not None else None
        response = self._open(method, url, data, {"Content-Type": "application/json", "Accept": "application/json"}, self.timeout)
        try:
            status, location, text = response.getcode(), response.headers.get("Location") or "", response.read()
        except (OSError, ValueError) as e:  # a timeout or a broken connection while reading the answer
            raise PowerError(redact(f"redfish {self.address} unreachable: {e}", self.secrets)) from None
        if not text:
            return RedfishAnswer(status, location, {})
        try:
            answer = json.loads(text)
        except ValueError:
            raise PowerError(f"redfish {method} {url}: answer is not JSON") from None
        return RedfishAnswer(status, location, answer if isinstance(answer, dict) else {})

    def fetch(self, method: str, path: str, body=None) -> dict:
        """The JSON body of the answer ({} when empty)."""
        return self.request(method, path, body).body


class RedfishReader:
    method = "redfish"

    def __init__(self, config: dict, fetch=None):
        self.config = config
        self.session = RedfishSession(config)
        self.address = self.session.address
        self.system_id = config.get("system_id")
        self.off_reset_type = config.get("off_reset_type") or "ForceOff"
        if self.off_reset_type not in OFF_RESET_TYPES:
            raise PowerError(f"off_reset_type must be one of {', '.join(OFF_RESET_TYPES)} (never a reboot), got {self.off_reset_type!r}")
        self.fetch = fetch or self.session.fetch

    def _url(self, path: str) -> str:
        return self.session.url(path)

    def _system_path(self) -> str:
        if self.system_id:
            return f"{SYSTEMS}/{self.system_id}"
        members = self.fetch("GET", SYSTEMS).get("Members") or []
        if len(members) != 1:
            raise PowerError(f"redfish {self.address} has {len(members)} systems; set system_id")
        path = members[0].get("@odata.id") if isinstance(members[0], dict) else None
        if not isinstance(path, str):
            raise PowerError(f"redfish {self.address}: the Systems collection has no link to its system")
        return path

    def identify(self) -> Identity:
        path = self._system_path()
        system = self.fetch("GET", path)
        reported = system.get("UUID")
        if not reported:
            raise PowerError(f"redfish {self.address}{path} reports no UUID")
        return Identity("system-uuid", str(reported), f"redfish {self.address}{path} UUID {reported}")

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
