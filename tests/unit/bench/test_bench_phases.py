"""bench/phases.py: node-outage's plan and outcome kept whole, and a run's phases in seconds after power-off;
bench/node_watch_chain.py's idle check (no playbook under way)."""

import sys
from pathlib import Path

import phases

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integration" / "eda"))

# What ansible-rulebook's log holds for one node-outage run: ansible-core's YAML result format (ansible.cfg), a proof
# message folded over several lines, colours on (the callback colours ok results green). Written for this test in
# the shape node-outage prints.
GREEN, RESET = "\x1b[0;32m", "\x1b[0m"
RUN_OUTPUT = f"""
PLAY [Fail over dead nodes, proven powered off] ********************************

TASK [nodeguard.failover.node_outage : Show the plan | ng-worker2] *************
{GREEN}ok: [localhost] => {RESET}
{GREEN}    msg:{RESET}
{GREEN}    - 'timing: not_ready_seconds=20 (applied-profile), lease_margin_seconds=10 (applied-profile);{RESET}
{GREEN}        Lease renew interval 1s'{RESET}
{GREEN}    - 'prove | done | not-ready: OK (node is Unknown for 21s (need 20s)); lease-silent:{RESET}
{GREEN}        OK (Lease renewed 26s ago (> 3s)); power-off: OK (redfish reads power OFF (OFF{RESET}
{GREEN}        in two readings 5s apart); identity: UUID 1234 matches node ng-worker2)'{RESET}
{GREEN}    - fence | done | not requested (fence=false){RESET}
{GREEN}    - taint | done | add node.kubernetes.io/out-of-service=nodeshutdown:NoExecute{RESET}

TASK [nodeguard.failover.node_outage : Show the outcome | ng-worker2] **********
{GREEN}ok: [localhost] => {RESET}
{GREEN}    msg:{RESET}
{GREEN}    - outage complete (fresh){RESET}

PLAY RECAP *********************************************************************
localhost                  : ok=7    changed=1    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0
"""


def test_the_plan_is_kept_whole_every_message_and_every_line_of_it():
    plan = phases.task_messages(RUN_OUTPUT, phases.PLAN_TASK)
    assert len(plan) == 4
    assert plan[0] == ("timing: not_ready_seconds=20 (applied-profile), lease_margin_seconds=10 (applied-profile); Lease renew interval 1s")
    (proof,) = phases.proofs(plan)
    # the whole proof message, not its first line: the power-off reading and the identity are at its end
    assert proof.startswith("prove | done | not-ready: OK") and proof.endswith("identity: UUID 1234 matches node ng-worker2)")
    assert phases.task_messages(RUN_OUTPUT, phases.OUTCOME_TASK) == ["outage complete (fresh)"]


def test_no_such_task_is_no_messages():
    assert phases.task_messages("PLAY RECAP ***\n", phases.PLAN_TASK) == []


def test_the_last_run_of_a_task_counts():
    second = RUN_OUTPUT.replace("outage complete (fresh)", "outage complete (resumed)")
    assert phases.task_messages(RUN_OUTPUT + second, phases.OUTCOME_TASK) == ["outage complete (resumed)"]


def test_steps_are_seconds_after_the_power_off():
    steps = {
        "prove": {"start": "2026-11-23T11:36:33Z", "end": "2026-11-23T11:36:39Z", "outcome": "done"},
        "taint": {"start": "2026-11-23T11:36:39Z", "end": "2026-11-23T11:36:39Z", "outcome": "tainted"},
    }
    got = phases.step_seconds(steps, "2026-11-23T11:36:25.231+00:00")
    assert got == {"prove": {"outcome": "done", "start_s": 7.8, "end_s": 13.8}, "taint": {"outcome": "tainted", "start_s": 13.8, "end_s": 13.8}}
    assert phases.step_seconds(None, "2026-11-23T11:36:25.231+00:00") == {}


