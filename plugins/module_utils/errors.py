# -*- coding: utf-8 -*-
# Copyright: nodeguard.failover contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exception hierarchy of the collection: modules catch NodeguardError once."""

from __future__ import annotations


class NodeguardError(Exception):
    """Base of every error this collection raises on purpose."""


class ProfileError(NodeguardError):
    """A failover profile is inconsistent or asks for something a version cannot do.

    ``rule`` names the rule that was broken, so users can look it up in docs/settings.md.
    """

    def __init__(self, rule: str, message: str):
        super().__init__(f"[{rule}] {message}")
        self.rule = rule


class FileEditError(NodeguardError):
    """A configuration file cannot be edited safely (malformed, missing part, changed under us)."""


class ClusterError(NodeguardError):
    """The Kubernetes API refused or failed a request."""


class ProofError(NodeguardError):
    """A safety proof required before a destructive step is missing."""
