"""The file modules: doc fragment == FILE_EDIT_ARGUMENT_SPEC, each module's docs == its argument spec, one main()."""

import pytest
import yaml
from ansible_collections.nodeguard.failover.plugins.doc_fragments.file_edit import ModuleDocFragment
from ansible_collections.nodeguard.failover.plugins.module_utils import files
from ansible_collections.nodeguard.failover.plugins.module_utils.files import FILE_EDIT_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.modules import kubelet_config, rancher_config, rke1_cluster_config, static_pod_flags

FILE_MODULES = [kubelet_config, rke1_cluster_config, rancher_config, static_pod_flags]
MINIMAL_ARGS = {
    kubelet_config: {"settings": {"nodeLeaseDurationSeconds": 20}},
    rke1_cluster_config: {"services": {"kubelet": {"node-status-update-frequency": "4s"}}},
    rancher_config: {"distribution": "rke2", "args": {"kubelet-arg": {"node-status-update-frequency": "4s"}}},
    static_pod_flags: {"flags": {"node-monitor-period": "2s"}},
}


def test_fragment_matches_argument_spec():
    documented = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert set(documented) == set(FILE_EDIT_ARGUMENT_SPEC)
    for name, spec in FILE_EDIT_ARGUMENT_SPEC.items():
        assert documented[name]["type"] == spec["type"], name
        assert documented[name].get("default") == spec.get("default"), name


@pytest.mark.parametrize("module", FILE_MODULES, ids=lambda module: module.__name__.rsplit(".", 1)[-1])
def test_module_documentation_matches_its_argument_spec(module):
    """What ansible-test validate-modules compares: documented options (module + fragment) == argument spec."""
    documented = dict(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"])
    documented.update(yaml.safe_load(module.DOCUMENTATION)["options"])
    spec = dict(module.OPTIONS, **FILE_EDIT_ARGUMENT_SPEC)
    assert set(documented) == set(spec)
    for name, option in spec.items():
        for field in ("type", "default", "choices", "elements"):
            assert documented[name].get(field) == option.get(field), (name, field)
        assert documented[name].get("required", False) == option.get("required", False), name
    yaml.safe_load(module.RETURN)
    yaml.safe_load(module.EXAMPLES)


@pytest.mark.parametrize("module", FILE_MODULES, ids=lambda module: module.__name__.rsplit(".", 1)[-1])
def test_every_file_module_fails_the_same_way(module, run_module, tmp_path, monkeypatch):
    """One main() (files.run_file_module): every failure names the file and reports no change."""
    calls = []
    shared = files.run_file_module
    monkeypatch.setattr(module, "run_file_module", lambda *args: calls.append(args) or shared(*args))
    path = tmp_path / "missing.yaml"
    result = run_module(module, dict(MINIMAL_ARGS[module], path=str(path)))
    assert calls, "main() does not use files.run_file_module"
    assert result["failed"] and result["msg"] == f"{path} does not exist"
    assert result["path"] == str(path) and result["changes"] == []
    assert not path.exists()
