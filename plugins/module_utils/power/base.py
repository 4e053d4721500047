# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every out-of-band power source returns, and the fence loop shared by all of them.

A reader has ``method`` (its name), ``status()`` -> PowerReading, ``power_off()`` and ``power_on()``.
Only the literal state "off" counts as off; anything unclear is "unknown", which never proves anything.
"""

from __future__ import annotations

import subprocess
from typing import NamedTuple

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError

ON, OFF, UNKNOWN = "on", "off", "unknown"


class PowerError(NodeguardError):
    """The power source could not be read or did not act (unreachable, wrong credentials, bad answer)."""


class PowerReading(NamedTuple):
    state: str  # "on" | "off" | "unknown"
    method: str  # redfish, ipmi, fence_agent, command, manual
    detail: str
    attestation: dict = None

    def as_dict(self) -> dict:
        result = {"state": self.state, "method": self.method, "detail": self.detail}
        if self.attestation:
            result["attestation"] = self.attestation
        return result


def run_process(argv: list, stdin_text: str = "", env: dict | None = None, timeout: float = 30.0) -> tuple:
    """Run a helper program; secrets go through stdin or env, never argv. Returns (rc, stdout, stderr)."""
    try:
        done = subprocess.run(argv, input=stdin_text, env=env, timeout=timeout, capture_output=True, text=True, check=False)
    except FileNotFoundError as e:
        raise PowerError(f"{argv[0]} is not installed or not on PATH") from e
    except subprocess.TimeoutExpired as e:
        raise PowerError(f"{argv[0]} did not answer within {timeout:.0f}s") from e
    return done.returncode, done.stdout, done.stderr


def last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def set_power(reader, target: str, retries: int, backoff: float, confirm_timeout: float, clock) -> tuple:
    """Send ``target`` ("off" or "on") with retries and exponential backoff, then re-read until it holds.

    Returns (final PowerReading, attempts: list of str). Raises PowerError when it never reads ``target``.
    Each try is bounded by the reader's own timeout.
    """
    act = reader.power_off if target == OFF else reader.power_on
    tries = max(retries, 1)
    attempts = []
    for attempt in range(1, tries + 1):
        try:
            act()
            attempts.append(f"try {attempt}: {target} accepted")
            break
        except PowerError as e:
            attempts.append(f"try {attempt}: {e}")
            if attempt == tries:
                raise PowerError(f"power {target} failed after {attempt} tries: {'; '.join(attempts)}") from e
            clock.sleep(backoff * (2 ** (attempt - 1)))
    deadline = clock.now() + confirm_timeout
    while True:
        try:
            reading = reader.status()
        except PowerError as e:
            reading = PowerReading(UNKNOWN, reader.method, str(e))
        if reading.state == target:
            return reading, attempts
        if clock.now() >= deadline:
            raise PowerError(f"power {target} was sent but {reader.method} still reads {reading.state.upper()} after {confirm_timeout:.0f}s ({reading.detail})")
        clock.sleep(2.0)


def fence_off(reader, retries: int, backoff: float, confirm_timeout: float, clock) -> tuple:
    """Power off and re-read until Off. Only "off" is ever sent before the taint: a reboot could bring
    the node back with its volumes still attached while their pods start elsewhere."""
    return set_power(reader, OFF, retries, backoff, confirm_timeout, clock)
