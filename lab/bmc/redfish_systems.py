"""Redfish systems backed by podman containers: the lab's "servers".

sushy-tools' fake driver keeps power state in its own store and applies power actions
after a random delay, so it cannot notice a container stopped behind its back. This
subclass keeps everything else of the fake driver (names, UUIDs, boot settings) and
makes the container the single source of truth for power (see container_power.py):
PowerState is read from podman on every request, and power actions run podman.

Systems are addressed by node name (/redfish/v1/Systems/ng-worker1), the same name as
the container; the UUID still answers too.

Power events: the fake driver tells the outside world about a change through its
_send_external_notification hook (a PUT of the system to one URL). We keep the hook and
send Redfish Events through it instead (redfish_events.py): power_changed() is called by
the watcher (power_watch.py) for every change, whoever made it, and a graceful shutdown
requested here announces "powering off" at once.
"""

from __future__ import annotations

import datetime

import container_power
from sushy_tools import error
from sushy_tools.emulator.resources.systems.fakedriver import FakeDriver

GRACEFUL_OFF = frozenset({"GracefulShutdown", "GracefulRestart", "PushPowerButton"})


class PodmanSystemsDriver(FakeDriver):
    """The fake driver with power state and power actions delegated to podman."""

    # The lab's EventService (redfish_events.EventService); None: power changes go nowhere.
    events = None

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

    def containers(self) -> dict[str, str]:
        """Container name -> system name, for the power watcher."""
        return {self._container(name): name for name in self.systems}

    def power_changed(self, name: str, state: str, when: datetime.datetime) -> None:
        """A power change of system `name` ("On", "Off", "PoweringOff") at `when`: notify the outside world."""
        self._send_external_notification({**self._get(name), "power_state": state, "power_changed_at": when})

    def _send_external_notification(self, system):
        # The fake driver PUTs the system to one URL; the lab BMC publishes Redfish Events instead.
        # Only power_changed() calls it: the fake driver's own _update() calls it only for systems with
        # external_notifier set, which the lab's are not (a boot setting is not a power event).
        if self.events is not None:
            self.events.power_changed(system["name"], system["power_state"], system["power_changed_at"])

    def get_power_state(self, identity):
        try:
            return "On" if container_power.is_powered(self._container(identity)) else "Off"
        except container_power.PowerError as e:
            raise error.FishyError(str(e)) from None

    def set_power_state(self, identity, state):
        container = self._container(identity)
        try:
            # A graceful action on a powered system starts a shutdown: announced before it starts (so
            # before the "Off" the watcher reports when it ends), as the action is accepted.
            if state in GRACEFUL_OFF and container_power.is_powered(container):
                self.power_changed(self._get(identity)["name"], "PoweringOff",
                                   datetime.datetime.now(datetime.UTC))
            self._reset(container, state)
        except container_power.ContainerMissing as e:
            raise error.Conflict(str(e)) from None
        except container_power.PowerError as e:
            raise error.FishyError(str(e)) from None
        self._logger.info("System %s: %s done", container, state)

    @staticmethod
    def _reset(container: str, state: str) -> None:
        if state in ("On", "ForceOn"):
            container_power.power_on(container)
        elif state == "ForceOff":
            container_power.force_off(container)
        elif state in ("ForceRestart", "PowerCycle"):
            container_power.force_restart(container)
        elif state == "GracefulShutdown":
            container_power.in_background("graceful-off", container)
        elif state == "GracefulRestart":
            container_power.in_background("graceful-restart", container)
        elif state == "PushPowerButton":
            if container_power.is_powered(container):
                container_power.in_background("graceful-off", container)
            else:
                container_power.power_on(container)
        else:
            raise error.NotSupportedError(f"Reset type {state} is not supported by the lab BMC")
