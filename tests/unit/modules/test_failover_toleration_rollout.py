"""failover_toleration_rollout: the running pods that keep the tolerations they were admitted with (issue 34 item 7),
their owners, and rolling those one at a time (logic in module_utils/rollout.py, k8s/workloads.py).

A fake cluster stands in for the API: Deployments own ReplicaSets own pods, and a restart gives the workload a new
generation whose controller replaces its pods with ones admitted with the new defaults, on the next clock tick."""

import copy

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils import rollout
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.workloads import RESTARTED_AT, rollout_status
from ansible_collections.nodeguard.failover.plugins.module_utils.model.tolerations import NOT_READY, UNREACHABLE
from ansible_collections.nodeguard.failover.plugins.modules.failover_toleration_rollout import run

NOW = "2026-11-29T05:00:00Z"
PARAMS = {"not_ready_toleration_seconds": 20, "unreachable_toleration_seconds": 20, "namespaces": [], "roll": False, "timeout": 60,
          "interval": 5}


def tolerations(seconds):
    """What the DefaultTolerationSeconds admission plugin adds, with these seconds."""
    return [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds} for key in (NOT_READY, UNREACHABLE)]


def pod(name, namespace="shop", owner=None, seconds=300, phase="Running", annotations=None):
    refs = [{"kind": owner[0], "name": owner[1], "controller": True}] if owner else []
    return {"metadata": {"name": name, "namespace": namespace, "ownerReferences": refs, "annotations": annotations or {}},
            "spec": {"tolerations": tolerations(seconds)}, "status": {"phase": phase}}


def workload(kind, name, namespace="shop", template_tolerations=None, replicas=1):
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {"replicas": replicas, "template": {"metadata": {}, "spec": {"tolerations": template_tolerations or []}}},
            "status": {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas, "availableReplicas": replicas,
                       "readyReplicas": replicas, "currentRevision": "r1", "updateRevision": "r1",
                       "desiredNumberScheduled": replicas, "updatedNumberScheduled": replicas, "numberAvailable": replicas}}


class FakeWorkloads:
    """k8s/workloads.Workloads on dicts. ``stuck``: workloads whose controller never finishes a rollout."""

    def __init__(self, pods, workloads, replica_sets, stuck=()):
        self.pods, self.workloads, self.replica_sets, self.stuck = pods, workloads, replica_sets, set(stuck)
        self.restarts, self.pending = [], []

    def list_pods_in(self, namespaces):
        return copy.deepcopy([item for item in self.pods if not namespaces or item["metadata"]["namespace"] in namespaces])

    def get_replicaset(self, namespace, name):
        return copy.deepcopy(self.replica_sets.get((namespace, name)))

    def get_workload(self, kind, namespace, name):
        return copy.deepcopy(self.workloads.get((kind, namespace, name)))

    def restart(self, kind, namespace, name, at):
        self.restarts.append((kind, namespace, name))
        found = self.workloads[(kind, namespace, name)]
        found["spec"]["template"]["metadata"].setdefault("annotations", {})[RESTARTED_AT] = at
        found["metadata"]["generation"] += 1
        self.pending.append((kind, namespace, name))
        return copy.deepcopy(found)

    def tick(self):
        """The controllers: each pending rollout replaces its workload's pods with ones admitted with 20 s."""
        for key in self.pending:
            if key[2] in self.stuck:
                continue
            found = self.workloads[key]
            found["status"]["observedGeneration"] = found["metadata"]["generation"]
            for item in self.pods:
                if owner_name(self, item) == key[2]:
                    item["spec"]["tolerations"] = tolerations(20)
        self.pending = [key for key in self.pending if key[2] in self.stuck]


def owner_name(fake, item):
    (ref,) = item["metadata"]["ownerReferences"] or [{"kind": None, "name": None}]
    if ref["kind"] == "ReplicaSet":
        return fake.replica_sets[(item["metadata"]["namespace"], ref["name"])]["metadata"]["ownerReferences"][0]["name"]
    return ref["name"]


class TickingClock:
    def __init__(self, fake):
        self.t, self.fake = 0.0, fake

    def now(self):
        return self.t

    def monotonic(self):
        return self.t

    def sleep(self, seconds):
        self.t += seconds
        self.fake.tick()


