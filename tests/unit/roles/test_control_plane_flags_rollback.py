"""The control_plane_flags role's rollback: which files it puts back and which components it waits for.

After a failed change the role restores the files this run changed (vars/main.yml:
_control_plane_flags_rollback, the failover_rollback_plan filter) and waits for the components those
files restart (_control_plane_flags_restored, from the endpoints its task file lists). When nothing was
changed there is nothing to restore and nothing to wait for (tasks/restore.yml stops the run at once).
"""

import os

import pytest
import yaml
from ansible.template import trust_as_template

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(REPO, "roles", "control_plane_flags")
SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
MANIFESTS = "/etc/kubernetes/manifests"
APISERVER = f"{MANIFESTS}/kube-apiserver.yaml"
CONTROLLER_MANAGER = f"{MANIFESTS}/kube-controller-manager.yaml"
RKE2_CONFIG = "/etc/rancher/rke2/config.yaml"


def templates(value):
    """Role YAML as Ansible loads it: every string may be a template."""
    if isinstance(value, dict):
        return {key: templates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [templates(item) for item in value]
    return trust_as_template(value) if isinstance(value, str) else value


def role_variables(task_file):
    """vars/main.yml and the variables of the task file's block (the endpoints, their URLs)."""
    with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as handle:
        variables = yaml.safe_load(handle)
    with open(os.path.join(ROLE, "tasks", task_file), encoding="utf-8") as handle:
        variables.update(yaml.safe_load(handle)[0]["vars"])
    return templates(variables)


def rollback(render, task_file, **registered):
    """(_control_plane_flags_rollback, _control_plane_flags_restored) for these registered results."""
    settings = {"control_plane_flags_manifest_dir": MANIFESTS, "control_plane_flags_apiserver_health_host": "",
                "control_plane_flags_apiserver_port": 6443, "control_plane_flags_apiserver_ca_path": "",
                "control_plane_flags_controller_manager_port": 10257, "control_plane_flags_controller_manager_ca_path": "",
                "control_plane_flags_distribution": "rke2", "control_plane_flags_rancher_config_path": ""}
    variables = {**role_variables(task_file), **settings, **registered}
    plan = render("_control_plane_flags_rollback", **variables)
    restored = render("_control_plane_flags_restored", **variables)
    return plan, restored


def components(restored):
    """The components waited for, in order."""
    return [endpoint["component"] for endpoint in restored]


def changed(path):
    return {"changed": True, "path": path, "backup_file": f"/etc/kubernetes/nodeguard-backups/{os.path.basename(path)}.1~",
            "command": ["kube-apiserver", "--advertise-address=10.0.0.5", "--secure-port=6443"],
            "flags": {"advertise-address": "10.0.0.5", "secure-port": "6443"}}


def test_a_failed_controller_manager_gets_its_manifest_back_and_is_waited_for(render):
    plan, restored = rollback(render, "kubeadm.yml", _control_plane_flags_apiserver_edit=SKIPPED,
                              _control_plane_flags_controller_manager_edit=changed(CONTROLLER_MANAGER))
    assert plan == {"restore": [{"path": CONTROLLER_MANAGER,
                                 "backup_file": "/etc/kubernetes/nodeguard-backups/kube-controller-manager.yaml.1~"}],
                    "remove": [], "paths": [CONTROLLER_MANAGER]}
    assert components(restored) == ["kube-controller-manager"]


def test_both_manifests_come_back_and_the_api_server_is_waited_for_first(render):
    plan, restored = rollback(render, "kubeadm.yml", _control_plane_flags_apiserver_edit=changed(APISERVER),
                              _control_plane_flags_controller_manager_edit=changed(CONTROLLER_MANAGER))
    assert plan["paths"] == [APISERVER, CONTROLLER_MANAGER]
    assert components(restored) == ["kube-apiserver", "kube-controller-manager"]
    # The API server is checked where its manifest says it listens, against the cluster CA.
    assert restored[0]["url"] == "https://10.0.0.5:6443/readyz"
    assert restored[0]["ca"] == "/etc/kubernetes/pki/ca.crt"
    assert restored[1]["url"] == "https://127.0.0.1:10257/healthz"


@pytest.mark.parametrize("controller_manager_edit", [
    {"changed": False, "failed": True, "msg": f"{CONTROLLER_MANAGER}: no such file"},  # the edit itself failed
    {"changed": False, "path": CONTROLLER_MANAGER, "changes": []},  # already set; its health check failed
])
def test_nothing_changed_nothing_to_restore_or_wait_for(render, controller_manager_edit):
    plan, restored = rollback(render, "kubeadm.yml", _control_plane_flags_apiserver_edit=SKIPPED,
                              _control_plane_flags_controller_manager_edit=controller_manager_edit)
    assert plan == {"restore": [], "remove": [], "paths": []}
    assert restored == []


def test_an_unchanged_api_server_is_not_waited_for_when_only_the_controller_manager_failed(render):
    restored = rollback(render, "kubeadm.yml",
                        _control_plane_flags_apiserver_edit={"changed": False, "path": APISERVER, "changes": []},
                        _control_plane_flags_controller_manager_edit=changed(CONTROLLER_MANAGER))[1]
    assert components(restored) == ["kube-controller-manager"]


def test_rke2_config_comes_back_and_the_whole_server_is_waited_for(render):
    plan, restored = rollback(render, "rancher.yml", _control_plane_flags_rancher_edit=changed(RKE2_CONFIG))
    assert plan["restore"] == [{"path": RKE2_CONFIG, "backup_file": "/etc/kubernetes/nodeguard-backups/config.yaml.1~"}]
    assert components(restored) == ["kube-apiserver", "kube-controller-manager"]
    assert restored[0]["ca"] == "/var/lib/rancher/rke2/server/tls/server-ca.crt"


def test_rke2_unchanged_config_nothing_to_restore(render):
    plan, restored = rollback(render, "rancher.yml",
                              _control_plane_flags_rancher_edit={"changed": False, "path": RKE2_CONFIG, "changes": []})
    assert plan["paths"] == [] and restored == []


def test_the_failure_message_only_inserts_what_the_modules_returned(render):
    """tasks/recover.yml: the restored components' health and the detection outage come worded from
    component_health_info (check=restored, check=detection); the lab tests grep these words."""
    with open(os.path.join(ROLE, "tasks", "recover.yml"), encoding="utf-8") as handle:
        message = yaml.safe_load(handle)[-1]["ansible.builtin.fail"]["msg"]
    assert "now()" not in message and "regex_replace" not in message and " if " not in message
    rendered = render(
        "message",
        message=trust_as_template(message),
        inventory_hostname="ng-cp1",
        _control_plane_flags_rollback={"paths": [CONTROLLER_MANAGER]},
        ansible_failed_result={"msg": "the kube-controller-manager did not answer ok"},
        _control_plane_flags_changing="kube-controller-manager",
        _control_plane_flags_component_status={"stdout_lines": ["state: exited (exit code 1)", "invalid argument"]},
        _control_plane_flags_recovered={"summary": "kube-controller-manager healthy again"},
        _control_plane_flags_detection={
            "summary": "the controller-manager leader lease was renewed at 2026-11-26T09:12:31Z. "
            "Node-failure detection was down for about 41 s (from the first change until the lease was renewed)"
        },
    )
    assert rendered == (
        f"Control-plane flags on ng-cp1 failed and were rolled back (restored: {CONTROLLER_MANAGER}). No further node was touched. "
        "Cause: the kube-controller-manager did not answer ok. kube-controller-manager said: state: exited (exit code 1) | invalid argument. "
        "After the restore: kube-controller-manager healthy again; the controller-manager leader lease was renewed at 2026-11-26T09:12:31Z. "
        "Node-failure detection was down for about 41 s (from the first change until the lease was renewed)."
    )
