"""Manual attestation names the node, the state, who, why, an expiry and the incident or a window (issue 11, defect 3)."""

from datetime import UTC, datetime

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import verify_identity
from ansible_collections.nodeguard.failover.plugins.module_utils.power.manual import ManualAttestation

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def at(offset_seconds):
    return datetime.fromtimestamp(NOW + offset_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def attestation(**changes):
    values = {"node": "w3", "state": "off", "operator": "jane@ops", "reason": "PDU port 12 switched off, ticket 4711",
              "not_before": at(-600), "expires": at(3600)}
    values.update(changes)
    return {"type": "manual", "attestation": {k: v for k, v in values.items() if v is not None}}


def attest(config, node="w3", needed="off", allowed=True):
    return ManualAttestation(config, node, needed, allowed, now=NOW)


def k8s_node(name="w3"):
    return {"metadata": {"name": name}, "status": {"nodeInfo": {"systemUUID": ""}}}


def test_complete_attestation_proves_its_node_and_is_recorded():
    reader = attest(attestation())
    reading = reader.status()
    assert reading.state == "off"
    assert reading.attestation["operator"] == "jane@ops" and reading.attestation["node"] == "w3"
    assert reading.attestation["expires"] == at(3600)
    verdict = verify_identity(reader, k8s_node())
    assert verdict.verified and "attested by jane@ops for node w3" in verdict.detail


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"node": None}, r"missing attestation\.node"),  # generic: names no node
        ({"operator": None}, r"missing attestation\.operator"),
        ({"expires": None}, r"missing attestation\.expires"),  # never expires
        ({"not_before": None}, "incident or not_before"),  # neither incident nor window
        ({"node": "w4"}, "names node 'w4', not 'w3'"),
        ({"state": "on"}, "attests power ON, this step needs OFF"),
        ({"expires": at(-1)}, "expired at .* \\(stale\\)"),
        ({"expires": at(25 * 3600)}, "more than 24h ahead"),
        ({"not_before": at(600)}, "valid only from"),
        ({"expires": "2027-01-15T09:00:00"}, "no time zone"),
        ({"expires": "tomorrow"}, "not an RFC 3339 time"),
    ],
)
def test_stale_generic_or_mismatching_attestation_is_refused(changes, message):
    with pytest.raises(PowerError, match=message):
        attest(attestation(**changes))


def test_outage_attestation_is_not_reused_for_recovery():
    with pytest.raises(PowerError, match="attests power OFF, this step needs ON"):
        attest(attestation(), needed="on")


def test_attestation_needs_the_explicit_permission():
    with pytest.raises(PowerError, match="allow_manual_attestation"):
        attest(attestation(), allowed=False)


def test_attestation_for_an_incident_must_name_the_open_one():
    reader = attest(attestation(not_before=None, incident="w3-20270115T075000Z", state="on"), needed="on")
    assert verify_identity(reader, k8s_node(), incident="w3-20270115T075000Z").verified
    other = verify_identity(reader, k8s_node(), incident="w3-20270101T000000Z")
    assert not other.ok and "names incident w3-20270115T075000Z" in other.detail
    none_open = verify_identity(reader, k8s_node(), incident=None)
    assert not none_open.ok and "no incident is open" in none_open.detail


def test_attestation_cannot_power_anything():
    reader = attest(attestation())
    with pytest.raises(PowerError):
        reader.power_off()
    with pytest.raises(PowerError):
        reader.power_on()
