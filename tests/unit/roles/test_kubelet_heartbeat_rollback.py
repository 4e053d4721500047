"""The kubelet_heartbeat role's rollback: what it restores, and the kubelet's reason it quotes.

The role keeps a backup of every file it changes and, when the restarted kubelet is not healthy,
copies the backups back and removes the files it created (vars/main.yml: _kubelet_heartbeat_rollback, the
failover_rollback_plan filter).
Its failure message quotes the kubelet's own error lines (files/kubelet_errors.sh) without the
configuration dump a refusing kubelet prints after ", path: &".
"""

import os
import subprocess

import yaml
from ansible.template import trust_as_template

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(REPO, "roles", "kubelet_heartbeat")
SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
DROPIN = "/etc/systemd/system/kubelet.service.d/90-nodeguard-failover.conf"


def rollback_plan(render, **registered):
    """The role's _kubelet_heartbeat_rollback (vars/main.yml) for these registered results."""
    with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as handle:
        role_vars = {name: trust_as_template(value) for name, value in yaml.safe_load(handle).items()}
    return render("_kubelet_heartbeat_rollback", **role_vars, _kubelet_heartbeat_service="kubelet", **registered)


def test_nothing_changed_nothing_to_restore(render):
    plan = rollback_plan(render, _kubelet_heartbeat_config_edit={"changed": False, "path": "/var/lib/kubelet/config.yaml"},
                         _kubelet_heartbeat_dropin_edit=SKIPPED, _kubelet_heartbeat_env_edit=SKIPPED,
                         _kubelet_heartbeat_env_removal={"changed": False, "path": DROPIN, "state": "absent"})
    assert plan == {"restore": [], "remove": [], "paths": []}


def test_changed_files_come_back_from_their_backups_and_new_files_are_removed(render):
    plan = rollback_plan(
        render,
        _kubelet_heartbeat_config_edit={"changed": True, "path": "/var/lib/kubelet/config.yaml",
                                        "backup_file": "/var/lib/kubelet/config.yaml.1.2026-11-23@12:00:00~"},
        _kubelet_heartbeat_dropin_edit=SKIPPED, _kubelet_heartbeat_rancher_edit=SKIPPED,
        # copy: a new drop-in has no backup_file, and in check mode its result does not name the file.
        _kubelet_heartbeat_env_edit={"changed": True, "diff": {"after": "[Service]"}, "failed": False})
    assert plan == {
        "restore": [{"path": "/var/lib/kubelet/config.yaml", "backup_file": "/var/lib/kubelet/config.yaml.1.2026-11-23@12:00:00~"}],
        "remove": [DROPIN],
        "paths": ["/var/lib/kubelet/config.yaml", DROPIN],
    }


def test_a_removed_environment_drop_in_comes_back_from_its_saved_copy(render):
    plan = rollback_plan(render, _kubelet_heartbeat_config_edit={"changed": True, "path": "/var/lib/kubelet/config.yaml",
                                                                 "backup_file": "/var/lib/kubelet/config.yaml.b~"},
                         _kubelet_heartbeat_env_edit=SKIPPED,
                         _kubelet_heartbeat_env_removal={"changed": True, "path": DROPIN, "state": "absent"})
    assert {"path": DROPIN, "backup_file": DROPIN + ".nodeguard-removed~"} in plan["restore"]
    assert plan["remove"] == []
    # systemd reads only *.conf in a drop-in directory: the saved copy is not read.
    assert not (DROPIN + ".nodeguard-removed~").endswith(".conf")


REFUSED = ('"command failed" err="failed to validate kubelet configuration, error: invalid configuration: '
           'nodeLeaseDurationSeconds must be greater than 0, path: &KubeletConfiguration{StaticPodURLHeader:'
           'map[Authorization:[Bearer s3cr3t]]}"')
