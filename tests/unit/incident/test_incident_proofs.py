"""The three power-off proofs and the error that names what is missing."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import MissingProofError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.proofs import (
    LONGEST_LEASE_WATCH_SECONDS,
    LeaseWatch,
    prove_not_ready,
    prove_power_off,
    require_all,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.power.base import PowerError, PowerReading
from ansible_collections.nodeguard.failover.plugins.module_utils.power.identity import IdentityVerdict
from incident_fakes import T0, FakeClock, lease, node


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


def renewed(old, renew_time):
    """The Lease ``old`` renewed by its kubelet, which wrote ``renew_time`` by its own clock."""
    new = lease("w", renew_time, duration=old["spec"]["leaseDurationSeconds"])
    new["metadata"]["resourceVersion"] = str(int(old["metadata"].get("resourceVersion") or 0) + 1)
    return new


def test_a_lease_unchanged_for_its_renew_interval_plus_the_margin_as_watched_here_is_stale():
    clock = FakeClock()
    watch = LeaseWatch(clock, 10)
    silent = lease("w", T0 - 3600, duration=40)  # however old by the kubelet's clock: watched, not compared
    assert not watch.proof(silent, name="lease-stale").ok  # the first read starts the watch
    clock.sleep(19.9)
    assert watch.pending(silent) and "not yet renew interval 10s" in watch.proof(silent, name="lease-stale").detail
    clock.sleep(0.1)
    proof = watch.proof(silent, name="lease-stale")
    assert proof.ok and proof.name == "lease-stale" and not watch.pending(silent)


def test_a_live_kubelet_whose_clock_lags_60s_is_seen_renewing_and_never_proves_silence():
    clock = FakeClock()
    watch = LeaseWatch(clock, 10)
    current = lease("w", T0 - 60, duration=40)  # 60 s behind ours: older than duration + margin by our clock
    watch.observe(current)
    clock.sleep(10)
    current = renewed(current, T0 + 10 - 60)  # renewed on time, still 60 s behind
    clock.sleep(20)
    proof = watch.proof(current, name="lease-stale")
    assert not proof.ok and "renewed while watched" in proof.detail and "kubelet lives" in proof.detail
    assert not watch.pending(current) and watch.silent_at(current) is None  # waiting cannot help


def test_a_missing_lease_or_duration_proves_nothing():
    watch = LeaseWatch(FakeClock(), 10)
    assert not watch.proof(None).ok and not watch.pending(None)
    no_duration = {"metadata": {"name": "w"}, "spec": {"renewTime": "2026-11-23T08:00:00.000000Z"}}
    assert "renew interval is unknown" in watch.proof(no_duration).detail and not watch.pending(no_duration)


def test_a_watch_longer_than_one_run_may_wait_is_refused_at_once_with_the_reason():
    clock = FakeClock()
    watch = LeaseWatch(clock, 10)
    long_lease = lease("w", T0 - 3600, duration=4 * LONGEST_LEASE_WATCH_SECONDS)
    proof = watch.proof(long_lease)
    assert not proof.ok and "cannot be watched in one run" in proof.detail and "nodeLeaseDurationSeconds" in proof.detail
    assert not watch.pending(long_lease)


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
        LeaseWatch(FakeClock(), 10).proof(lease("w", T0 - 1), name="lease-stale"),
        prove_power_off(PowerReading("off", "redfish", "Off"), identity=SHOWN),
    ]
    with pytest.raises(MissingProofError) as caught:
        require_all(proofs)
    assert caught.value.missing == ["not-ready", "lease-stale"]
    assert "nothing was changed" in str(caught.value)
