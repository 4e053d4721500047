"""control_plane_flags does not take a crash-looping component for a started one (issue 12, "Rollback you can trust").

The lab's real kube-controller-manager is given a signing certificate path that does not exist. The binary accepts
the flag, serves /healthz and answers "ok" while it waits for its leader lease; once it holds the lease it starts
its controllers, the CSR signer cannot read the file, and the process exits. The static-pod runner starts it again
(as the kubelet would), and the cycle repeats: a process that answers its health endpoint with the new flags for
about 15 s of every 20 s. The test first watches that cycle with the role out of the way, so it is known to answer
"ok" with the new flags before it exits (else the role's refusal would prove nothing about the stability check).
Then the role must refuse it as not stable, roll the manifest back byte for byte, and return only once the old
controller-manager is healthy and holds its lease again.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

KCM = "kube-controller-manager"
REPO = Path(__file__).resolve().parents[3]
PLAYBOOK = REPO / "tests" / "integration" / "lab" / "control_plane_flags_crashloop.yml"
MISSING = "/etc/kubernetes/pki/nodeguard-test-missing-signer.crt"
FLAG = f"--cluster-signing-cert-file={MISSING}"


def crash_cycle(lab, seconds: float) -> dict:
    """Watch the component for a while: each PID seen, whether it answered ok with FLAG, and whether it went away."""
    seen: dict[int, dict] = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pid = lab.component_pid(KCM)
        if pid:
            entry = seen.setdefault(pid, {"healthy_with_flag": False, "gone": False})
            if FLAG in lab.component_flags(KCM) and lab.component_healthy(KCM) and lab.component_pid(KCM) == pid:
                entry["healthy_with_flag"] = True
        for other, entry in seen.items():
            if other != pid:
                entry["gone"] = True
        time.sleep(0.5)
    return seen


@pytest.mark.changes_control_plane
def test_a_crash_looping_controller_manager_is_not_taken_as_started(lab):
    before = lab.read_manifest(KCM)
    flags_before = lab.component_flags(KCM)
    assert MISSING not in lab.cp_exec("ls", "/etc/kubernetes/pki").stdout

    # 1. Without the role: the flag crash-loops after answering ok (the old process gives the lease up only by
    #    expiring, so the first new process waits up to 15 s for it, then exits when it starts its controllers).
    lab.write_manifest(KCM, before.replace("--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt", FLAG))
    try:
        cycle = crash_cycle(lab, 60)
    finally:
        lab.write_manifest(KCM, before)
    lab.wait_for(lambda: lab.component_healthy(KCM) and FLAG not in lab.component_flags(KCM), timeout=120,
                 what="the controller-manager back on its own manifest")
    lab.wait_for(lambda: lab.lease_holder(KCM), timeout=120, what="the controller-manager's lease held again")
    crashed_after_ok = [pid for pid, entry in cycle.items() if entry["healthy_with_flag"] and entry["gone"]]
    assert crashed_after_ok, f"the flag did not crash-loop after answering ok as expected: {cycle}"

    # 2. Through the role, with its default stable time.
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    result = subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(lab.STATE / "inventory.yml"), str(PLAYBOOK),
         "-e", f"missing_signing_cert={MISSING}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)

    output = result.stdout + result.stderr
    assert result.returncode != 0, "the role took a crash-looping controller-manager for a started one:\n" + output
    assert "failed and were rolled back" in output, output
    assert "kube-controller-manager is not a stable process" in output, output
    assert "after the leader lease was renewed" in output, output
    # The component's own words: the file it could not read.
    assert "nodeguard-test-missing-signer.crt" in output and "no such file or directory" in output, output
    assert "kube-controller-manager healthy again" in output, output
    assert "leader lease was renewed at" in output, output
    assert lab.read_manifest(KCM) == before
    assert lab.component_healthy(KCM)
    assert lab.lease_holder(KCM)
    assert lab.component_flags(KCM) == flags_before