def replica_set(name, deployment, namespace="shop"):
    return {"metadata": {"name": name, "namespace": namespace, "ownerReferences": [{"kind": "Deployment", "name": deployment, "controller": True}]}}


def cluster(**overrides):
    """web (Deployment, 2 pods), db (StatefulSet), pinned (Deployment whose template sets 300 s itself), a DaemonSet
    pod, a static pod, a bare pod, a Job's pod, a finished pod and a pod created after the tune."""
    workloads = {
        ("Deployment", "shop", "web"): workload("Deployment", "web", replicas=2),
        ("StatefulSet", "shop", "db"): workload("StatefulSet", "db"),
        ("Deployment", "shop", "pinned"): workload("Deployment", "pinned", template_tolerations=[
            {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]),
    }
    replica_sets = {("shop", "web-7c9d"): replica_set("web-7c9d", "web"), ("shop", "pinned-5f5f"): replica_set("pinned-5f5f", "pinned")}
    pods = [
        pod("web-7c9d-aaaaa", owner=("ReplicaSet", "web-7c9d")),
        pod("web-7c9d-bbbbb", owner=("ReplicaSet", "web-7c9d")),
        pod("db-0", owner=("StatefulSet", "db")),
        pod("pinned-5f5f-ccccc", owner=("ReplicaSet", "pinned-5f5f")),
        {**pod("node-exporter-x1", namespace="monitoring", owner=("DaemonSet", "node-exporter")),
         "spec": {"tolerations": [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}]}},
        pod("kube-apiserver-cp1", namespace="kube-system", annotations={"kubernetes.io/config.mirror": "x"}),
        pod("debug", namespace="default"),
        pod("backup-29392-zzz", namespace="shop", owner=("Job", "backup-29392")),
        pod("migrate-done", namespace="shop", owner=("Job", "migrate"), phase="Succeeded"),
        pod("web-7c9d-new", owner=("ReplicaSet", "web-7c9d"), seconds=20),
    ]
    return FakeWorkloads(pods, workloads, replica_sets, **overrides)


def names(pods):
    return [f"{p['namespace']}/{p['name']}" for p in pods]


def test_listed_are_the_pods_a_new_pod_of_their_owner_would_not_resemble():
    result = run(cluster(), PARAMS, check_mode=False, now=NOW)
    assert names(result["pods"]) == ["shop/web-7c9d-aaaaa", "shop/web-7c9d-bbbbb", "shop/db-0", "shop/pinned-5f5f-ccccc",
                                     "default/debug", "shop/backup-29392-zzz"]
    by_name = {p["name"]: p for p in result["pods"]}
    # pinned's template sets unreachable itself: only its admission-added not-ready toleration is stale.
    assert [t["key"] for t in by_name["pinned-5f5f-ccccc"]["tolerations"]] == [NOT_READY]
    assert by_name["web-7c9d-aaaaa"]["owner"] == {"kind": "Deployment", "namespace": "shop", "name": "web"}
    assert by_name["debug"]["owner"] is None and not by_name["debug"]["rollable"]
    assert by_name["backup-29392-zzz"]["owner"]["kind"] == "Job" and not by_name["backup-29392-zzz"]["rollable"]


def test_listing_changes_nothing_and_names_one_command_per_workload():
    fake = cluster()
    result = run(fake, PARAMS, check_mode=False, now=NOW)
    assert fake.restarts == [] and result["changed"] is False and result["rolled"] == []
    assert result["commands"] == ["kubectl -n shop rollout restart deployment/web", "kubectl -n shop rollout restart statefulset/db",
                                  "kubectl -n shop rollout restart deployment/pinned"]
    text = "\n".join(result["lines"])
    assert "6 running pods keep the tolerations they were admitted with; new pods get not-ready 20 s, unreachable 20 s:" in text
    assert "  shop/db-0 (StatefulSet shop/db): not-ready 300, unreachable 300" in text
    assert "failover_roll_workloads=true" in text
    assert "2 of them have no Deployment or StatefulSet or DaemonSet to roll" in text
    assert all("\n" not in line for line in result["lines"])


