"""Fixtures for the unit tests: Ansible templating with the collection's plugins resolved by FQCN."""

import os
import sys

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def render():
    """render(expression, **variables): the expression templated by Ansible, plugins resolved by FQCN."""
    # Other tests import ansible_collections as a plain namespace package; Ansible's plugin loader
    # needs its own collection finder to resolve FQCNs, so swap it in for these tests only.
    plain = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "ansible_collections"}
    for name in plain:
        del sys.modules[name]
    finder = _AnsibleCollectionFinder(paths=[os.path.join(REPO, ".build", "collections")])
    finder._install()

    def render(expression, **variables):
        return Templar(loader=DataLoader(), variables=variables).template(trust_as_template("{{ " + expression + " }}"))

    yield render
    finder._remove()
    for name in [name for name in sys.modules if name.split(".")[0] == "ansible_collections"]:
        del sys.modules[name]
    sys.modules.update(plain)
