"""One registry of power backends (issue 24 item 2): every list of power types is read from
power/backends.py or checked against it here, so a list that disagrees fails this test."""

import re
import runpy
import time
from pathlib import Path

import pytest
import yaml
from ansible_collections.nodeguard.failover.plugins.doc_fragments.power import ModuleDocFragment
from ansible_collections.nodeguard.failover.plugins.module_utils.power import backends
from ansible_collections.nodeguard.failover.plugins.module_utils.power.args import POWER_SUBOPTIONS
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.readers import reader_for
from ansible_collections.nodeguard.failover.plugins.module_utils.power.selection import (
    SHAREABLE_POWER_TYPES,
    PowerMappingError,
    select_power,
)

REPO = Path(__file__).resolve().parents[3]
POLLER = REPO / "extensions" / "eda" / "plugins" / "event_source" / "bmc_power_poll.py"
ATTESTATION = {
    "node": "w3",
    "state": "off",
    "operator": "jane@ops",
    "reason": "PDU 12 off",
    "incident": "w3-1",
    "expires": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)),
}
# The smallest mapping each backend's reader accepts. A new backend needs one here: that is on purpose.
MINIMAL = {
    "redfish": {"address": "https://bmc.example"},
    "ipmi": {"address": "10.0.0.5"},
    "fence_agent": {"agent": "fence_redfish", "address": "https://bmc.example"},
    "command": {"command": ["/usr/local/bin/cloud-power"]},
    "manual": {"attestation": ATTESTATION},
}


def fragment_type_option() -> dict:
    return yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]["power"]["suboptions"]["type"]


def test_the_option_choices_are_the_registry():
    assert POWER_SUBOPTIONS["type"]["choices"] == list(backends.POWER_TYPES)


def test_the_doc_fragment_lists_and_describes_every_backend():
    option = fragment_type_option()
    assert option["choices"] == list(backends.POWER_TYPES), "plugins/doc_fragments/power.py: type choices differ from power/backends.py"
    described = " ".join(option["description"])
    assert [name for name in backends.POWER_TYPES if f"V({name})" not in described] == []


def test_the_poller_polls_exactly_the_pollable_backends():
    assert tuple(runpy.run_path(str(POLLER))["POLLABLE_TYPES"]) == backends.POLLABLE_TYPES


def test_shared_defaults_are_the_shareable_backends():
    assert SHAREABLE_POWER_TYPES == backends.SHAREABLE_TYPES == ("command",)


@pytest.mark.parametrize("backend", backends.BACKENDS, ids=lambda backend: backend.name)
def test_each_entry_builds_its_reader(backend):
    config = dict(MINIMAL[backend.name], type=backend.name)
    reader = reader_for(config, "w3", "off", allow_manual=True)
    assert reader.method == backend.name
    assert all(callable(getattr(reader, name, None)) for name in ("status", "identify", "power_off", "power_on"))
    assert backend.identity in ("system-uuid", "attested-node")


def test_the_messages_name_every_backend():
    with pytest.raises(PowerError) as unknown:
        reader_for({"type": "snmp"}, "w3")
    with pytest.raises(PowerMappingError) as malformed:
        select_power("w3", {"w3": {"address": "x"}}, None, None)
    for message in (str(unknown.value), str(malformed.value)):
        assert backends.listed() in message
    with pytest.raises(PowerMappingError) as shared:
        select_power("w3", {}, None, {"type": "redfish"})
    assert f"({backends.listed(backends.SHAREABLE_TYPES)})" in str(shared.value)


def test_no_other_list_of_power_types_in_the_code():
    """A literal list of two or more power type names anywhere but the registry (and the poller, compared above)."""
    names = "|".join(backends.POWER_TYPES)
    literal = re.compile(rf"""["']({names})["']\s*,\s*["']({names})["']""")
    allowed = {REPO / "plugins/module_utils/power/backends.py", POLLER}
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for root in ("plugins", "extensions")
        for path in sorted((REPO / root).rglob("*.py"))
        if path not in allowed
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if literal.search(line)
    ]
    assert found == []
