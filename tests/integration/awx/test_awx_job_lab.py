"""node-outage and node-recover run as the automation controller runs the job templates of docs/awx/configure-awx.yml
when the EDA controller launches them from node-failover-controller.yml: through ansible-runner, from the project
layout docs/awx/project, with the credentials injected as their credential types say, and the extra vars the
controller rulebook sends, after AWX's survey check.

- Project sync, as the controller does it: the project is copied, the collection artifact (ansible-galaxy collection
  build) is put where its collections/requirements.yml names it, and that file is installed from the project's root
  into the job's collections path. The job then runs playbooks/node_outage.yml, which imports the installed
  collection's play by its FQCN: nothing comes from this checkout at run time.
- Credentials: the lab's BMC credentials and CA, and a token of the deploy/rbac ServiceAccount, are the inputs of a
  "nodeguard BMC" and a "nodeguard Kubernetes remediator" credential; controller_credentials.py renders their
  injectors (environment variables and files in the private data directory). The job's inventory is the lab's, with
  each `bmc` reading its secrets from those variables as docs/awx/project/inventory/nodes.yml does, and without the
  lab's admin kubeconfig: the cluster token is the only cluster identity the job has.
- Extra vars: the rulebook's run_job_template extra vars, rendered by ansible-rulebook for the node's alert, pass the
  job template's survey (awx_survey.py), and go to the job over the template's own extra vars (the lab's short waits),
  in AWX's order of precedence.
One worker that runs a db pod is powered off through its BMC; once it is NotReady with a stale Lease (when the alert
would fire), node-outage proves it off and taints it; the worker is powered on and node-recover removes the taint.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_rulebook.util import substitute_variables

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent / "incident"))
sys.path.insert(0, str(REPO / "tests" / "unit" / "eda"))
from awx_survey import launch_errors  # noqa: E402  AWX's survey rules, as the unit tests check them
from controller_credentials import credential_type, inject  # noqa: E402
from test_incident_lab import FAST, NAMESPACE, OOS, node_proven_dead  # noqa: E402  the incident lab tests' waits, workloads

BIN = REPO / ".venv" / "bin"
PROJECT = REPO / "docs" / "awx" / "project"
RULEBOOK = REPO / "extensions" / "eda" / "rulebooks" / "node-failover-controller.yml"
VARS = REPO / "extensions" / "eda" / "vars" / "node-failover.yml"
INVENTORY = REPO / "lab" / ".state" / "inventory.yml"
# what the BMC credential injects, read by the job inventory's bmc host variables (docs/awx/project/inventory)
BMC_FROM_ENV = {
    "username": "{{ lookup('ansible.builtin.env', 'NODEGUARD_BMC_USERNAME') }}",
    "password": "{{ lookup('ansible.builtin.env', 'NODEGUARD_BMC_PASSWORD') }}",
    "ca_cert": "{{ lookup('ansible.builtin.env', 'NODEGUARD_BMC_CA_CERT') }}",
}


def job_templates() -> dict[str, dict]:
    spec = importlib.util.spec_from_file_location("controller_rulebooks", REPO / "scripts" / "controller-rulebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {template["name"]: template for template in module.job_templates().values()}


def synced_project(root: Path) -> tuple[Path, Path]:
    """The project and its installed collections, as a project sync leaves them."""
    project = root / "project"
    shutil.copytree(PROJECT, project)
    subprocess.run(
        [str(BIN / "ansible-galaxy"), "collection", "build", str(REPO), "--output-path", str(root / "build")], check=True, capture_output=True, text=True
    )
    (artifact,) = (root / "build").glob("nodeguard-failover-*.tar.gz")
    shutil.copy(artifact, project / "collections" / "nodeguard-failover.tar.gz")
    collections = root / "requirements_collections"
    # As the controller's project sync runs it: its own configuration, not this checkout's ansible.cfg (make exports
    # ANSIBLE_CONFIG, whose collections path already holds nodeguard.failover, and the install would find it there
    # and do nothing). --no-deps: the dependencies come from the ansible package, as in the execution environment.
    (root / "empty.cfg").write_text("")
    sync_env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_COLLECTIONS_PATH")}
    subprocess.run(
        [str(BIN / "ansible-galaxy"), "collection", "install", "-r", "collections/requirements.yml", "-p", str(collections), "--no-deps"],
        cwd=project,
        env=dict(sync_env, ANSIBLE_CONFIG=str(root / "empty.cfg")),
        check=True,
        capture_output=True,
        text=True,
    )
    assert (collections / "ansible_collections" / "nodeguard" / "failover" / "MANIFEST.json").exists()
    return project, collections


def lab_bmc_secrets() -> tuple[str, str, str]:
    """The lab BMCs' username, password and CA file (one set for every node, as one credential holds)."""
    inventory = yaml.safe_load(INVENTORY.read_text())
    hosts = [host for group in inventory["all"]["children"].values() for host in (group.get("hosts") or {}).values()]
    (secrets,) = {(h["bmc"]["username"], h["bmc"]["password"], h["bmc"]["ca_cert"]) for h in hosts if h and "bmc" in h}
    return secrets