def test_check_mode_reports_the_restarts_it_would_make_and_makes_none():
    fake = cluster()
    result = run(fake, {**PARAMS, "roll": True}, check_mode=True, now=NOW)
    assert fake.restarts == [] and result["changed"] is True and result["rolled"] == []
    assert result["diff"]["after"]["Deployment shop/web"] == {RESTARTED_AT: NOW}
    assert result["diff"]["before"]["Deployment shop/web"] == {RESTARTED_AT: None}
    assert "would roll, one at a time, each to the end of its rollout:" in result["lines"]


def test_roll_restarts_each_workload_once_in_turn_and_a_second_run_finds_nothing():
    fake = cluster()
    result = run(fake, {**PARAMS, "roll": True}, check_mode=False, now=NOW, clock=TickingClock(fake))
    assert fake.restarts == [("Deployment", "shop", "web"), ("StatefulSet", "shop", "db"), ("Deployment", "shop", "pinned")]
    assert [w["name"] for w in result["rolled"]] == ["web", "db", "pinned"]
    again = run(fake, {**PARAMS, "roll": True}, check_mode=False, now=NOW, clock=TickingClock(fake))
    assert again["changed"] is False and again["workloads"] == [] and len(fake.restarts) == 3
    assert names(again["pods"]) == ["default/debug", "shop/backup-29392-zzz"]


def test_a_rollout_that_does_not_finish_stops_the_roll_naming_it():
    fake = cluster(stuck=("db",))
    stopped = r"StatefulSet shop/db did not finish rolling out within 60 s .*rolled before it: Deployment shop/web; the ones after it"
    with pytest.raises(rollout.RolloutError, match=stopped):
        rollout.roll(fake, rollout.targets(rollout.stale_pods(fake, {NOT_READY: 20, UNREACHABLE: 20})), NOW, 60, 5, TickingClock(fake))
    assert ("Deployment", "shop", "pinned") not in fake.restarts


def test_nothing_stale_says_so():
    fake = FakeWorkloads([pod("web-1", owner=("StatefulSet", "web"), seconds=20)], {}, {})
    result = run(fake, PARAMS, check_mode=False, now=NOW)
    assert result["lines"] == ["every running pod has the cluster's default tolerations (not-ready 20 s, unreachable 20 s) or sets its own"]


@pytest.mark.parametrize(("kind", "status", "done"), [
    ("Deployment", {"observedGeneration": 1}, False),  # generation 2 not seen yet
    ("Deployment", {"observedGeneration": 2, "updatedReplicas": 2, "replicas": 3, "availableReplicas": 2}, False),  # an old pod left
    ("Deployment", {"observedGeneration": 2, "updatedReplicas": 2, "replicas": 2, "availableReplicas": 2}, True),
    ("StatefulSet", {"observedGeneration": 2, "updatedReplicas": 1, "readyReplicas": 2, "currentRevision": "a", "updateRevision": "b"}, False),
    ("StatefulSet", {"observedGeneration": 2, "updatedReplicas": 2, "readyReplicas": 2, "currentRevision": "b", "updateRevision": "b"}, True),
    ("DaemonSet", {"observedGeneration": 2, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 2}, False),
    ("DaemonSet", {"observedGeneration": 2, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 3}, True),
])
def test_a_rollout_is_done_as_kubectl_rollout_status_judges_it(kind, status, done):
    item = {"metadata": {"generation": 2}, "spec": {"replicas": 2}, "status": status}
    assert rollout_status(kind, item)[0] is done


def test_flags_left_unset_mean_the_api_servers_own_300_seconds():
    fake = FakeWorkloads([pod("web-1", owner=("StatefulSet", "web"), seconds=300)], {("StatefulSet", "shop", "web"): workload("StatefulSet", "web")}, {})
    result = run(fake, {**PARAMS, "not_ready_toleration_seconds": None, "unreachable_toleration_seconds": None}, check_mode=False, now=NOW)
    assert result["pods"] == []


def test_namespaces_limit_what_is_listed_and_rolled():
    result = run(cluster(), {**PARAMS, "namespaces": ["default"]}, check_mode=False, now=NOW)
    assert names(result["pods"]) == ["default/debug"] and result["workloads"] == []
