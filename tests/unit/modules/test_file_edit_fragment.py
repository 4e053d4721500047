"""The file_edit doc fragment and FILE_EDIT_ARGUMENT_SPEC describe the same options."""

import yaml
from ansible_collections.nodeguard.failover.plugins.doc_fragments.file_edit import ModuleDocFragment
from ansible_collections.nodeguard.failover.plugins.module_utils.files import FILE_EDIT_ARGUMENT_SPEC


def test_fragment_matches_argument_spec():
    documented = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert set(documented) == set(FILE_EDIT_ARGUMENT_SPEC)
    for name, spec in FILE_EDIT_ARGUMENT_SPEC.items():
        assert documented[name]["type"] == spec["type"], name
        assert documented[name].get("default") == spec.get("default"), name