def job_inventory(directory: Path) -> None:
    """The lab's inventory, each bmc reading its secrets from the BMC credential's variables, no admin kubeconfig."""
    inventory = yaml.safe_load(INVENTORY.read_text())
    inventory["all"]["vars"].pop("k8s_kubeconfig", None)
    for group in inventory["all"]["children"].values():
        for host in (group.get("hosts") or {}).values():
            if host and "bmc" in host:
                host["bmc"].update(BMC_FROM_ENV)
    (directory / "inventory").mkdir(parents=True)
    (directory / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))


def launch_extra_vars(rule_name: str, node: str, template: dict) -> dict:
    """The extra vars the rule's run_job_template sends for ``node``'s alert, checked against the survey."""
    (rulebook,) = yaml.safe_load(RULEBOOK.read_text())
    (rule,) = [rule for rule in rulebook["rules"] if rule["name"] == rule_name]
    launch = rule["action"]["run_job_template"]
    assert launch["name"] == template["name"]
    event = {"alertname": "NodeguardNodeDown", "node": node, "starts_at": "2026-11-29T04:00:00Z"}
    variables = {**yaml.safe_load(VARS.read_text()), "awx_organization": "Default", "event": event}
    extra_vars = substitute_variables(copy.deepcopy(launch["job_args"]["extra_vars"]), variables)
    assert launch_errors(template, extra_vars) == [], f"AWX would refuse the launch of {template['name']}"
    return extra_vars


def run_job(root: Path, template: dict, extra_vars: dict, cluster: dict, collections: Path) -> tuple[str, str]:
    """ansible-runner run, as the controller runs the job template; returns (status, stdout)."""
    directory = root / template["name"].replace(" ", "-")
    shutil.copytree(root / "project", directory / "project")
    job_inventory(directory)
    username, password, ca_path = lab_bmc_secrets()
    bmc = {"username": username, "password": password, "ca_cert": Path(ca_path).read_text()}
    env = {"ANSIBLE_COLLECTIONS_PATH": str(collections)}
    for name, inputs in (("controller-kubernetes.yml", cluster), ("controller-bmc.yml", bmc)):
        env.update(inject(credential_type(name), inputs, directory).env)
    (directory / "env" / "envvars").write_text(json.dumps(env))
    # the template's own extra vars (the lab's short waits), then the launch's: AWX's order of precedence
    (directory / "env" / "extravars").write_text(json.dumps({**FAST, **extra_vars}))
    for name in ("envvars", "extravars"):
        (directory / "env" / name).chmod(0o600)
    # the job's environment is the runner's and the credentials', nothing of this test process
    clean = {name: os.environ[name] for name in ("HOME", "LANG", "TMPDIR") if name in os.environ}
    clean["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"  # ansible-playbook of the venv
    subprocess.run(
        [str(BIN / "ansible-runner"), "run", str(directory), "--playbook", template["playbook"], "--ident", "job"],
        env=clean,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    artifacts = directory / "artifacts" / "job"
    status = (artifacts / "status").read_text().strip() if (artifacts / "status").exists() else "no status"
    stdout = (artifacts / "stdout").read_text(errors="replace") if (artifacts / "stdout").exists() else ""
    return status, stdout


def taints(lab, node: str) -> list[str]:
    return [t.key for t in (lab.core().read_node(node).spec.taints or [])]


@pytest.fixture(scope="module")
def db_worker(lab):
    lab.reset_lab()
    pods = lab.core().list_namespaced_pod(NAMESPACE, label_selector="app=db").items
    candidates = sorted({p.spec.node_name for p in pods if p.spec.node_name in lab.worker_names()})
    assert candidates, "no worker runs a db pod; is the lab's StatefulSet up?"
    yield candidates[0]
    lab.reset_lab()


def test_node_outage_and_recover_run_as_the_controller_runs_them(lab, remediator, db_worker, tmp_path):
    node = db_worker
    templates = job_templates()
    collections = synced_project(tmp_path)[1]
    cluster = {"host": remediator["failover_host"], "api_key": remediator["failover_api_key"], "ca_cert": Path(remediator["failover_ca_cert"]).read_text()}

    outage = templates["nodeguard node-outage"]
    extra_vars = launch_extra_vars("Node down - run node-outage", node, outage)
    assert extra_vars["outage_nodes"] == node and extra_vars["node_outage_fence"] == "false"
    lab.power_off(node)
    # as the alert fires (for: 60s): once the node has been NotReady a while and its Lease is stale
    lab.wait_for(lambda: node_proven_dead(lab, node), timeout=150, interval=2, what=f"{node} NotReady with a stale Lease")
    status, stdout = run_job(tmp_path, outage, extra_vars, cluster, collections)
    assert status == "successful", f"node-outage job: {status}\n{stdout[-4000:]}"
    assert "outage complete" in stdout, stdout[-4000:]
    assert OOS in taints(lab, node)
    for secret in (cluster["api_key"], lab_bmc_secrets()[1]):
        assert secret not in stdout, "a secret reached the job's output"

    recover = templates["nodeguard node-recover"]
    lab.power_on(node)
    status, stdout = run_job(tmp_path, recover, launch_extra_vars("Node back - run node-recover", node, recover), cluster, collections)
    assert status == "successful", f"node-recover job: {status}\n{stdout[-4000:]}"
    assert OOS not in taints(lab, node), stdout[-4000:]
