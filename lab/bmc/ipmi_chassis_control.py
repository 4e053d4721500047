"""Chassis control program for OpenIPMI's ipmi_sim: IPMI chassis power is the node's container.

ipmi_sim's lan.conf line `chassis_control "ipmi_chassis_control.py CONTAINER"` makes the
simulator run, for each chassis command,
    ipmi_chassis_control.py CONTAINER get power            -> prints "power:1" or "power:0"
    ipmi_chassis_control.py CONTAINER set power 0|1        (chassis power off/on)
    ipmi_chassis_control.py CONTAINER set reset 1          (chassis power reset)
    ipmi_chassis_control.py CONTAINER set shutdown 1       (chassis power soft)
    ipmi_chassis_control.py CONTAINER set boot|identify …  (accepted, nothing to do)
A non-zero exit makes the simulator answer the IPMI request with an error completion code,
so an unknown power state is never reported as "off".
"""

from __future__ import annotations

import sys

import container_power


def get(container: str, names: list[str]) -> None:
    for name in names:
        if name == "power":
            print(f"power:{int(container_power.is_powered(container))}")
        elif name == "boot":
            print("boot:default")
        else:
            raise container_power.PowerError(f"cannot get {name}")


def set_value(container: str, name: str, value: str) -> None:
    if name == "power":
        (container_power.power_on if value == "1" else container_power.force_off)(container)
    elif name == "reset":
        # A hard reset of a machine that is off does nothing, as on real hardware.
        if container_power.is_powered(container):
            container_power.force_restart(container)
    elif name == "shutdown":
        container_power.in_background("graceful-off", container)
    elif name in ("boot", "identify"):
        pass
    else:
        raise container_power.PowerError(f"cannot set {name}")


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] not in ("get", "set"):
        print(__doc__, file=sys.stderr)
        return 2
    container, operation, params = argv[0], argv[1], argv[2:]
    try:
        if operation == "get":
            get(container, params)
        else:
            # "set NAME VALUE [NAME VALUE...]"; identify passes two numbers as one value.
            if len(params) % 2:
                raise container_power.PowerError(f"set needs NAME VALUE pairs, got {params}")
            for name, value in zip(params[::2], params[1::2], strict=True):
                set_value(container, name, value)
    except container_power.PowerError as e:
        print(f"ipmi_chassis_control: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
