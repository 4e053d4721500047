"""bench/lab_profile.py's restore: the next invocation must not meet a component restarting (fake lab; the logic only)."""

import lab_profile
import pytest


class FakeLab:
    """Manifests and component pids. A write restarts its component as the static pod runner does, a moment after
    the manifest's bytes change: the old pid for `restart_after` reads, then none (stopped), then a new one."""

    def __init__(self, manifests, restart_after=2):
        self.manifests, self.pids, self.pending, self.writes = dict(manifests), dict.fromkeys(manifests, 100), {}, []
        self.restart_after = restart_after

    def read_manifest(self, component):
        return self.manifests[component]

    def write_manifest(self, component, text):
        self.manifests[component] = text
        self.writes.append(component)
        old = self.pids[component]
        self.pending[component] = [old] * self.restart_after + [0, old + 1]

    def component_pid(self, component):
        upcoming = self.pending.get(component)
        if not upcoming:
            return self.pids[component]
        pid = upcoming.pop(0)
        if not upcoming:
            self.pids[component] = pid
        return pid

    @staticmethod
    def wait_for(predicate, timeout, interval, what):
        for _attempt in range(10):
            if predicate():
                return True
        raise TimeoutError(what)

    @staticmethod
    def lab_is_up():
        return True

    @staticmethod
    def component_healthy(_component):
        return True


@pytest.fixture
def lab(monkeypatch):
    fake = FakeLab({"kube-apiserver": "apiserver: default\n", "kube-controller-manager": "kcm: original\n"})
    for name in ("read_manifest", "write_manifest", "component_pid", "wait_for", "lab_is_up", "component_healthy"):
        monkeypatch.setattr(lab_profile.lablib, name, getattr(fake, name))
    return fake


def test_a_changed_manifest_is_written_back_byte_for_byte_and_its_component_seen_restarted(lab):
    original = {"kube-apiserver": "apiserver: default\n", "kube-controller-manager": "kcm:   original\n"}
    assert lab_profile.restore_manifests(original) == ["kube-controller-manager"]
    assert lab.manifests == original and lab.writes == ["kube-controller-manager"]
    assert lab.pids["kube-controller-manager"] == 101 and lab.pids["kube-apiserver"] == 100


def test_a_component_that_never_restarts_is_an_error_not_a_silent_race(lab):
    lab.restart_after = 99
    with pytest.raises(TimeoutError, match="kube-apiserver restarted with its restored manifest"):
        lab_profile.restore_manifests({"kube-apiserver": "apiserver: fast\n"})


def test_nothing_to_restore_writes_nothing(lab):
    assert lab_profile.restore_manifests({"kube-apiserver": "apiserver: default\n"}) == [] and lab.writes == []
