# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Redfish power messages of real BMCs, and how their test events are marked: the one table.

Read by the EDA filter redfish_power_events (webhook deliveries) and the EDA source redfish_sse (Server-Sent
Events). Sources, per vendor: docs/power-events.md. Pure Python with no import from the collection: the EDA
plugins load it by path or through the collections path.
"""

from __future__ import annotations

import re

# Registry prefix -> message key -> state, from the vendors' public registries (docs/power-events.md). Reset is a
# host reset without power loss and PoweringOff a shutdown that has started: both are logged, never acted on.
POWER_MESSAGES = {
    "ResourceEvent": {"ResourcePoweredOff": "Off", "ResourcePoweringOff": "PoweringOff", "ResourcePoweredOn": "On"},
    "OpenBMC": {"DCPowerOff": "Off", "DCPowerOn": "On"},
    "iLOResourceEvents": {"ServerPoweredOff": "Off", "ServerPoweredOn": "On"},
    "iLOEvents": {"ServerPoweredOff": "Off", "ServerPoweredOn": "On"},  # iLO 5
    "IDRAC": {"SYS1001": "Off", "SYS1000": "On", "SYS1003": "Reset"},
}
# The registry major versions whose power messages are known: a new major version may change their meaning.
MAJOR_VERSIONS = {"ResourceEvent": "1", "OpenBMC": "0", "iLOResourceEvents": None, "iLOEvents": None, "IDRAC": None}
# RegistryPrefix.Major.Minor[.Errata].MessageKey
MESSAGE_ID = re.compile(r"([A-Za-z]{1,64})\.([0-9]{1,3})\.([0-9]{1,3})(\.[0-9]{1,3})?\.([A-Za-z0-9]{1,64})")
# Dell's own id forms besides the registry form: IDRAC.<id> and, from iDRAC9 before 6.x, the bare <id> (a category of
# up to four capitals and four digits, Dell's Event and Error Message Reference). Only Dell writes bare ids, so only
# the IDRAC table is looked up for them.
DELL_SHORT_ID = re.compile(r"(?:IDRAC\.)?([A-Z]{1,4}[0-9]{4})")
TEST_NAME, TEST_EVENT_TYPE, TEST_MESSAGE_KEYS = "test event", "TestEvent", ("TestEventLog", "TestEvent")


def power_state(message_id) -> str:
    """The state a known power message reports ("Off", "PoweringOff", "On", "Reset"), or "" for any other message.
    ``RegistryPrefix.Major.Minor[.Errata].Key``; for Dell also ``IDRAC.<id>`` and the bare ``<id>``."""
    if not isinstance(message_id, str):
        return ""
    dell = DELL_SHORT_ID.fullmatch(message_id)
    if dell:
        return POWER_MESSAGES["IDRAC"].get(dell.group(1), "")
    found = MESSAGE_ID.fullmatch(message_id)
    if not found:
        return ""
    prefix, major, key = found.group(1), found.group(2), found.group(5)
    if prefix not in POWER_MESSAGES or MAJOR_VERSIONS[prefix] not in (None, major):
        return ""
    return POWER_MESSAGES[prefix].get(key, "")


def is_test_event(payload: dict, record: dict) -> bool:
    """SubmitTestEvent's events, as the vendors mark them: Name or Message "Test Event", EventType TestEvent, or a
    registry's TestEventLog message."""
    names = [payload.get("Name"), record.get("Name"), record.get("Message")]
    if any(isinstance(name, str) and name.strip().lower() == TEST_NAME for name in names):
        return True
    if record.get("EventType") == TEST_EVENT_TYPE:
        return True
    message_id = record.get("MessageId")
    return isinstance(message_id, str) and message_id.rsplit(".", 1)[-1] in TEST_MESSAGE_KEYS
