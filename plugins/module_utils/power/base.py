# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every out-of-band power source returns, and the fence loop shared by all of them.

A reader has ``method`` (its name), ``config`` (its ``power`` option value), ``status()`` -> PowerReading,
``identify()`` -> Identity (which machine the device says it controls), ``power_off()`` and ``power_on()``.
Only the literal state "off" counts as off; anything unclear is "unknown", which never proves anything.
Whether a reading belongs to the node is decided in identity.py, never here.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import NamedTuple
from urllib.parse import urlsplit

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.waiters import wait_until

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


class Identity(NamedTuple):
    """What a power device says about the machine it controls.

    kind: "system-uuid" (value is the SMBIOS system UUID / IPMI system GUID the device reports),
    "attested-node" (value is the node an operator's attestation names).
    """

    kind: str
    value: str
    detail: str


# What helper programs (ipmitool, fence agents, command hooks) inherit from us: nothing else.
# In particular never K8S_AUTH_* (the remediation token), proxy settings or other secrets of the controller.
INHERITED_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")


def scrubbed_env(extra: dict | None = None) -> dict:
    """The environment of a helper program: INHERITED_ENVIRONMENT plus ``extra`` (documented per reader)."""
    env = {name: os.environ[name] for name in INHERITED_ENVIRONMENT if name in os.environ}
    env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    env.update(extra or {})
    return env


# agent_options keys whose values are secrets: password, passwd, passphrase, token, api_key, secret, credential,
# an SNMP community, IPMI's K_g (hexadecimal_kg).
_SECRET_KEY = re.compile(r"pass|pwd|token|key|secret|credential|community|(^|[_-])kg($|[_-])", re.IGNORECASE)
# Switch values are not secrets even under a secret-like key (use_token: "1"), and masking them would mask
# every "1" in a message.
_NOT_SECRET_VALUES = ("", "0", "1", "true", "false", "yes", "no", "on", "off")


def is_secret_key(key: str) -> bool:
    """True for an ``agent_options`` key whose value is a secret (see _SECRET_KEY)."""
    return bool(_SECRET_KEY.search(str(key)))


def secret_values(config: dict) -> tuple:
    """Every secret of a ``power`` mapping, for redact(): the password and the secret-like agent_options values."""
    options = (config or {}).get("agent_options") or {}
    found = [(config or {}).get("password")]
    found += [str(value) for key, value in options.items() if is_secret_key(key) and str(value).strip().lower() not in _NOT_SECRET_VALUES]
    return tuple(value for value in found if value)


def redact(text: str, secrets: tuple) -> str:
    """``text`` with every non-empty secret replaced, for anything a device or helper program said."""
    text = str(text)
    for secret in secrets:
        if secret:
            text = text.replace(str(secret), "********")
    return text


def check_address(address: str) -> str:
    """Refuse user information (``user:password@``) in an address: the address is shown in the record,
    Events and messages, so it must never carry a credential. Returns the address unchanged."""
    address = address or ""
    netloc = urlsplit(address).netloc if "://" in address else address
    if "@" in netloc:
        raise PowerError("power.address must not contain user information (user:password@host); use power.username and power.password")
    if any(c in address for c in "\r\n"):
        raise PowerError("power.address must be one line")
    return address


def run_process(argv: list, stdin_text: str = "", env: dict | None = None, timeout: float = 30.0) -> tuple:
    """Run a helper program; secrets go through stdin or env, never argv. Returns (rc, stdout, stderr).

    ``env`` is the whole environment of the program (see scrubbed_env); None gives it scrubbed_env().
    """
    if env is None:
        env = scrubbed_env()
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
    Each try is bounded by the reader's own timeout. The confirmation re-reads every 2 s through the collection's one
    poll loop (k8s/waiters.wait_until), so ``confirm_timeout`` is measured on ``clock.monotonic()``.
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
    reading = None

    def reads_target() -> bool:
        nonlocal reading
        try:
            reading = reader.status()
        except PowerError as e:
            reading = PowerReading(UNKNOWN, reader.method, str(e))
        return reading.state == target

    if not wait_until(reads_target, confirm_timeout, 2.0, clock):
        raise PowerError(f"power {target} was sent but {reader.method} still reads {reading.state.upper()} after {confirm_timeout:.0f}s ({reading.detail})")
    return reading, attempts


def fence_off(reader, retries: int, backoff: float, confirm_timeout: float, clock) -> tuple:
    """Power off and re-read until Off. Only "off" is ever sent before the taint: a reboot could bring
    the node back with its volumes still attached while their pods start elsewhere."""
    return set_power(reader, OFF, retries, backoff, confirm_timeout, clock)
