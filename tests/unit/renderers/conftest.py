"""Shared helpers for renderer tests: fixtures are real-looking files from kubeadm, RKE1, RKE2."""

import pathlib

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")  # not read_text(): it would turn CR LF into LF


@pytest.fixture
def load():
    """load(name) -> (document, text) of a fixture file."""

    def _load(name):
        text = fixture_text(name)
        return yamldoc.load(text, name), text

    return _load
