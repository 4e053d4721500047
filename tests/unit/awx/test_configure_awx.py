"""docs/awx/configure-awx.yml and the project layout it points at (docs/awx/project): every job template runs a
playbook the project has, which imports a play the collection ships; the project installs the collection from its
artifact; tune-failover is Check unless asked; the audit is scheduled; incident jobs notify on start, success and
failure; every credential type file is created."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
AWX = REPO / "docs" / "awx"
PROJECT = AWX / "project"


def script():
    spec = importlib.util.spec_from_file_location("controller_rulebooks", REPO / "scripts" / "controller-rulebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tasks(module: str) -> list[dict]:
    """The arguments of every task of configure-awx.yml that calls ``module``."""
    plays = yaml.load((AWX / "configure-awx.yml").read_text(), Loader=script().AnsibleLoader)
    return [task for play in plays for task in play["tasks"] if module in task]


TEMPLATES = {template["name"]: template for template in script().job_templates().values()}
INCIDENT = ("nodeguard node-outage", "nodeguard node-recover")


def test_one_template_per_job() -> None:
    assert set(TEMPLATES) == {*INCIDENT, "nodeguard audit-failover", "nodeguard tune-failover"}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_a_template_runs_a_project_playbook_that_imports_the_collections_play(name: str) -> None:
    template = TEMPLATES[name]
    assert template["project"] == "nodeguard" and template["inventory"] == "nodeguard nodes"
    assert template["execution_environment"] == "nodeguard"
    (play,) = yaml.safe_load((PROJECT / template["playbook"]).read_text())
    fqcn = play["ansible.builtin.import_playbook"]
    namespace, collection, playbook = fqcn.split(".")
    assert (namespace, collection) == ("nodeguard", "failover")
    assert (REPO / "playbooks" / f"{playbook}.yml").exists()  # the collection ships it under that name


def test_the_project_installs_the_collection_from_its_artifact() -> None:
    requirements = yaml.safe_load((PROJECT / "collections" / "requirements.yml").read_text())
    assert requirements["collections"] == [{"name": "collections/nodeguard-failover.tar.gz", "type": "file"}]
    (project,) = [task["awx.awx.project"] for task in tasks("awx.awx.project")]
    assert project["scm_update_on_launch"] is False  # an incident job never waits for a git fetch
    (source,) = [task["awx.awx.inventory_source"] for task in tasks("awx.awx.inventory_source")]
    assert (source["source"], source["source_project"]) == ("scm", "nodeguard")
    assert (PROJECT / source["source_path"]).exists()


def test_tune_is_check_unless_asked_and_the_audit_is_scheduled() -> None:
    tune = TEMPLATES["nodeguard tune-failover"]
    assert tune["job_type"] == "check" and tune["ask_job_type_on_launch"] is True
    (schedule,) = [task["awx.awx.schedule"] for task in tasks("awx.awx.schedule")]
    assert schedule["unified_job_template"] == "nodeguard audit-failover"
    assert "RRULE:FREQ=" in schedule["rrule"]


@pytest.mark.parametrize("name", INCIDENT)
def test_incident_jobs_notify_on_start_success_and_failure(name: str) -> None:
    template = TEMPLATES[name]
    for event in ("started", "success", "error"):
        assert template[f"notification_templates_{event}"] == "{{ nodeguard_notifications }}"
    (webhook,) = list(tasks("awx.awx.notification_template"))
    assert webhook["awx.awx.notification_template"]["name"] == "nodeguard incidents"
    assert webhook["no_log"] is True  # the webhook's bearer token


def test_every_controller_credential_type_file_is_created() -> None:
    (task,) = tasks("awx.awx.credential_type")
    assert sorted(task["loop"]) == sorted(p.name for p in (AWX / "credential-types").glob("controller-*.yml"))
