"""bench/timeline.py's pure parts: which pods to move so that a chosen victim holds a web and a db pod."""

import timeline


def pod(name, node):
    return {"name": name, "app": name.split("-")[0], "node": node}


def test_a_victim_that_holds_both_needs_no_move():
    pods = [pod("db-0", "ng-worker4"), pod("db-1", "ng-worker1"), pod("web-a", "ng-worker4"), pod("web-b", "ng-worker2")]
    assert timeline.pods_to_move(pods, "ng-worker4") == []


def test_the_first_db_pod_and_a_web_pod_from_the_fullest_worker_are_moved():
    pods = [pod("db-1", "ng-worker2"), pod("db-0", "ng-worker1"), pod("web-a", "ng-worker1"), pod("web-b", "ng-worker2"), pod("web-c", "ng-worker2")]
    assert timeline.pods_to_move(pods, "ng-worker4") == ["db-0", "web-b"]


def test_only_what_the_victim_lacks_is_moved():
    pods = [pod("db-0", "ng-worker1"), pod("db-1", "ng-worker4"), pod("web-a", "ng-worker1"), pod("web-b", "ng-worker2")]
    assert timeline.pods_to_move(pods, "ng-worker4") == ["web-a"]
    pods = [pod("db-0", "ng-worker1"), pod("db-1", "ng-worker2"), pod("web-a", "ng-worker4"), pod("agent-x", "ng-worker1")]
    assert timeline.pods_to_move(pods, "ng-worker4") == ["db-0"]


class FakeChain:
    def __init__(self, workdir, workers, inventory_vars):
        self.workdir, self.inventory_vars, self.stopped = workdir, inventory_vars, False

    def redacted_log(self):
        return f"log of {self.workdir.name}\n"

    def stop(self):
        self.stopped = True


def test_one_rulebook_led_path_for_both_rulebooks_and_a_fresh_chain_for_a_victim_seen_before(tmp_path, monkeypatch):
    monkeypatch.setitem(timeline.CHAIN_STARTERS, "node-watch.yml", FakeChain)
    monkeypatch.setattr(timeline.lablib, "worker_names", lambda: ["ng-worker1", "ng-worker2"])
    log = tmp_path / "rulebook-fast-node-watch.log"
    chains = timeline.Chains(tmp_path, log, "node-watch.yml", {"node_outage_lease_margin_seconds": 2})
    first = chains.for_victim("ng-worker1")
    assert chains.for_victim("ng-worker2") is first  # another victim: the same rulebook
    again = chains.for_victim("ng-worker1")  # its cool-down would refuse: a fresh rulebook
    assert again is not first and first.stopped and again.inventory_vars == {"node_outage_lease_margin_seconds": 2}
    chains.stop()
    assert again.stopped and log.read_text() == "log of chain-1\nlog of chain-2\n"
    assert set(timeline.CHAIN_STARTERS) == {"power-events.yml", "node-watch.yml"}


def test_the_rulebook_logs_are_named_by_profile_and_rulebook():
    assert timeline.rulebook_log_name("power-event", "power-events.yml") == "rulebook-power-event.log"
    assert timeline.rulebook_log_name("fast", "node-watch.yml") == "rulebook-fast-node-watch.log"


def test_the_node_watch_chain_shortens_only_node_recovers_healthy_wait_and_a_variant_still_wins(monkeypatch):
    import sys
    import types

    made = []
    module = types.ModuleType("node_watch_chain")
    module.NodeWatchChain = lambda workdir, workers, inventory_vars, kubeconfig: made.append(inventory_vars)
    monkeypatch.setitem(sys.modules, "node_watch_chain", module)
    monkeypatch.setattr(timeline.lablib, "kubeconfig", lambda: "/lab/kubeconfig")
    timeline.node_watch_chain("/w", ["ng-worker1"], {})
    timeline.node_watch_chain("/w", ["ng-worker1"], {"node_outage_lease_margin_seconds": 2, "node_recover_healthy_seconds": 30})
    assert made[0] == {"node_recover_healthy_seconds": 10}
    assert made[1] == {"node_outage_lease_margin_seconds": 2, "node_recover_healthy_seconds": 30}
