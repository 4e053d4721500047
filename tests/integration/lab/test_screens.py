"""What a user reads, with a stock Ansible configuration (issue 34 items 4 and 5).

The repository's ansible.cfg sets callback_result_format = yaml, which hides a string full of newlines: with the
default callback such a string prints as one JSON string with escaped ``\\n``. Here each documented command runs
with an empty ansible.cfg (the default stdout callback, JSON results) from a directory outside the checkout, the
collection found through ANSIBLE_COLLECTIONS_PATH, as a user who installed it runs them:

    ansible-playbook -i inventory.yml playbooks/tune_failover.yml -e failover_preset=fast --check --diff
    ansible-playbook -i inventory.yml playbooks/audit_failover.yml
    ansible-playbook -i inventory.yml playbooks/node_outage.yml -e outage_nodes=<a Ready worker> --check

Every screen must read as lines: no escaped newline in what is shown, and a failure explained by printed lines,
not by a one-line JSON dump of a whole result. Nothing here changes the lab (check mode; the audit only reads).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
# A failed task's line (fatal: [host]: FAILED! => {...}) that explains in a short message; the old refusal was 3 KB.
SHORT_FAILURE = 1500


def stock_playbook(lab, tmp_path: Path, playbook: str, *args: str) -> subprocess.CompletedProcess:
    """ansible-playbook with an empty configuration (no ANSIBLE_* from this environment), outside the checkout."""
    empty = tmp_path / "ansible.cfg"
    empty.write_text("")
    env = {name: value for name, value in os.environ.items() if not name.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(empty), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"),
               PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    argv = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(lab.STATE / "inventory.yml"),
            str(REPO / "playbooks" / playbook), *args]
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200, check=False)


def escaped_newlines(result: subprocess.CompletedProcess, in_diffs: bool) -> list[str]:
    """The lines that show an escaped newline, in --diff output (a line of a diff hunk: + or - first) or elsewhere."""
    shown = (result.stdout + result.stderr).splitlines()
    return [line for line in shown if "\\n" in line and line.startswith(("+", "-")) == in_diffs]


def assert_reads_as_text(result: subprocess.CompletedProcess) -> None:
    escaped = escaped_newlines(result, in_diffs=False)
    assert not escaped, f"an escaped newline is shown: {escaped[:3]}"
    dumps = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("fatal:") and len(line) > SHORT_FAILURE]
    assert not dumps, f"a failure explained by a long one-line dump: {dumps[0][:400]}..."


def task_lines(stdout: str, task: str) -> list[str]:
    """The list a debug task printed (default callback, JSON results): the first `=> {...}` after the task's banner."""
    at = stdout.index(task)
    start = stdout.index("=> {", at) + len("=> ")
    msg = json.JSONDecoder().raw_decode(stdout[start:])[0]["msg"]
    assert isinstance(msg, list), msg
    return msg


def test_the_tune_plan_and_its_timeline_read_as_lines(lab, tmp_path):
    result = stock_playbook(lab, tmp_path, "tune_failover.yml", "-e", "failover_preset=fast", "--check", "--diff")
    assert result.returncode == 0, lab.playbook_failure(result.stdout + result.stderr)
    assert_reads_as_text(result)
    timeline = task_lines(result.stdout, "Show the predicted timeline, before and after]")
    assert timeline[0].startswith("seconds after power-off") and "after: fast" in timeline[0], timeline
    assert any(line.startswith("node NotReady") for line in timeline), timeline


# Left of issue 34 item 4: kubernetes.core.k8s gives its --diff as the ConfigMap before and after as dicts, which
# Ansible prints as JSON, so a ConfigMap key holding a file (kubeadm's ClusterConfiguration, the kubelet
# configuration) shows as one string full of escaped newlines. The fix (a write that gives a text diff of the key)
# is not made yet; strict: this test fails as soon as the diff reads as text, and the mark must go.
@pytest.mark.xfail(strict=True, reason="kubernetes.core.k8s prints a ConfigMap's text keys as JSON strings in --diff")
def test_the_tune_diff_reads_as_text(lab, tmp_path):
    result = stock_playbook(lab, tmp_path, "tune_failover.yml", "-e", "failover_preset=fast", "--check", "--diff")
    assert result.returncode == 0, lab.playbook_failure(result.stdout + result.stderr)
    escaped = escaped_newlines(result, in_diffs=True)
    assert not escaped, f"an escaped newline is shown in a diff: {[line[:200] for line in escaped[:3]]}"


def test_the_audit_reads_as_lines(lab, tmp_path):
    result = stock_playbook(lab, tmp_path, "audit_failover.yml", "-e", f"audit_report_path={tmp_path / 'audit.json'}")
    assert result.returncode == 0, lab.playbook_failure(result.stdout + result.stderr)
    assert_reads_as_text(result)
    assert task_lines(result.stdout, "failover_audit : Report]")[0].startswith("failover audit of kubeadm ")


def test_a_node_outage_dry_run_on_a_ready_node_shows_its_plan_then_refuses_honestly(lab, tmp_path):
    worker = lab.worker_names()[0]
    assert lab.node_ready(worker)
    result = stock_playbook(lab, tmp_path, "node_outage.yml", "-e", f"outage_nodes={worker}", "--check")
    assert result.returncode != 0, result.stdout
    assert_reads_as_text(result)
    plan = task_lines(result.stdout, f"Show the plan and the proofs | {worker}]")
    assert "    not-ready: MISSING (node is Ready in the API)" in plan, plan
    assert any(line.startswith("    power-off: MISSING (") for line in plan), plan
    assert any(line.startswith("taint | pending | ") for line in plan), plan
    refusal = next(line for line in result.stdout.splitlines() if line.startswith("fatal:"))
    assert f'"msg": "{worker} is Ready (this run never saw it NotReady): not waiting for it to go down: power-off not proven' in refusal
    assert "became Ready" not in result.stdout and "lock_holder" not in result.stdout
