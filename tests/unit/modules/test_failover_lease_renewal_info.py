"""failover_lease_renewal_info: waits for a renewal after a reading, fails naming what it saw, refuses bad names."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s import leases
from ansible_collections.nodeguard.failover.plugins.modules import failover_lease_renewal_info as module


class Leases:
    """Returns the given renewTimes one read after another (the last one repeats)."""

    def __init__(self, *renew_times):
        self.renew_times, self.reads = list(renew_times), []

    def get_lease(self, namespace, name):
        self.reads.append((namespace, name))
        value = self.renew_times.pop(0) if len(self.renew_times) > 1 else self.renew_times[0]
        return None if value is None else {"spec": {"renewTime": value, "holderIdentity": name}}


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(leases.Clock, "sleep", lambda self, seconds: None)


def test_waits_until_the_holder_writes_a_new_renew_time(run_module, monkeypatch):
    cluster = Leases("2026-11-26T06:00:00Z", "2026-11-26T06:00:00Z", "2026-11-26T06:00:10Z")
    monkeypatch.setattr(module, "cluster_for", lambda m: cluster)
    result = run_module(module, {"namespace": "kube-node-lease", "name": "w3", "timeout": 30})
    assert not result["failed"] and not result["changed"] and result["renewed"]
    assert result["since"]["renew_time"] == "2026-11-26T06:00:00Z" and result["lease"]["renew_time"] == "2026-11-26T06:00:10Z"
    assert cluster.reads == [("kube-node-lease", "w3")] * 3


def test_since_renew_time_waits_from_an_earlier_reading(run_module, monkeypatch):
    monkeypatch.setattr(module, "cluster_for", lambda m: Leases("2026-11-26T06:00:10Z"))
    result = run_module(module, {"namespace": "kube-node-lease", "name": "w3", "since_renew_time": "2026-11-26T06:00:00Z", "timeout": 30})
    assert not result["failed"] and result["renewed"]


def test_not_renewed_fails_with_what_it_saw(run_module, monkeypatch):
    monkeypatch.setattr(module, "cluster_for", lambda m: Leases("2026-11-26T06:00:00Z"))
    monkeypatch.setattr(leases.Clock, "monotonic", iter(range(0, 1000, 2)).__next__)
    result = run_module(module, {"namespace": "kube-system", "name": "kube-controller-manager", "timeout": 10})
    assert result["failed"] and not result["renewed"]
    assert result["msg"] == (
        "Lease 'kube-system/kube-controller-manager' was not renewed within 10 s after the reading waited from "
        "(last renewTime 2026-11-26T06:00:00Z by kube-controller-manager)"
    )


def test_timeout_zero_takes_a_reading_and_does_not_fail(run_module, monkeypatch):
    monkeypatch.setattr(module, "cluster_for", lambda m: Leases(None))
    result = run_module(module, {"namespace": "kube-node-lease", "name": "w3", "timeout": 0}, check_mode=True)
    assert not result["failed"] and not result["renewed"] and result["lease"] == {"exists": False, "renew_time": "", "holder": ""}


@pytest.mark.parametrize("args", [{"name": "{{ lookup('pipe', 'id') }}"}, {"namespace": "Kube System"}, {"interval": 0}])
def test_bad_input_is_refused_before_any_read(run_module, monkeypatch, args):
    cluster = Leases("x")
    monkeypatch.setattr(module, "cluster_for", lambda m: cluster)
    result = run_module(module, dict({"namespace": "kube-node-lease", "name": "w3"}, **args))
    assert result["failed"] and cluster.reads == [] and "{{" not in result["msg"]
