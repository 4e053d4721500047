"""The three power-off proofs and the error that names what is missing."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import MissingProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import (
    prove_lease_stale,
    prove_not_ready,
    prove_power_off,
    require_all,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError, PowerReading
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import IdentityVerdict
from incident_fakes import T0, lease, node


def test_ready_node_is_not_proven():
    proof = prove_not_ready(node("w", ready="True"), T0, 60)
    assert not proof.ok
    assert "Ready" in proof.detail


@pytest.mark.parametrize("status", ["False", "Unknown"])
def test_not_ready_long_enough_is_proven(status):
    assert prove_not_ready(node("w", ready=status, since=T0 - 61), T0, 60).ok


def test_not_ready_too_recently_is_not_proven():
    proof = prove_not_ready(node("w", ready="Unknown", since=T0 - 30), T0, 60)
    assert not proof.ok
    assert "30s only" in proof.detail


def test_lease_renewed_within_duration_plus_margin_is_fresh():
    assert not prove_lease_stale(lease("w", T0 - 45, duration=40), T0, 10).ok


def test_lease_older_than_duration_plus_margin_is_stale():
    assert prove_lease_stale(lease("w", T0 - 51, duration=40), T0, 10).ok


def test_missing_lease_proves_nothing():
    assert not prove_lease_stale(None, T0, 10).ok


SHOWN = IdentityVerdict(True, "UUID matches")


def test_only_off_proves_power_off():
    assert prove_power_off(PowerReading("off", "redfish", "PowerState=Off"), identity=SHOWN).ok
    assert not prove_power_off(PowerReading("on", "redfish", "PowerState=On"), identity=SHOWN).ok
    assert not prove_power_off(PowerReading("unknown", "redfish", "PowerState=Paused"), identity=SHOWN).ok


def test_off_from_a_device_not_shown_to_be_the_nodes_proves_nothing():
    off = PowerReading("off", "redfish", "PowerState=Off")
    assert "no identity check" in prove_power_off(off).detail and not prove_power_off(off).ok
    other = prove_power_off(off, identity=IdentityVerdict(False, "UUID b is NOT node w's systemUUID a"))
    assert not other.ok and "not shown to belong to this node" in other.detail and "NOT node w" in other.detail
    opted_out = prove_power_off(off, identity=IdentityVerdict(False, "identity NOT verified: ... identity_unverifiable_reason: PDU", opted_out=True))
    assert opted_out.ok and "identity_unverifiable_reason: PDU" in opted_out.detail  # recorded with the proof


def test_unreadable_power_proves_nothing():
    proof = prove_power_off(error=PowerError("credentials refused (HTTP 401)"))
    assert not proof.ok
    assert "401" in proof.detail


def test_error_names_every_missing_proof():
    proofs = [
        prove_not_ready(node("w", ready="True"), T0, 60),
        prove_lease_stale(lease("w", T0 - 1), T0, 10),
        prove_power_off(PowerReading("off", "redfish", "Off"), identity=SHOWN),
    ]
    with pytest.raises(MissingProofError) as caught:
        require_all(proofs)
    assert caught.value.missing == ["not-ready", "lease-stale"]
    assert "nothing was changed" in str(caught.value)
