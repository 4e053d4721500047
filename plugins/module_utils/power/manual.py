# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Manual attestation: an operator asserts one node's power state for one incident or time window.

Only usable when the caller sets allow_manual_attestation; it cannot act on power. An attestation must
name the node, the state, who attests and why, when it expires (at most MAX_HOURS ahead), and either the
incident it is about or the start of its window (``not_before``). It is refused when it names another
node, another incident or another state than the step needs, when it has expired or is not valid yet:
so a static attestation in group_vars cannot turn every partition into a force-delete.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import Identity, PowerError, PowerReading

MAX_HOURS = 24
REQUIRED = ("node", "state", "operator", "reason", "expires")


def _timestamp(value: str, field: str) -> float:
    text = str(value).strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise PowerError(f"attestation.{field} {text!r} is not an RFC 3339 time like 2026-11-23T05:00:00Z") from None
    if parsed.tzinfo is None:
        raise PowerError(f"attestation.{field} {text!r} has no time zone; write it like 2026-11-23T05:00:00Z")
    return parsed.timestamp()


def _show(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ManualAttestation:
    method = "manual"
    statement = True  # what an operator wrote, not a measurement: read once (power/identity.py)

    def __init__(self, config: dict, node: str, attested_state: str, allowed: bool, now: float | None = None):
        if not allowed:
            raise PowerError("power type 'manual' needs allow_manual_attestation=true")
        self.config = config
        given = {k: str(v).strip() for k, v in (config.get("attestation") or {}).items() if v is not None and str(v).strip()}
        missing = [k for k in REQUIRED if k not in given]
        if missing or not ("incident" in given or "not_before" in given):
            wanted = missing + ([] if ("incident" in given or "not_before" in given) else ["incident or not_before"])
            raise PowerError(
                f"manual attestation for {node} refused: it must name the node, the state, who attests, why, an expiry and the "
                f"incident or the start of its window; missing attestation.{', attestation.'.join(wanted)}"
            )
        if given["node"] != node:
            raise PowerError(f"manual attestation refused: it names node {given['node']!r}, not {node!r}")
        if given["state"].lower() != attested_state:
            raise PowerError(
                f"manual attestation for {node} refused: it attests power {given['state'].upper()}, this step needs {attested_state.upper()}"
            )
        now = time.time() if now is None else now
        expires = _timestamp(given["expires"], "expires")
        if expires <= now:
            raise PowerError(f"manual attestation for {node} refused: it expired at {_show(expires)} (stale)")
        if expires - now > MAX_HOURS * 3600:
            raise PowerError(
                f"manual attestation for {node} refused: it expires {_show(expires)}, more than {MAX_HOURS}h ahead; "
                "an attestation covers one incident, it is not standing configuration"
            )
        if "not_before" in given:
            not_before = _timestamp(given["not_before"], "not_before")
            if not_before > now:
                raise PowerError(f"manual attestation for {node} refused: it is valid only from {_show(not_before)}")
        self.node = node
        self.state = attested_state
        self.incident = given.get("incident")
        self.attestation = {k: given[k] for k in (*REQUIRED, "incident", "not_before") if k in given}
        self.attestation["state"] = attested_state

    def check_incident(self, incident) -> str:
        """A problem when the attestation names an incident other than the open one ("" when fine)."""
        if self.incident and self.incident != incident:
            open_one = f"the open incident is {incident}" if incident else "no incident is open on it"
            return f"manual attestation refused: it names incident {self.incident} of {self.node}, but {open_one}"
        return ""

    def identify(self) -> Identity:
        a = self.attestation
        scope = f"incident {a['incident']}" if a.get("incident") else f"from {a['not_before']}"
        return Identity("attested-node", a["node"], f"attested by {a['operator']} for node {a['node']} ({scope}, expires {a['expires']})")

    def status(self) -> PowerReading:
        detail = f"attested {self.state.upper()} by {self.attestation['operator']}: {self.attestation['reason']}"
        return PowerReading(self.state, self.method, detail, self.attestation)

    def power_off(self) -> None:
        raise PowerError("manual attestation cannot power a node off; power it off by hand first")

    def power_on(self) -> None:
        raise PowerError("manual attestation cannot power a node on")
