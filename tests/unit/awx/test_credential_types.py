"""The credential types of docs/awx/credential-types/: well formed for the controller that takes them, and together
they supply everything the job templates and the controller rulebooks read from outside, so that a job or a rulebook
activation needs nothing written by hand inside the execution or decision environment."""

from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

import jinja2
import pytest
import yaml
from jinja2 import meta

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "integration" / "awx"))
from controller_credentials import TYPES, credential_type, inject  # noqa: E402

RULEBOOKS = REPO / "extensions" / "eda" / "rulebooks"
EDA_VARS = REPO / "extensions" / "eda" / "vars"
INVENTORY = REPO / "docs" / "awx" / "project" / "inventory" / "nodes.yml"
CONTROLLER = sorted(p.name for p in TYPES.glob("controller-*.yml"))
EDA = sorted(p.name for p in TYPES.glob("eda-*.yml"))
NAMESPACE = {**dict.fromkeys(CONTROLLER, "tower"), **dict.fromkeys(EDA, "eda")}
ENV_LOOKUP = re.compile(r"lookup\('ansible\.builtin\.env', '(?P<name>[A-Z0-9_]+)'\)")
# rulebook variables that name a file: a credential must write that file, nobody inside the decision environment
FILE_VARIABLES = ("nodeguard_eda_tls_cert", "nodeguard_eda_tls_key", "nodeguard_node_watch_kubeconfig")


def filled(definition: dict) -> dict:
    return {spec["id"]: False if spec.get("type") == "boolean" else f"value-of-{spec['id']}" for spec in definition["inputs"]["fields"]}


def injected(names: list[str], kind: str) -> dict[str, str]:
    """variable -> the credential type file that injects it as ``kind`` (env or extra_vars)."""
    return {variable: name for name in names for variable in credential_type(name)["injectors"].get(kind, {})}


def source_variables(rulebook: dict) -> set[str]:
    """The variables the rulebook's sources (and their filters) template."""
    environment = jinja2.Environment()
    text = yaml.safe_dump(rulebook["sources"])
    return {name for found in re.findall(r"\{\{.*?\}\}", text) for name in meta.find_undeclared_variables(environment.parse(found))}


def filter_env_names(rulebook: dict) -> set[str]:
    """The environment variables the sources' filters read (their *_env arguments)."""
    names = set()
    for source in rulebook["sources"]:
        for one in source.get("filters", []):
            for args in one.values():
                names |= {value for key, value in (args or {}).items() if key.endswith("_env")}
    return names


@pytest.mark.parametrize("name", CONTROLLER + EDA)
def test_a_definition_is_well_formed_for_its_controller(name: str) -> None:
    definition = credential_type(name)
    ids = [spec["id"] for spec in definition["inputs"]["fields"]]
    assert definition["name"].startswith("nodeguard ") and definition["description"]
    assert set(definition["inputs"].get("required", [])) <= set(ids)
    assert ("kind" in definition) is (name in CONTROLLER)  # the EDA controller's credential types have no kind
    files = {label.split(".", 1)[1] for label in definition["injectors"].get("file", {})}
    environment = jinja2.Environment()
    for kind, templates in definition["injectors"].items():
        assert kind in ("env", "extra_vars", "file")
        for template in templates.values():
            used = meta.find_undeclared_variables(environment.parse(template))
            assert used <= set(ids) | {NAMESPACE[name]}, f"{name}: {template!r} uses what no field gives"
            for label in re.findall(rf"{NAMESPACE[name]}\.filename\.(\w+)", template):
                assert label in files, f"{name}: no file injector template.{label}"
    for spec in definition["inputs"]["fields"]:
        if any(word in spec["id"] for word in ("password", "token", "key", "api_key")):
            assert spec.get("secret") is True, f"{name}: {spec['id']} is not secret"


