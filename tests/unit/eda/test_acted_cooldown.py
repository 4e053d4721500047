"""Cool-down and dedupe are armed only by a run that acted (issue 21 item 6), in every shipped rulebook.

node-outage reports its outcome with set_stats (nodeguard_outcome: nodes, tainted, trigger); run_playbook's
post_events brings it back as an event. Only an outcome with tainted true sets the facts nodeguard_cooldown (and
nodeguard_dedupe), which drop the node's later node-down events until a once_after rule retracts them.
A throttle is armed when its rule matches, refused run or not. The alert's rulebook throttles only the same event
(node and its time). The power rulebooks throttle a node's runs by node alone (issue 38 item 4: one BMC's POST of
64 records must not queue 64 runs that other nodes wait behind); their run is retried when it fails instead.
The behaviour itself, with a real ansible-rulebook, is in tests/integration/eda/test_rulebook_decisions.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from rulebook_rules import actions, condition

REPO = Path(__file__).resolve().parents[3]
RULEBOOKS = REPO / "extensions" / "eda" / "rulebooks"
# rulebook -> (the condition that makes a node-down event, the dedupe key besides the node or None)
DOWN = {
    "node-failover": ('event.alertname is defined and event.status == "firing"', "event.starts_at"),
    "power-events": ('event.nodeguard_power_event.state == "Off"', "event.nodeguard_power_event.time"),
    "power-poll": ('event.nodeguard_power_event.state == "Off"', "event.nodeguard_power_event.time"),
    "node-watch": ('event.nodeguard_node_event.state == "down"', None),
}
WINDOWS = {"nodeguard_cooldown": "30 minutes", "nodeguard_dedupe": "1 day"}


def rules(name: str) -> list[dict]:
    (ruleset,) = yaml.safe_load((RULEBOOKS / f"{name}.yml").read_text())
    return ruleset["rules"]


def facts_set(rule: dict) -> list[str]:
    return [name for one in actions(rule) for name in (one.get("set_fact") or {}).get("fact", {})]


@pytest.mark.parametrize("name", DOWN)
def test_only_a_tainted_outcome_sets_the_facts_and_a_timer_retracts_each(name: str) -> None:
    setting = [r for r in rules(name) if facts_set(r)]
    (arm,) = setting
    assert condition(arm) == "event.nodeguard_outcome.tainted == true"
    expected = ["nodeguard_cooldown"] + (["nodeguard_dedupe"] if DOWN[name][1] else [])
    assert facts_set(arm) == expected
    ends = [one["post_event"]["event"] for one in actions(arm) if "post_event" in one]
    assert [list(e) for e in ends] == [[f"{fact}_ends"] for fact in expected]
    for fact in expected:
        (over,) = [r for r in rules(name) if condition(r) == f"event.{fact}_ends is defined"]
        assert over["throttle"]["once_after"] == WINDOWS[fact]
        assert over["action"] == {"retract_fact": {"fact": {fact: f"{{{{ event.{fact}_ends }}}}"}}}
        # the fact and its end carry the same values, so the retraction finds the fact
        (fact_values,) = [one["set_fact"]["fact"][fact] for one in actions(arm) if fact in (one.get("set_fact") or {}).get("fact", {})]
        (end_values,) = [e[f"{fact}_ends"] for e in ends if f"{fact}_ends" in e]
        assert fact_values == end_values
    # an outcome without the taint is logged and arms nothing
    arm_index = rules(name).index(arm)
    (untainted,) = [r for r in rules(name)[arm_index + 1 :] if condition(r) == "event.nodeguard_outcome is defined"]
    assert list(untainted["action"]) == ["debug"]


@pytest.mark.parametrize("name", DOWN)
def test_the_facts_drop_node_down_events_before_the_run_and_no_match_throttles_a_node(name: str) -> None:
    down, key = DOWN[name]
    all_rules = rules(name)
    outage = "{{ nodeguard_outage_playbook }}"
    (run_index,) = [i for i, r in enumerate(all_rules) if any(one.get("run_playbook", {}).get("name") == outage for one in actions(r))]
    run = all_rules[run_index]
    assert condition(run) == down
    assert actions(run)[0]["run_playbook"]["post_events"] is True
    # the run's own throttle, if any: the power rulebooks' by node alone, retried when the run fails; the alert's
    # collapses only the same event (node and its time)
    throttle = run.get("throttle")
    if key is None:
        assert throttle is None
    elif name in ("power-events", "power-poll"):
        assert throttle == {"once_within": "10 minutes", "group_by_attributes": ["event.nodeguard_power_event.node"]}
        assert actions(run)[0]["run_playbook"]["retries"] >= 1
        assert actions(run)[0]["run_playbook"]["extra_vars"]["nodeguard_trigger"] == f"{{{{ {key} }}}}"
    else:
        assert len(throttle["group_by_attributes"]) == 2 and throttle["group_by_attributes"][1] == key
        assert throttle["once_within"] == "10 minutes"
        assert actions(run)[0]["run_playbook"]["extra_vars"]["nodeguard_trigger"] == f"{{{{ {key} }}}}"
    guards = all_rules[run_index - (2 if key else 1) : run_index]
    facts = ["nodeguard_dedupe", "nodeguard_cooldown"] if key else ["nodeguard_cooldown"]
    for guard, fact in zip(guards, facts, strict=True):
        first, second = guard["condition"]["all"]
        assert first == f"fact.{fact}.nodes is defined"
        assert second.startswith(down) and f"in facts.m_0.{fact}.nodes" in second
        if fact == "nodeguard_dedupe":
            assert f"{key} == facts.m_0.nodeguard_dedupe.trigger" in second
        assert list(guard["action"]) == ["debug"]


def test_node_outage_reports_its_outcome_for_the_rulebooks() -> None:
    (play,) = yaml.safe_load((REPO / "playbooks" / "node_outage.yml").read_text())
    (report,) = play["post_tasks"]  # after the role: reached only when every node's run succeeded
    assert report["ansible.builtin.set_stats"]["data"] == {
        "nodeguard_outcome": {
            "nodes": "{{ outage_nodes | default([]) | nodeguard.failover.k8s_node_names }}",
            "tainted": "{{ node_outage_result.tainted }}",
            "trigger": "{{ nodeguard_trigger | default('') }}",
        }
    }
