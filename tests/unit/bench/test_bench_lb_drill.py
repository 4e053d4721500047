"""bench/lb_drill.py: the in-node connection samples are read in time order and turned into the times the
old connection died and a new one came up."""

import subprocess

import lb_drill

KWOK_OLD = '''ESTAB 0 0 10.89.77.101:52724 10.89.77.5:6443 users:(("kwok",pid=49,fd=3))'''
KWOK_SYN = '''SYN-SENT 0 1 10.89.77.101:43492 10.89.77.5:6443 users:(("kwok",pid=49,fd=7))'''
KWOK_NEW = '''ESTAB 0 0 10.89.77.101:43492 10.89.77.5:6443 users:(("kwok",pid=49,fd=7))'''
PYTHON = '''ESTAB 0 0 10.89.77.101:52682 10.89.77.5:6443 users:(("python3",pid=43,fd=3))'''
OLD = {"10.89.77.101:52724"}


def test_parse_ss_reads_state_queue_address_and_process():
    assert lb_drill.parse_ss(f"{KWOK_SYN}\n{PYTHON}\n\n") == [
        {"state": "SYN-SENT", "local": "10.89.77.101:43492", "process": "kwok", "send_q": 1},
        {"state": "ESTAB", "local": "10.89.77.101:52682", "process": "python3", "send_q": 0},
    ]


def test_samples_of_two_overlapping_loops_are_read_in_time_order(monkeypatch):
    # The loop of the run before still writes to the log: its samples come after this run's in the file.
    log = "\n".join(["@ 110.0", KWOK_SYN, "@ 111.0", KWOK_NEW, "@ 100.0", KWOK_OLD, PYTHON, "@ 101.0", KWOK_SYN])

    def fake_podman(*args, check=True):
        return subprocess.CompletedProcess(args, 0, stdout=log, stderr="")

    monkeypatch.setattr(lb_drill, "podman", fake_podman)
    samples = lb_drill.read_sampling("ng-worker1", "/run/log")
    assert [sample[0] for sample in samples] == [100.0, 101.0, 110.0, 111.0]
    assert samples[0][1] == [["10.89.77.101:52724", "ESTAB", 0]]  # kwok only
    assert lb_drill.connection_times(samples, OLD, lb_down=99.0, lb_back=105.0) == (101.0, 111.0)


def test_connection_times_are_none_when_not_seen():
    samples = [(100.0, [["10.89.77.101:52724", "ESTAB", 0]]), (106.0, [["10.89.77.101:43492", "SYN-SENT", 1]])]
    assert lb_drill.connection_times(samples, OLD, lb_down=99.0, lb_back=105.0) == (106.0, None)
    # the old connection still established after the LB returned: reused, never gone
    samples = [(100.0, [["10.89.77.101:52724", "ESTAB", 0]]), (106.0, [["10.89.77.101:52724", "ESTAB", 0]])]
    assert lb_drill.connection_times(samples, OLD, lb_down=99.0, lb_back=105.0) == (None, 106.0)
