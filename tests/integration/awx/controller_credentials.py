"""Credentials injected into a job or an activation the way the automation controller (AWX/AAP) and the EDA
controller inject them, from the credential type definitions in docs/awx/credential-types/: for the lab test that
runs a job as the controller would (test_awx_job_lab.py) and the unit tests of the definitions.

How the controllers render a custom credential type's injectors (the automation controller's "Custom Credential
Types" documentation, and AWX's behaviour, read for behaviour only; the EDA controller's "Credential types" chapter
says the same with the namespace ``eda`` instead of ``tower``):
- the template namespace holds each input field that has a non-empty value (an empty or absent field is undefined,
  which renders as ""), boolean fields default to false, and the namespace ``tower`` (EDA: ``eda``);
- ``file`` injectors are rendered first, each into a new file of the job's private data directory (under env/),
  readable by the owner only; the path of ``template.<name>`` is ``tower.filename.<name>`` for the other
  injectors (a single ``template`` is ``tower.filename`` itself);
- then every ``env`` injector becomes an environment variable of the job, and every ``extra_vars`` injector an
  extra variable; templates are rendered in Jinja's immutable sandbox, never by Ansible.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

REPO = Path(__file__).resolve().parents[3]
TYPES = REPO / "docs" / "awx" / "credential-types"


def credential_type(name: str) -> dict:
    """A definition of docs/awx/credential-types/ by its file name (controller-bmc.yml, eda-tls-listener.yml)."""
    return yaml.safe_load((TYPES / name).read_text())


@dataclass
class Injected:
    env: dict[str, str] = field(default_factory=dict)
    extra_vars: dict[str, str] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)


def _namespace(definition: dict, inputs: dict) -> dict:
    namespace = {name: value for name, value in inputs.items() if isinstance(value, bool) or len(value)}
    for spec in definition["inputs"].get("fields", []):
        if spec.get("type") == "boolean":
            namespace.setdefault(spec["id"], False)
    return namespace


def inject(definition: dict, inputs: dict, private_data_dir: Path, controller: str = "tower") -> Injected:
    """What one credential of this type with these inputs adds to a job (controller "tower") or an activation
    (controller "eda"): its environment variables, extra variables and files."""
    sandbox = ImmutableSandboxedEnvironment()
    namespace = _namespace(definition, inputs)
    injectors = definition.get("injectors", {})
    injected = Injected()
    filenames = SimpleNamespace()
    (private_data_dir / "env").mkdir(parents=True, exist_ok=True)
    for label, template in injectors.get("file", {}).items():
        handle, name = tempfile.mkstemp(dir=private_data_dir / "env")
        with os.fdopen(handle, "w") as stream:
            stream.write(sandbox.from_string(template).render(**namespace))
        os.chmod(name, 0o600)
        if "." in label:
            setattr(filenames, label.split(".", 1)[1], name)
        else:
            filenames = name
        injected.files[label] = Path(name)
    namespace[controller] = SimpleNamespace(filename=filenames)
    for kind, target in (("env", injected.env), ("extra_vars", injected.extra_vars)):
        for name, template in injectors.get(kind, {}).items():
            target[name] = sandbox.from_string(template).render(**namespace)
    return injected
