"""The shipped power-event rulebooks and their vars: only checked values go to node-outage (with the event's time),
PoweringOff and On only log, refusals come first, no job id, no node acted on by default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from rulebook_rules import action, condition

REPO = Path(__file__).resolve().parents[3]
EDA = REPO / "extensions" / "eda"
RULEBOOKS = ["power-events", "power-poll"]
# Event fields made or checked by the filter redfish_power_events / the source bmc_power_poll, and the time
# ansible-rulebook itself received the event (its insert_meta_info filter, after ours: the filter and the source
# emit no meta, so the value is always ansible-rulebook's own).
CHECKED = {"event.nodeguard_power_event.node", "event.nodeguard_power_event.time", "event.meta.received_at"}


def ruleset(name: str) -> dict:
    (only,) = yaml.safe_load((EDA / "rulebooks" / f"{name}.yml").read_text())
    return only


def variables(name: str) -> dict:
    return yaml.safe_load((EDA / "vars" / f"{name}.yml").read_text())


def expressions(value) -> list[str]:
    if isinstance(value, str):
        return [e.strip() for e in re.findall(r"{{(.*?)}}", value)]
    if isinstance(value, dict):
        return [e for v in value.values() for e in expressions(v)]
    if isinstance(value, list):
        return [e for v in value for e in expressions(v)]
    return []


@pytest.mark.parametrize("name", RULEBOOKS)
def test_node_outage_gets_only_checked_values_and_the_event_time(name: str) -> None:
    rules = ruleset(name)["rules"]
    (run,) = [action(r)["run_playbook"] for r in rules if "run_playbook" in action(r)]
    assert run["name"] == "{{ nodeguard_outage_playbook }}"
    assert run["extra_vars"] == {
        "outage_nodes": "{{ [event.nodeguard_power_event.node] }}",  # a one-element list: "123" stays a string
        "node_outage_power_event_time": "{{ event.nodeguard_power_event.time }}",
        # the event's age is bounded when it arrived (the rulebook's clock), not when its queued run starts
        "node_outage_power_event_received": "{{ event.meta.received_at }}",
        # the run starts within seconds of the power-off: it must wait for the Lease proof
        "node_outage_proof_timeout": "{{ nodeguard_power_event_proof_timeout }}",
        # echoed in node-outage's outcome: the dedupe key
        "nodeguard_trigger": "{{ event.nodeguard_power_event.time }}",
    }
    assert variables(name)["nodeguard_power_event_proof_timeout"] > 0
    for expression in expressions(run):
        used = set(re.findall(r"event\.[a-z_.]+", expression))
        assert used <= CHECKED, f"{expression!r} passes an unchecked event field"
        assert "|" not in expression


@pytest.mark.parametrize("name", RULEBOOKS)
def test_only_powered_off_acts_deduped_per_event_and_cooled_down_per_node(name: str) -> None:
    rules = ruleset(name)["rules"]
    (run_index,) = [i for i, r in enumerate(rules) if "run_playbook" in action(r)]
    run = rules[run_index]
    assert condition(run) == 'event.nodeguard_power_event.state == "Off"'
    # at most one run per node (so per BMC endpoint, <destination>/<node>) per 10 minutes, whatever the event times:
    # one POST of 64 records with 64 times queues one run, not 64; dedupe and cool-down come from the outcome
    assert run["throttle"] == {"once_within": "10 minutes", "group_by_attributes": ["event.nodeguard_power_event.node"]}
    # a run that failed (a transient error) is retried with the same event, whose age was fixed at its arrival
    assert action(run)["run_playbook"]["retries"] >= 1 and action(run)["run_playbook"]["delay"] > 0
    dedupe, cooldown = rules[run_index - 2], rules[run_index - 1]
    assert "facts.m_0.nodeguard_dedupe.nodes" in condition(dedupe) and "facts.m_0.nodeguard_dedupe.trigger" in condition(dedupe)
    assert "facts.m_0.nodeguard_cooldown.nodes" in condition(cooldown)
    assert set(action(dedupe)) == set(action(cooldown)) == {"debug"}
    # the lists and the other states are decided before the acting rules (the first match decides)
    logged = ("nodeguard_deny_nodes", "nodeguard_allow_nodes", 'state == "On"') + (('state == "Reset"',) if name == "power-events" else ())
    for text in logged:
        (index,) = [i for i, r in enumerate(rules) if text in condition(r)]
        assert index < run_index - 2 and set(action(rules[index])) == {"debug"}
    assert not any("job_id" in str(action(r)) for r in rules)


def test_powering_off_waits_for_powered_off() -> None:
    (rule,) = [r for r in ruleset("power-events")["rules"] if "PoweringOff" in condition(r)]
    assert set(action(rule)) == {"debug"}


def test_refusals_are_decided_first_and_only_logged() -> None:
    first = ruleset("power-events")["rules"][0]
    assert condition(first) == "event.nodeguard_refused is defined"
    assert set(action(first)) == {"debug"}


def test_the_webhook_is_filtered_by_the_mapping_and_each_bmcs_own_token() -> None:
    """No webhook token: one token every BMC holds would let any BMC post for any node. The filter checks each BMC's
    own token (made with the key in NODEGUARD_BMC_TOKEN_KEY, not Alertmanager's token) against the endpoint it posted to."""
    (source,) = ruleset("power-events")["sources"]
    webhook = source["eda.builtin.webhook"]
    assert "token" not in webhook and webhook["certfile"] and webhook["keyfile"]
    filters = {"nodeguard.failover.redfish_power_events": {"vars_file_env": "NODEGUARD_POWER_EVENT_VARS", "token_env": "NODEGUARD_BMC_TOKEN_KEY"}}
    assert source["filters"] == [filters]


def test_a_host_reset_only_logs() -> None:
    (rule,) = [r for r in ruleset("power-events")["rules"] if 'state == "Reset"' in condition(r)]
    assert set(action(rule)) == {"debug"}


def test_the_poll_source_is_configured_from_the_vars() -> None:
    (source,) = ruleset("power-poll")["sources"]
    assert source["nodeguard.failover.bmc_power_poll"] == {
        "bmcs": "{{ nodeguard_power_poll_bmcs }}",
        "interval": "{{ nodeguard_power_poll_interval }}",
        "max_concurrency": "{{ nodeguard_power_poll_max_concurrency }}",
    }


@pytest.mark.parametrize("name", RULEBOOKS)
def test_nothing_is_mapped_or_allowed_by_default(name: str) -> None:
    values = variables(name)
    assert values["nodeguard_allow_nodes"] == [] and values["nodeguard_deny_nodes"] == []
    assert values.get("nodeguard_power_event_bmcs", []) == [] and values.get("nodeguard_power_poll_bmcs", []) == []
    assert values["nodeguard_outage_playbook"] == "nodeguard.failover.node_outage"
    used = {v for e in expressions(ruleset(name)) for v in re.findall(r"(?<![.\w])(nodeguard_[a-z_]+)", e)}
    assert used <= set(values), f"variables used but not in vars/{name}.yml: {used - set(values)}"
