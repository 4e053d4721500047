"""The one table of the vendors' Redfish power messages (plugins/module_utils/power/redfish_messages.py).

Dell iDRAC9 writes its SYS message ids in three forms (docs/power-events.md, "Dell iDRAC9"): the registry form
IDRAC.<major>.<minor>.<id> (firmware 6.x and later), the prefix without a version (IDRAC.<id>), and the bare id
(firmware before 6.x). Only the power messages of Dell's Event and Error Message Reference count, in any of the three
forms; a bare id of any other vendor's message never does.
"""

from __future__ import annotations

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.power import redfish_messages


@pytest.mark.parametrize(
    ("message_id", "state"),
    [
        ("IDRAC.2.8.SYS1001", "Off"),  # iDRAC9 6.x and later: the registry form
        ("IDRAC.SYS1001", "Off"),  # the prefix without a version
        ("SYS1001", "Off"),  # iDRAC9 before 6.x: the bare id
        ("SYS1000", "On"),
        ("IDRAC.SYS1000", "On"),
        ("SYS1003", "Reset"),
    ],
)
def test_dell_power_messages_count_in_each_form_dell_writes(message_id: str, state: str) -> None:
    assert redfish_messages.power_state(message_id) == state


@pytest.mark.parametrize(
    "message_id",
    [
        "TMP0120",  # a bare Dell id that is no power message (temperature)
        "PWR1004",  # a power-supply message: the host's power state is not in it
        "IDRAC.PWR1004",
        "SYS1002",
        "SYS10010",
        "sys1001",
        "DCPowerOff",  # a bare key of another vendor: only Dell writes bare ids
        "ResourcePoweredOff",
        "OpenBMC.DCPowerOff",
        "Dell.SYS1001",
        " SYS1001",
    ],
)
def test_other_bare_or_short_ids_are_no_power_messages(message_id: str) -> None:
    assert redfish_messages.power_state(message_id) == ""