JOURNAL = (
    'I1123 12:01:29.000000    1116 server.go:500] "Kubelet version" kubeletVersion="v1.35.4"\n'
    f"E1123 12:01:30.726757    1116 run.go:72] {REFUSED}\n"
    f"E1123 12:01:33.362614    1117 run.go:72] {REFUSED}\n"
    "Error: unknown flag: --no-such-flag\n"
    "W1123 12:01:34.000000    1118 warnings.go:70] a warning\n"
)


def run_errors_script(tmp_path, journal, lines="3", log_file=""):
    fake = tmp_path / "bin"
    fake.mkdir()
    (tmp_path / "journal").write_text(journal)
    (fake / "journalctl").write_text(f"#!/bin/sh\necho \"$*\" > {tmp_path}/args\ncat {tmp_path}/journal\n")
    (fake / "journalctl").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    result = subprocess.run(["sh", os.path.join(ROLE, "files", "kubelet_errors.sh"), "kubelet", "1795435290", lines, log_file],
                            env=env, capture_output=True, text=True, check=True)
    return result.stdout.splitlines(), (tmp_path / "args").read_text()


def test_the_kubelets_error_lines_once_each_without_its_configuration(tmp_path):
    lines, args = run_errors_script(tmp_path, JOURNAL)
    assert "-u kubelet --since @1795435290" in args
    assert lines == [
        'E1123 12:01:33.362614    1117 run.go:72] "command failed" err="failed to validate kubelet configuration, error: '
        "invalid configuration: nodeLeaseDurationSeconds must be greater than 0, path: (configuration left out)",
        "Error: unknown flag: --no-such-flag",
    ]
    assert not any("s3cr3t" in line for line in lines)


def test_only_the_last_error_lines(tmp_path):
    journal = "".join(f"E1123 12:00:{second:02d}.000000    1 x.go:1] error {second}\n" for second in range(10))
    lines = run_errors_script(tmp_path, journal, lines="2")[0]
    assert [line.split("] ")[1] for line in lines] == ["error 8", "error 9"]


def test_the_distributions_kubelet_log_file_is_read_too(tmp_path):
    log = tmp_path / "kubelet.log"
    log.write_text("E1123 12:02:00.000000    7 run.go:72] refused in the log file\n")
    lines = run_errors_script(tmp_path, "", log_file=str(log))[0]
    assert [line.split("] ")[1] for line in lines] == ["refused in the log file"]


def test_no_error_line_is_said(tmp_path):
    assert run_errors_script(tmp_path, "W1123 12:01:34.000000    1118 warnings.go:70] a warning\n")[0] == [
        "(no error line in its log since the restart)"]


def test_the_restored_kubelet_is_described_by_wiring_only(render):
    """tasks/rollback.yml: which sentence is said is a `when:` on kubelet_heartbeat_wait_for_ready, not a Jinja
    condition; the lab tests grep "the restored kubelet is healthy again"."""
    with open(os.path.join(ROLE, "tasks", "rollback.yml"), encoding="utf-8") as handle:
        block = next(task for task in yaml.safe_load(handle) if "block" in task)["block"]
    notes = {task["when"]: task["ansible.builtin.set_fact"]["_kubelet_heartbeat_after"] for task in block if "ansible.builtin.set_fact" in task}
    assert set(notes) == {"kubelet_heartbeat_wait_for_ready", "not kubelet_heartbeat_wait_for_ready"}
    assert not any(" if " in note for note in notes.values())
    back = render(
        "note",
        note=trust_as_template(notes["kubelet_heartbeat_wait_for_ready"]),
        _kubelet_heartbeat_end={"process": {"main_pid": 4242}},
        _kubelet_heartbeat_lease={"renewed": True, "lease": {"renew_time": "2026-11-26T09:12:31.402117Z"}},
    )
    assert back == "the restored kubelet is healthy again (PID 4242 stable, node Lease renewed at 2026-11-26T09:12:31.402117Z, node Ready)"
