"""Every play of the shipped playbooks that runs a role reading the cluster sets the connection once, as module_defaults
of group/nodeguard.failover.k8s, the same mapping as node_outage.yml's; and no role task passes a connection option
itself (issue 24, item 1). A task's own option, even one that templates to omit, shadows the play's module_defaults,
so a role that passed <role>_kubeconfig would ignore the play's connection.
"""

import glob
import os
import subprocess

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GROUP = "group/nodeguard.failover.k8s"
OPTIONS = {"kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key"}


def load(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def group_members():
    """The modules the group sets the connection of: the collection's own members and kubernetes.core's modules."""
    members = load("meta/runtime.yml")["action_groups"]["k8s"]
    own = {f"nodeguard.failover.{name}" for name in members if isinstance(name, str) and "." not in name}
    return own | {name for name in members if isinstance(name, str) and "." in name}


def tasks_of(node):
    """Every task mapping under node (blocks, rescue and always included)."""
    if isinstance(node, list):
        for item in node:
            yield from tasks_of(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always"):
            if key in node:
                yield from tasks_of(node[key])


def cluster_module(task, members):
    for key in task:
        if key in members or key.startswith("kubernetes.core."):
            return key
    return None


def roles_reading_the_cluster():
    members = group_members()
    roles = set()
    for path in glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml")):
        role = path.split(os.sep)[-3]
        for task in tasks_of(load(path) or []):
            if cluster_module(task, members):
                roles.add(role)
    return roles


def test_the_role_tasks_pass_no_connection_option():
    members = group_members()
    found = []
    for path in sorted(glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml"))):
        for task in tasks_of(load(path) or []):
            module = cluster_module(task, members)
            if module and isinstance(task[module], dict) and set(task[module]) & OPTIONS:
                found.append(f"{os.path.relpath(path, REPO)}: {task.get('name')}: {sorted(set(task[module]) & OPTIONS)}")
    assert not found, found


def test_the_tuning_and_audit_roles_read_the_cluster():
    """The test below checks their plays; it must not pass because it found no role to check."""
    assert set(ROLES_READING) <= roles_reading_the_cluster()


def roles_of_play(play):
    names = [entry["role"] if isinstance(entry, dict) else entry for entry in play.get("roles", [])]
    for task in tasks_of(play.get("tasks", [])):
        for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
            if key in task:
                names.append(task[key]["name"])
    return {name.removeprefix("nodeguard.failover.") for name in names}


PLAYBOOKS = sorted(os.path.relpath(path, REPO) for path in glob.glob(os.path.join(REPO, "playbooks", "*.yml")))


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_each_play_with_a_role_reading_the_cluster_sets_the_connection_as_node_outage_does(playbook):
    wanted = load("playbooks/node_outage.yml")[0]["module_defaults"][GROUP]
    assert set(wanted) == OPTIONS
    reading = roles_reading_the_cluster()
    for play in load(playbook):
        if "import_playbook" in play or "ansible.builtin.import_playbook" in play:
            continue
        if roles_of_play(play) & reading:
            assert play.get("module_defaults", {}).get(GROUP) == wanted, f"{playbook}: {play['name']}"


ROLES_READING = ["failover_profile", "control_plane_flags", "kubelet_heartbeat", "kubeadm_persist", "failover_audit"]
# kubelet_heartbeat_settings is the one required option among them
PROBE_VARS = {"kubelet_heartbeat_settings": {"nodeStatusUpdateFrequency": "10s"}}


@pytest.mark.parametrize("role", ROLES_READING)
def test_a_kubeconfig_role_variable_of_earlier_releases_is_refused_before_anything_runs(role, tmp_path):
    """Ignored, it would send the role's reads and writes to the default kubeconfig's cluster; refused, nothing runs."""
    playbook = tmp_path / "probe.yml"
    play = {"name": "Probe", "hosts": "localhost", "gather_facts": False, "roles": [{"role": f"nodeguard.failover.{role}", "vars": PROBE_VARS}]}
    playbook.write_text(yaml.safe_dump([play]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_NOCOLOR="1")
    python = os.path.join(REPO, ".venv", "bin", "python")
    old = f"{role}_kubeconfig=/other/cluster.kubeconfig"
    command = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "--check", "-e", f"ansible_python_interpreter={python}", "-e", old, str(playbook)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode != 0
    assert f"{role}_kubeconfig is no longer read" in done.stdout + done.stderr, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Check that the cluster connection is not given as a role variable" in done.stdout
    # the refusal is the first task after the argument check: nothing else ran
    assert done.stdout.count("TASK [") == 2, done.stdout[-3000:]