def test_the_breakdown_names_every_phase_in_order():
    run = {
        "milestones": {"not_ready": 4.5, "event_received": 4.6, "playbook_started": 6.0, "out_of_service_taint": 26.0, "statefulset_replaced": 28.0},
        "rulebook_startup_seconds": 5.1,
        "proofs_whole": ["prove | done | ..."],
        "steps_s": {"prove": {"end_s": 25.8}, "delete-pods": {"end_s": 26.1}, "detach-volumes": {"end_s": 26.9}},
    }
    got = phases.breakdown(run)
    assert list(got) == ["event_s", "rulebook_startup_s", "run_start_s", "first_check_s", "proofs_held_s", "prove_end_s", "proofs", "taint_s", "deletes_s",
                         "detach_s", "replacement_ready_s"]
    assert got["event_s"] == 4.6 and got["run_start_s"] == 6.0 and got["deletes_s"] == 26.1 and got["detach_s"] == 26.9
    # bench-watch: the event is NotReady, the run starts at the benchmark's playbook attempt
    watch = phases.breakdown({"milestones": {"not_ready": 4.5}, "playbook_attempts": [{"started_s": 4.6, "rc": 0}]})
    assert watch["event_s"] == 4.5 and watch["run_start_s"] == 4.6 and watch["rulebook_startup_s"] is None
    assert watch["proofs_held_s"] == {"off_readings": []}
    assert watch["first_check_s"] is None and got["first_check_s"] is None


def test_the_first_check_is_the_runs_earliest_reading():
    readings_s = [{"at_s": 7.59, "reading": "power", "result": "OFF"}, {"at_s": 7.34, "reading": "lease", "result": "watch started"},
                  {"at_s": 18.2, "reading": "lease-stale", "result": "holds"}]
    assert phases.first_check_s({"readings_s": readings_s}) == 7.34
    assert phases.breakdown({"milestones": {}, "readings_s": readings_s})["first_check_s"] == 7.34


def test_each_proof_is_timed_from_the_records_readings_on_the_power_offs_clock():
    readings = [
        {"time": "2026-11-27T08:00:09.000000Z", "reading": "power", "result": "OFF (redfish, identity shown)"},
        {"time": "2026-11-27T08:00:14.250000Z", "reading": "power", "result": "OFF (redfish, identity shown)"},
        {"time": "2026-11-27T08:00:21.500000Z", "reading": "lease-stale", "result": "holds: not changed for 20s"},
        {"time": "2026-11-27T08:00:24.000000Z", "reading": "not-ready", "result": "holds: NotReady for 20s"},
        {"time": "2026-11-27T08:00:25.000000Z", "reading": "not-ready", "result": "holds: again"},
        {"time": "2026-11-27T08:00:25.100000Z", "reading": "power", "result": "unreadable: timeout"},
    ]
    seconds = phases.reading_seconds(readings, "2026-11-27T08:00:00.000+00:00")
    assert [r["at_s"] for r in seconds] == [9.0, 14.25, 21.5, 24.0, 25.0, 25.1]
    assert phases.proof_moments(seconds) == {"lease-stale": 21.5, "not-ready": 24.0, "off_readings": [9.0, 14.25]}
    assert phases.reading_seconds(readings, None) == [] and phases.reading_seconds(None, "2026-11-27T08:00:00+00:00") == []


def test_the_node_watch_rulebook_is_idle_only_when_every_play_has_its_recap():
    from node_watch_chain import rulebook_idle

    recover = "PLAY [Recover nodes after an outage] ****\nTASK [x] ***\n"
    assert rulebook_idle("node_watch: watching Nodes and Leases\n")
    assert not rulebook_idle(RUN_OUTPUT + recover)  # node-recover of the last victim still runs
    assert rulebook_idle(RUN_OUTPUT + recover + "PLAY RECAP ****\nlocalhost : ok=3\n")
