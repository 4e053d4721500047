# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why an incident run stopped. All are NodeguardError, so modules keep one failure path."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError, ProofError


class RefusedError(NodeguardError):
    """A safety rule refused the run before anything changed. ``rule`` names it (docs/runbooks/node-outage.md)."""

    def __init__(self, rule: str, message: str):
        super().__init__(f"refused [{rule}]: {message}")
        self.rule = rule


class LockHeldError(RefusedError):
    """Another job holds the node's lock Lease."""

    def __init__(self, message: str):
        super().__init__("lock-held", message)


class LockLostError(NodeguardError):
    """Another run changed this run's lock Lease (took it over after observing it expire): stop before acting."""


class MissingProofError(ProofError):
    """One or more power-off proofs do not hold; ``missing`` lists them by name. The message leads with the first
    reason (``lead``, else the first detail), so its headline says why, not only that a proof is missing."""

    def __init__(self, missing: list, details: list, unchanged: bool = True):
        self.missing = missing
        self.details = list(details)
        self.first = None  # the reason that outranks the details (the node is Ready...), set by lead()
        self.outcome = "power-off not proven, nothing was changed" if unchanged else "power-off not proven"  # after the taint, details say what stays
        super().__init__(self._message())

    def _message(self) -> str:
        first, rest = (self.first, self.details) if self.first else (self.details[0], self.details[1:])
        return f"{first}: {self.outcome}. Missing proof(s): {', '.join(self.missing)}. " + "; ".join(rest)

    def add_detail(self, detail: str) -> None:
        self.details.append(detail)
        self.args = (self._message(),)

    def lead(self, reason: str) -> None:
        """Put ``reason`` first: it explains the missing proofs better than any of them (the node is up)."""
        self.first = reason
        self.args = (self._message(),)


class NotRecoveredYetError(ProofError):
    """The node is not back yet (not Ready long enough, power not On, old pods left...): trying again later may succeed."""


class NodeReturnedError(NodeguardError):
    """The node became Ready while the run was under way; the run stopped with a consistent record."""


class StepTimeoutError(NodeguardError):
    """A waiting step ran out of time; the record says which step, a rerun resumes there."""