@pytest.mark.parametrize("name", CONTROLLER + EDA)
def test_injection_renders_every_value_and_writes_owner_only_files(name: str, tmp_path: Path) -> None:
    definition = credential_type(name)
    result = inject(definition, filled(definition), tmp_path, NAMESPACE[name])
    for value in (*result.env.values(), *result.extra_vars.values()):
        assert "{{" not in value and "{%" not in value
    for path in result.files.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.parent == tmp_path / "env"
        assert path.read_text().strip()


def test_the_job_inventory_reads_only_what_the_bmc_credential_injects(tmp_path: Path) -> None:
    read = set(ENV_LOOKUP.findall(INVENTORY.read_text()))
    assert read and read <= set(injected(CONTROLLER, "env"))
    # an empty CA field: the variable is empty (the trust store decides), not the path of an empty file
    result = inject(credential_type("controller-bmc.yml"), {"username": "u", "password": "p"}, tmp_path)
    assert result.env["NODEGUARD_BMC_CA_CERT"] == ""
    result = inject(credential_type("controller-bmc.yml"), {"username": "u", "password": "p", "ca_cert": "PEM"}, tmp_path)
    assert Path(result.env["NODEGUARD_BMC_CA_CERT"]).read_text() == "PEM"


def test_the_cluster_credentials_give_a_verified_token_connection(tmp_path: Path) -> None:
    job = inject(credential_type("controller-kubernetes.yml"), {"host": "https://api:6443", "ca_cert": "PEM", "api_key": "t0k"}, tmp_path)
    assert job.env["K8S_AUTH_VERIFY_SSL"] == "true" and Path(job.env["K8S_AUTH_SSL_CA_CERT"]).read_text() == "PEM"
    watch = inject(credential_type("eda-cluster-watch.yml"), {"host": "https://api:6443", "ca_data": "UEVN", "token": "t0k"}, tmp_path, "eda")
    kubeconfig = yaml.safe_load(Path(watch.extra_vars["nodeguard_node_watch_kubeconfig"]).read_text())
    assert kubeconfig["current-context"] == watch.extra_vars["nodeguard_node_watch_context"]
    assert kubeconfig["clusters"][0]["cluster"] == {"server": "https://api:6443", "certificate-authority-data": "UEVN"}
    assert kubeconfig["users"][0]["user"] == {"token": "t0k"}


@pytest.mark.parametrize("rulebook", sorted(p.name for p in RULEBOOKS.glob("*-controller.yml")))
def test_an_activation_gets_from_credentials_what_its_vars_file_does_not_hold(rulebook: str) -> None:
    (ruleset,) = yaml.safe_load((RULEBOOKS / rulebook).read_text())
    base = rulebook.removesuffix("-controller.yml")
    vars_file = set(yaml.safe_load((EDA_VARS / f"{base}.yml").read_text()))
    extra_vars = injected(EDA, "extra_vars")
    missing = sorted(name for name in source_variables(ruleset) - vars_file if name not in extra_vars)
    assert not missing, f"{rulebook}: nothing supplies {missing}"
    for name in FILE_VARIABLES:
        if name in source_variables(ruleset):
            assert name in extra_vars, f"{rulebook}: the file {name} would have to be written by hand"


@pytest.mark.parametrize("rulebook", sorted(p.name for p in RULEBOOKS.glob("*-controller.yml")))
def test_the_environment_the_filters_read_is_injected(rulebook: str) -> None:
    (ruleset,) = yaml.safe_load((RULEBOOKS / rulebook).read_text())
    needed = filter_env_names(ruleset)
    assert needed <= set(injected(EDA, "env")), f"{rulebook}: nothing injects {sorted(needed - set(injected(EDA, 'env')))}"


def test_the_bmc_event_key_has_one_name_for_the_subscription_job_and_the_activation() -> None:
    assert injected(CONTROLLER, "env")["NODEGUARD_BMC_TOKEN_KEY"] == "controller-bmc-event-key.yml"
    assert injected(EDA, "env")["NODEGUARD_BMC_TOKEN_KEY"] == "eda-power-events.yml"
