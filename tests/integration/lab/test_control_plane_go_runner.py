"""static_pod_flags and the control_plane_flags role on a kOps-shaped manifest, on the lab's real control plane.

kOps runs each component through go-runner: ``command: [/go-runner]`` and, in ``args``, go-runner's own
flags, then the component's binary and its flags. go-runner starts the component as its child and stays
its parent. New flags must go after the binary (in ``args``): given anywhere else they are go-runner's,
or lose to a later value. The lab's static pod runner runs command + args as the kubelet does; /go-runner
is a stand-in with go-runner's command line (its flags, then the program it runs as a child), as kOps
documents it; the component is the lab's real kube-controller-manager.
"""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
from pathlib import Path

import pytest
import yaml

KCM = "kube-controller-manager"
REPO = Path(__file__).resolve().parents[3]
PLAYBOOK = REPO / "tests" / "integration" / "lab" / "control_plane_flags_go_runner.yml"
WANTED = {"node-monitor-grace-period": "37s", "node-monitor-period": "3s"}
GO_RUNNER_FLAGS = ["--log-file=/var/log/kube-controller-manager.log", "--also-stdout"]

# go-runner's command line: --log-file, --also-stdout, --redirect-stderr, then the command it starts as a
# child; it stays the parent, passes SIGTERM on and exits with the child's status.
GO_RUNNER_STANDIN = """#!/bin/sh
# Lab stand-in for kOps' /go-runner (see tests/integration/lab/test_control_plane_go_runner.py).
log=/dev/null
while [ $# -gt 0 ]; do
  case "$1" in
    --log-file=*) log="${1#--log-file=}"; shift ;;
    --also-stdout|--also-stdout=*|--redirect-stderr|--redirect-stderr=*) shift ;;
    *) break ;;
  esac
done
"$@" >>"$log" 2>&1 &
child=$!
trap 'kill -TERM "$child"' TERM INT
wait "$child"
"""


def kops_manifest(kubeadm_text: str, binary: str) -> str:
    """The lab's kubeadm manifest in kOps' shape: command [/go-runner], args go-runner flags + binary + flags."""
    pod = yaml.safe_load(kubeadm_text)
    container = pod["spec"]["containers"][0]
    flags = [flag for flag in container["command"][1:] if not flag.startswith(("--node-monitor-grace-period", "--node-monitor-period"))]
    container["command"] = ["/go-runner"]
    container["args"] = [*GO_RUNNER_FLAGS, binary, *flags]
    return yaml.safe_dump(pod, sort_keys=False)


def component_processes(lab) -> list[list[str]]:
    """The words of each process `pgrep -a -f kube-controller-manager` lists (as the role reads them)."""
    out = lab.cp_exec("pgrep", "-a", "-f", KCM, check=False).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def the_component(lab) -> list[str]:
    """The kube-controller-manager process itself (go-runner's child): its argv[0] is the binary."""
    return next((words[1:] for words in component_processes(lab) if posixpath.basename(words[1]) == KCM), [])


@pytest.fixture
def kops_controller_manager(lab):
    """ng-cp1's controller-manager runs through go-runner for the test; the kubeadm manifest comes back after."""
    kubeadm_text = lab.read_manifest(KCM)
    binary = lab.cp_exec("sh", "-c", f"command -v {KCM}").stdout.strip()
    subprocess.run(["podman", "exec", "-i", lab.CONTROL_PLANE, "sh", "-c", "cat > /go-runner && chmod 0755 /go-runner"],
                   input=GO_RUNNER_STANDIN, text=True, check=True)
    lab.write_manifest(KCM, kops_manifest(kubeadm_text, binary))
    # Until the static pod runner has replaced it, the kubeadm-started process (argv[0] the bare name) is still the one
    # pgrep finds: wait for go-runner's child, whose argv[0] is the binary's path.
    lab.wait_for(lambda: the_component(lab)[:1] == [binary] and lab.component_healthy(KCM), timeout=90,
                 what=f"{KCM} healthy under go-runner")
    yield binary
    lab.write_manifest(KCM, kubeadm_text)
    lab.wait_for(lambda: lab.component_healthy(KCM) and not lab.cp_exec("pgrep", "-f", "/go-runner", check=False).stdout,
                 timeout=90, what=f"{KCM} healthy again without go-runner")
    lab.cp_exec("rm", "-f", "/go-runner")


@pytest.mark.changes_control_plane
def test_the_role_gives_the_new_flags_to_the_component_not_to_go_runner(lab, kops_controller_manager):
    binary = kops_controller_manager
    before = the_component(lab)
    assert before[0] == binary and not [word for word in before if word.startswith("--node-monitor-grace-period")]

    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), PATH=f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}")
    result = subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", str(lab.STATE / "inventory.yml"), str(PLAYBOOK),
         "-e", json.dumps({"wanted_flags": WANTED})],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output

    container = yaml.safe_load(lab.read_manifest(KCM))["spec"]["containers"][0]
    assert container["command"] == ["/go-runner"]
    args = container["args"]
    assert args[: len(GO_RUNNER_FLAGS) + 1] == [*GO_RUNNER_FLAGS, binary]  # go-runner's part untouched
    assert args[-2:] == ["--node-monitor-grace-period=37s", "--node-monitor-period=3s"]

    # The component itself (go-runner's child, a new process) runs with them, after its binary.
    running = the_component(lab)
    assert running != before
    assert running[0] == binary
    assert "--node-monitor-grace-period=37s" in running and "--node-monitor-period=3s" in running
    assert lab.component_healthy(KCM)
    # go-runner's own command line keeps its flags first and gives the component the new ones.
    go_runner = next(words for words in component_processes(lab) if "/go-runner" in words[1:3])
    assert go_runner[go_runner.index("/go-runner") + 1 :][: len(GO_RUNNER_FLAGS)] == GO_RUNNER_FLAGS
