"""module_utils/components/health.py: a restarted component is a stable process that answers ok, else one
message that says what was seen (the lab tests grep "is not a stable process" and "did not answer ok")."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.components import health
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError

URL = "http://127.0.0.1:10248/healthz"


class FakeClock:
    """Monotonic time that advances only when sleeping."""

    def __init__(self):
        self.now, self.slept = 100.0, []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def unit(pid, restarts=0, active="active", sub="running"):
    """What `systemctl show -p ActiveState -p SubState -p MainPID -p NRestarts kubelet` prints (systemd 252)."""
    return health.ProcessState.parse(f"MainPID={pid}\nNRestarts={restarts}\nActiveState={active}\nSubState={sub}\n")


def reads(*states):
    """A process reader returning the given states one read after another (the last one repeats)."""
    states = list(states)

    def read():
        return states.pop(0) if len(states) > 1 else states[0]

    return read


def answers(*replies):
    """A health endpoint answering the given Answers one request after another (the last one repeats)."""
    replies, asked = list(replies), []

    def ask(url):
        asked.append(url)
        return replies.pop(0) if len(replies) > 1 else replies[0]

    ask.asked = asked
    return ask


REFUSED = health.Answer(0, error="URLError: <urlopen error [Errno 111] Connection refused>")
OK = health.Answer(200, "ok")


def test_parse_reads_systemctl_show():
    state = unit(4242, restarts=2)
    assert state == health.ProcessState("active", "running", 4242, 2)
    assert state.shown() == "PID 4242 (active/running, NRestarts=2)"
    assert health.ProcessState.parse("ActiveState=activating\nSubState=auto-restart\nMainPID=0\nNRestarts=7\n").running() is False


def test_a_stable_process_that_answers_ok_is_healthy():
    clock, ask = FakeClock(), answers(REFUSED, REFUSED, OK)
    result = health.check("kubelet", "kubelet", reads(unit(4242)), 10, URL, ask, 180, clock)
    assert result == {"process": {"active_state": "active", "sub_state": "running", "main_pid": 4242, "restarts": 0}, "answer": "ok"}
    assert ask.asked == [URL] * 3
    assert clock.slept == [10, 2, 2]


def test_a_crash_looping_unit_is_not_stable_new_pid():
    with pytest.raises(health.ComponentHealthError) as e:
        health.check("kubelet", "kubelet", reads(unit(4242, 3), unit(4301, 4)), 10, URL, answers(OK), 180, FakeClock())
    assert str(e.value) == (
        "kubelet is not a stable process: PID 4242 (active/running, NRestarts=3) after the restart, "
        "PID 4301 (active/running, NRestarts=4) 10 s later (it exited and was started again: crash-looping)"
    )
    assert isinstance(e.value, NodeguardError)


def test_a_unit_restarted_by_systemd_is_not_stable_even_with_the_same_pid():
    # PIDs can be reused; NRestarts grows with each restart systemd makes on its own.
    with pytest.raises(health.ComponentHealthError, match="is not a stable process"):
        health.check("kubelet", "rke2-agent", reads(unit(4242, 0), unit(4242, 1)), 10, URL, answers(OK), 180, FakeClock())


def test_a_unit_that_is_not_running_after_the_restart_is_not_stable():
    with pytest.raises(health.ComponentHealthError, match=r"^kubelet is not a stable process: PID 0 \(activating/auto-restart"):
        health.check("kubelet", "kubelet", reads(unit(0, 1, "activating", "auto-restart")), 10, URL, answers(OK), 180, FakeClock())


def test_never_answering_ok_fails_after_the_timeout_with_the_last_answer():
    clock = FakeClock()
    with pytest.raises(health.ComponentHealthError) as e:
        health.check("kubelet", "kubelet", reads(unit(4242)), 10, URL, answers(health.Answer(500, "[-]syncloop failed\n")), 30, clock)
    assert str(e.value) == f"the kubelet did not answer ok on {URL} within 30 s (HTTP 500: [-]syncloop failed)"
    assert clock.now - 100.0 == 10 + 30  # the stable time, then the timeout on the monotonic clock


def test_refused_connection_is_named():
    with pytest.raises(health.ComponentHealthError, match=r"did not answer ok .* \(URLError: <urlopen error \[Errno 111\] Connection refused>\)"):
        health.check("kubelet", "kubelet", reads(unit(4242)), 0, URL, answers(REFUSED), 4, FakeClock())


def test_a_process_that_dies_while_it_is_asked_is_not_stable():
    read = reads(unit(4242), unit(4242), unit(4400, 1))
    with pytest.raises(health.ComponentHealthError, match=r"PID 4242 .* after the restart, PID 4400 .* once it answered ok"):
        health.check("kubelet", "kubelet", read, 10, URL, answers(OK), 180, FakeClock())


def test_without_a_url_only_the_process_is_checked():
    ask = answers(REFUSED)
    result = health.check("kubelet", "k3s", reads(unit(77)), 10, "", ask, 180, FakeClock())
    assert result["answer"] == "" and ask.asked == []


def test_check_still_compares_with_the_first_pid():
    assert health.check_still("kubelet", reads(unit(4242, 5)), 4242, "at the last check")["process"]["main_pid"] == 4242
    with pytest.raises(health.ComponentHealthError) as e:
        health.check_still("kubelet", reads(unit(4500, 1)), 4242, "at the last check")
    assert str(e.value) == (
        "kubelet is not a stable process: PID 4242 after the restart, PID 4500 (active/running, NRestarts=1) "
        "at the last check (it exited and was started again)"
    )


# ---------------------------------------------------------------- a process found by its flags (static pods)

# `pgrep -a -f kube-controller-manager` lines on a kubeadm v1.35 control-plane node (PID, then the command line).
OLD_KCM = "1180 kube-controller-manager --authentication-kubeconfig=/etc/kubernetes/controller-manager.conf --node-monitor-grace-period=40s"
NEW_KCM = "2210 kube-controller-manager --authentication-kubeconfig=/etc/kubernetes/controller-manager.conf --node-monitor-grace-period=20s"
FLAGS = {"node-monitor-grace-period": "20s"}
KCM_URL = "https://127.0.0.1:10257/healthz"


def lines(*readings):
    """pgrep lines, one list per reading (the last one repeats)."""
    return reads(*[list(reading) for reading in readings])


def test_answers_waits_for_the_process_with_the_new_flags():
    # The old process still answers while the kubelet has not yet started the new manifest.
    clock = FakeClock()
    result = health.answers("kube-controller-manager", KCM_URL, answers(OK), lines([OLD_KCM], [OLD_KCM], [NEW_KCM]), FLAGS, 60, 2, clock)
    assert result["process"] == {"main_pid": 2210, "argv": NEW_KCM.split()[1:]} and result["answer"] == "ok"
    assert clock.slept == [2, 2]


def test_answers_fails_when_only_the_old_process_runs():
    with pytest.raises(health.ComponentHealthError) as e:
        health.answers("kube-controller-manager", KCM_URL, answers(OK), lines([OLD_KCM]), FLAGS, 10, 2, FakeClock())
    assert str(e.value) == "no kube-controller-manager process runs with the new flags within 10 s"
    assert "--authentication-kubeconfig" not in str(e.value)  # command lines are never quoted


def test_answers_without_flags_only_asks_the_endpoint():
    # k3s: every component runs inside the k3s process.
    result = health.answers("kube-apiserver", "https://127.0.0.1:6443/readyz", answers(REFUSED, OK), None, None, 60, 2, FakeClock())
    assert result == {"process": {}, "answer": "ok"}


def test_answers_names_an_endpoint_that_never_answers():
    with pytest.raises(health.ComponentHealthError, match=r"^the kube-controller-manager did not answer ok on https://127.0.0.1:10257/healthz within 6 s"):
        health.answers("kube-controller-manager", KCM_URL, answers(REFUSED), lines([NEW_KCM]), FLAGS, 6, 2, FakeClock())


def test_still_passes_for_the_same_process_that_still_answers():
    clock = FakeClock()
    result = health.still("kube-controller-manager", 2210, lines([NEW_KCM]), KCM_URL, answers(OK), 10, "the leader lease was renewed", clock)
    assert result == {"process": {"main_pid": 2210}, "answer": "ok"} and clock.slept == [10]


def test_still_fails_for_a_crash_looping_process_that_answered_until_it_led():
    crashed = "2377 kube-controller-manager --node-monitor-grace-period=20s"
    with pytest.raises(health.ComponentHealthError) as e:
        health.still("kube-controller-manager", 2210, lines([crashed]), KCM_URL, answers(OK), 10, "the leader lease was renewed", FakeClock())
    assert str(e.value) == (
        "kube-controller-manager is not a stable process: PID 2210 answered its health endpoint with the new flags but no longer runs "
        "10 s later (after the leader lease was renewed; it exited or was restarted: crash-looping)."
    )


def test_still_fails_when_the_endpoint_stops_answering():
    with pytest.raises(health.ComponentHealthError, match=r"^the kube-apiserver no longer answers ok on .* 10 s after it did \(HTTP 500: \[-\]etcd failed\)"):
        health.still("kube-apiserver", None, None, "https://127.0.0.1:6443/readyz", answers(health.Answer(500, "[-]etcd failed")), 10, "", FakeClock())
