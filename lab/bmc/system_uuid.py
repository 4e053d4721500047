"""The lab machines' SMBIOS system UUIDs: one home for the BMCs (write_config.py) and the workers (workers.sh).

A real kubelet reports /sys/class/dmi/id/product_uuid as the Node's status.nodeInfo.systemUUID, and the
machine's BMC reports the same UUID (Redfish ComputerSystem.UUID, IPMI Get System GUID). In the lab, workers.sh
writes this UUID into each worker container at creation (/etc/nodeguard/product_uuid, which the kubelet
stand-in reports), and the Redfish emulator and ipmi_sim report it for the node's system, so nodeguard's
identity check runs for real there.

Usage: system_uuid.py NODE   prints the node's UUID
"""

from __future__ import annotations

import sys
import uuid

UUID_NAMESPACE = uuid.UUID("4f0c2d9e-6a53-4b8e-9d61-2b7d1f0e8a11")


def system_uuid(node: str) -> uuid.UUID:
    # Stable across restarts and re-creation, so clients that cached a UUID keep working.
    return uuid.uuid5(UUID_NAMESPACE, node)


def ipmi_guid_hex(node: str) -> str:
    """The 16 GUID bytes as a BMC stores them for ipmi_sim's ``guid``: SMBIOS order, the first three fields
    little-endian (uuid's bytes_le). ipmitool decodes them back to the canonical UUID."""
    return system_uuid(node).bytes_le.hex()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(system_uuid(sys.argv[1]))
