# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Manual attestation: an operator asserts the power state and gives a reason; the record keeps both.

Only usable when the caller sets allow_manual_attestation; it cannot act on power.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError, PowerReading


class ManualAttestation:
    method = "manual"

    def __init__(self, config: dict, attested_state: str, allowed: bool):
        attestation = config.get("attestation") or {}
        if not allowed:
            raise PowerError("power type 'manual' needs allow_manual_attestation=true")
        if not (attestation.get("reason") or "").strip() or not (attestation.get("operator") or "").strip():
            raise PowerError("manual attestation needs attestation.operator and attestation.reason")
        self.attestation = {"operator": attestation["operator"], "reason": attestation["reason"], "state": attested_state}
        self.state = attested_state

    def status(self) -> PowerReading:
        detail = f"attested {self.state.upper()} by {self.attestation['operator']}: {self.attestation['reason']}"
        return PowerReading(self.state, self.method, detail, self.attestation)

    def power_off(self) -> None:
        raise PowerError("manual attestation cannot power a node off; power it off by hand first")

    def power_on(self) -> None:
        raise PowerError("manual attestation cannot power a node on")
