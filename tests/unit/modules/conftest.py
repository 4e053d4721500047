"""Run collection modules in-process (real AnsibleModule, patched arguments) or through `ansible`."""

import json
import os
import pathlib
import subprocess

import pytest
from ansible.module_utils.testing import patch_module_args

REPO = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "unit" / "renderers" / "fixtures"


class ModuleExit(Exception):
    def __init__(self, result):
        super().__init__(result.get("msg", ""))
        self.result = result


def _exit(self, **result):
    raise ModuleExit(dict(result, failed=False))


def _fail(self, msg, **result):
    raise ModuleExit(dict(result, failed=True, msg=msg))


@pytest.fixture
def run_module(monkeypatch):
    """run_module(module, args, check_mode=False) -> the result dict the module returned."""
    from ansible.module_utils import basic

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail)

    def _run(module, args, check_mode=False, diff=True):
        args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
        with patch_module_args(args):
            try:
                module.main()
            except ModuleExit as done:
                return done.result
        raise AssertionError("module returned without exit_json or fail_json")

    return _run


@pytest.fixture
def copy_fixture(tmp_path):
    """copy_fixture(name, dest_relative=None) -> path of a writable copy inside tmp_path."""

    def _copy(name, dest_relative=None):
        destination = tmp_path / (dest_relative or name)
        destination.parent.mkdir(parents=True, exist_ok=True)
        data = (FIXTURES / name).read_bytes()
        if "-crlf." in name:  # stored with LF (ansible-test refuses CR LF), written with the CR LF of the real file
            data = data.replace(b"\n", b"\r\n")
        destination.write_bytes(data)
        return destination

    return _copy


def _ansible_adhoc(module: str, args: dict, check: bool = False, fqcn: bool = False) -> dict:
    """Run `ansible localhost -m nodeguard.failover.<module>` for real (AnsiballZ packaging and imports)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOCALHOST_WARNING="0")
    command = [str(REPO / ".venv" / "bin" / "ansible"), "localhost", "-c", "local", "-m", module if fqcn else "nodeguard.failover." + module,
               "-a", json.dumps(args), "-e", "ansible_python_interpreter=" + str(REPO / ".venv" / "bin" / "python")]
    if check:
        command.append("--check")
    completed = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    try:
        output = json.loads(completed.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"ansible did not print JSON:\n{completed.stdout}\n{completed.stderr}") from None
    return output["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.fixture
def ansible_adhoc():
    """ansible_adhoc(module, args, check=False) -> the host result of a real `ansible localhost -m ...` run."""
    return _ansible_adhoc
