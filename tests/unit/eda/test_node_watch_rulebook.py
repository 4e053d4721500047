"""The shipped node-watch rulebook and its vars: the storm rule comes first and is the source's verdict of
node-outage's rule (one name, one variable, one unit); only checked values reach the playbooks; no node is acted on
by default."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from rulebook_rules import action, condition

REPO = Path(__file__).resolve().parents[3]
EDA = REPO / "extensions" / "eda"
RULEBOOK = yaml.safe_load((EDA / "rulebooks" / "node-watch.yml").read_text())
VARS = yaml.safe_load((EDA / "vars" / "node-watch.yml").read_text())
ROLE_DEFAULTS = yaml.safe_load((REPO / "roles" / "node_outage" / "defaults" / "main.yml").read_text())
CHECKED = {"[event.nodeguard_node_event.node]", "node_outage_max_unhealthy", "nodeguard_node_watch_proof_timeout"}


def test_the_source_and_node_outage_share_one_storm_rule() -> None:
    (ruleset,) = RULEBOOK
    (source,) = ruleset["sources"]
    assert source["nodeguard.failover.node_watch"]["max_unhealthy"] == "{{ node_outage_max_unhealthy }}"
    # the same name and default as node-outage's own variable
    assert VARS["node_outage_max_unhealthy"] == ROLE_DEFAULTS["node_outage_max_unhealthy"]
    first = ruleset["rules"][0]
    assert condition(first) == 'event.nodeguard_node_event.refused == "storm"'
    assert "run_playbook" not in action(first)
    (outage,) = [r for r in ruleset["rules"] if action(r).get("run_playbook", {}).get("name") == "{{ nodeguard_outage_playbook }}"]
    assert action(outage)["run_playbook"]["extra_vars"]["node_outage_max_unhealthy"] == "{{ node_outage_max_unhealthy }}"
    # the event comes at the first NotReady: node-outage must wait for its proofs, not refuse at once
    assert action(outage)["run_playbook"]["extra_vars"]["node_outage_proof_timeout"] == "{{ nodeguard_node_watch_proof_timeout }}"
    assert VARS["nodeguard_node_watch_proof_timeout"] > 60


def test_only_checked_values_reach_the_playbooks() -> None:
    (ruleset,) = RULEBOOK
    runs = [action(r)["run_playbook"] for r in ruleset["rules"] if "run_playbook" in action(r)]
    assert [run["name"] for run in runs] == ["{{ nodeguard_outage_playbook }}", "{{ nodeguard_recover_playbook }}"]
    for run in runs:
        used = {e.strip() for value in run["extra_vars"].values() for e in re.findall(r"{{(.*?)}}", value)}
        assert used <= CHECKED, used
        assert "job_id" not in str(run)


def test_nothing_is_acted_on_by_default_and_refusals_come_first() -> None:
    assert VARS["nodeguard_allow_nodes"] == [] and VARS["nodeguard_deny_nodes"] == []
    (ruleset,) = RULEBOOK
    names = [r["name"] for r in ruleset["rules"]]
    acting = [i for i, r in enumerate(ruleset["rules"]) if "run_playbook" in action(r)]
    assert min(acting) > max(names.index(n) for n in names if "allow-list" in n or "Deny" in n or "Storm" in n)
    assert ruleset["execution_strategy"] == "sequential" and ruleset["hosts"] == "localhost"


def test_the_source_reports_a_node_again_while_it_stays_down_and_untainted() -> None:
    """issue 38 item 9: a run that failed is not the end; the interval comes from the vars file, longer than a run."""
    (source,) = RULEBOOK[0]["sources"]
    assert source["nodeguard.failover.node_watch"]["rereport_interval"] == "{{ nodeguard_node_watch_rereport_interval }}"
    assert VARS["nodeguard_node_watch_rereport_interval"] > VARS["nodeguard_node_watch_proof_timeout"]
