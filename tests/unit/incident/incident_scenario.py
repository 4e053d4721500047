"""A small cluster with one dead worker (w3), shared by the run tests."""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import has_out_of_service_taint
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageOptions
from incident_fakes import T0, FakeClock, FakeCluster, FakePower, lease, node, pod, volume_attachment


def dead_worker_cluster(w3_ready="Unknown"):
    cluster = FakeCluster(
        [
            node("cp1", labels={"node-role.kubernetes.io/control-plane": ""}),
            node("w1"),
            node("w2"),
            node("w3", ready=w3_ready, since=T0 - 600),
        ]
    )
    for name in ("cp1", "w1", "w2"):
        cluster.node_leases[name] = lease(name, T0 - 5)
    cluster.node_leases["w3"] = lease("w3", T0 - 600)
    cluster.pods = [
        pod("db-0", "w3", owner=("StatefulSet", "db")),
        pod("web-123-abc", "w3", owner=("ReplicaSet", "web-123")),
        pod("agent-x", "w3", owner=("DaemonSet", "agent")),
        pod("kube-proxy-w3", "w3", namespace="kube-system", annotations={"kubernetes.io/config.mirror": "x"}),
        pod(
            "sticky-0",
            "w3",
            owner=("StatefulSet", "sticky"),
            tolerations=[{"key": "node.kubernetes.io/out-of-service", "operator": "Exists", "effect": "NoExecute"}],
        ),
        pod("web-123-def", "w1", owner=("ReplicaSet", "web-123")),
    ]
    cluster.replicasets[("app", "web-123")] = {"metadata": {"ownerReferences": [{"kind": "Deployment", "name": "web"}]}}
    cluster.deployments[("app", "web")] = {"spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}}}
    cluster.attachments = [volume_attachment("csi-abc", "w3", pv="pv-db-0"), volume_attachment("csi-other", "w1")]
    return cluster


def controllers(cluster, detach_after=4.0, replace_after=6.0):
    """Act like the attach-detach and workload controllers once the taint is on w3."""
    state = {"tainted_at": None}

    def tick(now):
        if not has_out_of_service_taint(cluster.nodes["w3"]):
            return
        state["tainted_at"] = state["tainted_at"] or now
        if now - state["tainted_at"] >= detach_after:
            cluster.attachments = [a for a in cluster.attachments if a["spec"]["nodeName"] != "w3"]
        if now - state["tainted_at"] >= replace_after and not cluster.get_pod("app", "db-0"):
            cluster.pods.append(pod("db-0", "w1", owner=("StatefulSet", "db"), created=now - 1))
            cluster.pods.append(pod("web-123-xyz", "w2", owner=("ReplicaSet", "web-123"), created=now - 1))

    return tick


def options(**overrides):
    values = {"node": "w3", "job_id": "job-1", "poll_interval": 1, "detach_timeout": 30, "replacement_timeout": 30}
    values.update(overrides)
    return OutageOptions(**values)


def setup(power_state="off", **cluster_args):
    cluster = dead_worker_cluster(**cluster_args)
    clock = FakeClock()
    clock.controllers.append(controllers(cluster))
    return cluster, clock, FakePower(power_state)
