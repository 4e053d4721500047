"""Redfish systems backed by podman containers: the lab's "servers".

sushy-tools' fake driver keeps power state in its own store and applies power actions
after a random delay, so it cannot notice a container stopped behind its back. This
subclass keeps everything else of the fake driver (names, UUIDs, boot settings) and
makes the container the single source of truth for power:

- PowerState is read from podman on every request: a container that is running (or
  paused: a hung machine still has power) reads On, anything else reads Off, including
  a container that does not exist.
- Power actions run podman: ForceOff is `podman kill` (a power cut, no shutdown),
  GracefulShutdown is `podman stop` (the init system gets its stop signal), On is
  `podman start`. Forced actions return once the container has reached the new state,
  so a client that reads PowerState right after the action sees the result.

Systems are addressed by node name (/redfish/v1/Systems/ng-worker1), the same name as
the container; the UUID still answers too.
"""

from __future__ import annotations

import subprocess
import threading
import time

from sushy_tools import error
from sushy_tools.emulator.resources.systems.fakedriver import FakeDriver

# Container states that mean "the machine has power".
POWERED_STATES = frozenset({"running", "paused", "stopping"})
# How long a forced action may take before the request fails.
FORCED_ACTION_TIMEOUT = 20.0
# How long `podman stop` lets the init system shut down before it kills it.
GRACEFUL_STOP_SECONDS = 30


class PodmanError(error.FishyError):
    """podman failed in a way that is not "no such container"."""


def podman(*args: str, timeout: float = FORCED_ACTION_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def container_status(container: str) -> str | None:
    """podman's State.Status of the container, or None when it does not exist."""
    result = podman("container", "inspect", "--format", "{{.State.Status}}", container)
    if result.returncode == 0:
        return result.stdout.strip()
    if "no such container" in result.stderr.lower():
        return None
    raise PodmanError(f"podman inspect {container} failed: {result.stderr.strip()}")


def is_powered(container: str) -> bool:
    return container_status(container) in POWERED_STATES


class PodmanSystemsDriver(FakeDriver):
    """The fake driver with power state and power actions delegated to podman."""

    def _get(self, identity):
        # The fake driver only accepts UUIDs and redirects names to them; the lab
        # addresses systems by node name, so resolve names here.
        uuid = self._by_name.get(identity, identity)
        try:
            return self._systems[uuid]
        except KeyError:
            raise error.NotFound(f"System {identity} was not found") from None

    @property
    def systems(self):
        return sorted(self._by_name)

    def _container(self, identity) -> str:
        system = self._get(identity)
        return system.get("container", system["name"])

    def get_power_state(self, identity):
        return "On" if is_powered(self._container(identity)) else "Off"

    def set_power_state(self, identity, state):
        container = self._container(identity)
        if state in ("On", "ForceOn"):
            self._power_on(container)
        elif state == "ForceOff":
            self._force_off(container)
        elif state == "GracefulShutdown":
            self._in_background(self._graceful_off, container)
        elif state in ("ForceRestart", "PowerCycle"):
            self._force_off(container)
            self._power_on(container)
        elif state == "GracefulRestart":
            self._in_background(self._graceful_restart, container)
        elif state == "PushPowerButton":
            if is_powered(container):
                self._in_background(self._graceful_off, container)
            else:
                self._power_on(container)
        else:
            raise error.NotSupportedError(f"Reset type {state} is not supported by the lab BMC")

    def _power_on(self, container: str) -> None:
        status = container_status(container)
        if status is None:
            raise error.Conflict(f"Container {container} does not exist; it cannot be powered on")
        if status in POWERED_STATES:
            return
        self._run("start", container)
        self._wait_until(container, powered=True)

    def _force_off(self, container: str) -> None:
        if not is_powered(container):
            return
        # SIGKILL to the whole container: nothing inside gets to shut down, as in a power cut.
        self._run("kill", "--signal", "KILL", container, tolerate_stopped=True)
        self._wait_until(container, powered=False)

    def _graceful_off(self, container: str) -> None:
        if is_powered(container):
            self._run(
                "stop", "--time", str(GRACEFUL_STOP_SECONDS), container,
                timeout=GRACEFUL_STOP_SECONDS + FORCED_ACTION_TIMEOUT,
            )

    def _graceful_restart(self, container: str) -> None:
        self._graceful_off(container)
        self._power_on(container)

    def _in_background(self, action, container: str) -> None:
        # Real BMCs accept graceful actions at once and the OS shuts down afterwards.
        def run():
            try:
                action(container)
            except Exception:  # a background action can only log it
                self._logger.exception("Power action on %s failed", container)

        threading.Thread(target=run, name=f"power-{container}", daemon=True).start()

    def _run(self, *args: str, timeout: float = FORCED_ACTION_TIMEOUT, tolerate_stopped: bool = False) -> None:
        result = podman(*args, timeout=timeout)
        if result.returncode == 0:
            return
        # A container that stopped on its own between our check and the kill is fine.
        if tolerate_stopped and not is_powered(args[-1]):
            return
        raise PodmanError(f"podman {' '.join(args)} failed: {result.stderr.strip()}")

    def _wait_until(self, container: str, powered: bool) -> None:
        deadline = time.monotonic() + FORCED_ACTION_TIMEOUT
        while is_powered(container) != powered:
            if time.monotonic() > deadline:
                want = "On" if powered else "Off"
                raise PodmanError(f"Container {container} did not reach power {want} in time")
            time.sleep(0.2)
        self._logger.info("System %s is now %s", container, "On" if powered else "Off")
