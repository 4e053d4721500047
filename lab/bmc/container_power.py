"""What "power" means for a lab node: its podman container. Shared by the Redfish and IPMI BMCs.

- Powered: the container is running (or paused or stopping: a hung machine still has
  power). Anything else is off, including a container that does not exist.
- force_off is `podman kill --signal KILL`: a power cut, nothing inside shuts down.
- graceful_off is the power button: systemd-logind in the node is asked to power off, as a real
  machine's logind does when the ACPI power key is pressed (HandlePowerKey=poweroff). So whatever holds
  a logind delay lock runs first: the kubelet's graceful node shutdown stops its pods. A node without
  logind, or one that is still up after POWER_BUTTON_SECONDS, gets `podman stop` (the init system's stop
  signal, which bypasses logind, then a kill).
- power_on is `podman start`.
Forced actions return once the container has reached the new state.

Also a command line, used to run graceful actions in the background:
    container_power.py graceful-off|graceful-restart|on|off|status CONTAINER
"""

from __future__ import annotations

import subprocess
import sys
import time

POWERED_STATES = frozenset({"running", "paused", "stopping"})
# How long a forced action may take before it counts as failed.
ACTION_TIMEOUT = 20.0
# How long `podman stop` lets the init system shut down before it kills it.
GRACEFUL_STOP_SECONDS = 30
# How long a node may take to shut down after the power button (the kubelet's shutdownGracePeriod runs first).
POWER_BUTTON_SECONDS = 120
# logind's PowerOff, what it does itself on a power key press; "false": no interactive authorization.
POWER_BUTTON = ("busctl", "call", "org.freedesktop.login1", "/org/freedesktop/login1",
                "org.freedesktop.login1.Manager", "PowerOff", "b", "false")


class PowerError(Exception):
    """podman failed, or the container did not reach the wanted state."""


class ContainerMissing(PowerError):
    """The node's container does not exist, so it cannot be powered on."""


def podman(*args: str, timeout: float = ACTION_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=False)


def status(container: str) -> str | None:
    """podman's State.Status of the container, or None when it does not exist."""
    result = podman("container", "inspect", "--format", "{{.State.Status}}", container)
    if result.returncode == 0:
        return result.stdout.strip()
    if "no such container" in result.stderr.lower():
        return None
    raise PowerError(f"podman inspect {container} failed: {result.stderr.strip()}")


def is_powered(container: str) -> bool:
    return status(container) in POWERED_STATES


def power_on(container: str) -> None:
    state = status(container)
    if state is None:
        raise ContainerMissing(f"Container {container} does not exist; it cannot be powered on")
    if state in POWERED_STATES:
        return
    _run("start", container)
    _wait_until(container, powered=True)


def force_off(container: str) -> None:
    if not is_powered(container):
        return
    result = podman("kill", "--signal", "KILL", container)
    # A container that stopped on its own between the check and the kill is fine.
    if result.returncode != 0 and is_powered(container):
        raise PowerError(f"podman kill {container} failed: {result.stderr.strip()}")
    _wait_until(container, powered=False)


def force_restart(container: str) -> None:
    force_off(container)
    power_on(container)


def graceful_off(container: str) -> None:
    if not is_powered(container):
        return
    pressed = podman("exec", container, *POWER_BUTTON)
    if pressed.returncode == 0 and _off_within(container, POWER_BUTTON_SECONDS):
        return
    if is_powered(container):
        _run("stop", "--time", str(GRACEFUL_STOP_SECONDS), container, timeout=GRACEFUL_STOP_SECONDS + ACTION_TIMEOUT)


def graceful_restart(container: str) -> None:
    graceful_off(container)
    power_on(container)


def in_background(action: str, container: str) -> None:
    """Run a graceful action detached, as a real BMC accepts it at once and the OS shuts down later.

    The child keeps our stderr (the BMC's log) but not stdout: ipmi_sim reads our stdout to the end.
    """
    subprocess.Popen(
        [sys.executable, __file__, action, container],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True,
    )


def _run(*args: str, timeout: float = ACTION_TIMEOUT) -> None:
    result = podman(*args, timeout=timeout)
    if result.returncode != 0:
        raise PowerError(f"podman {' '.join(args)} failed: {result.stderr.strip()}")


def _off_within(container: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while is_powered(container):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _wait_until(container: str, powered: bool) -> None:
    deadline = time.monotonic() + ACTION_TIMEOUT
    while is_powered(container) != powered:
        if time.monotonic() > deadline:
            raise PowerError(f"Container {container} did not reach power {'on' if powered else 'off'} in time")
        time.sleep(0.2)


ACTIONS = {
    "on": power_on,
    "off": force_off,
    "graceful-off": graceful_off,
    "graceful-restart": graceful_restart,
    "status": lambda container: print("on" if is_powered(container) else "off"),
}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ACTIONS:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        ACTIONS[argv[0]](argv[1])
    except PowerError as e:
        print(f"container_power: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
