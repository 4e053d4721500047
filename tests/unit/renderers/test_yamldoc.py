"""The YAML round trip keeps what it does not own."""

import pathlib

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.yaml")) + sorted(FIXTURES.glob("*.yml")), ids=lambda p: p.name)
def test_round_trip_is_byte_identical(path):
    text = path.read_text()
    assert yamldoc.dump(yamldoc.load(text, path.name), text) == text


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: [1, 2\n", "is not valid YAML"),
        ("a: 1\n  b: 2\n", "is not valid YAML"),
        ("- just\n- a list\n", "must hold a YAML mapping"),
        ("a: 1\n---\nb: 2\n", "is not valid YAML"),
        ("key: value\nkey: again\n", "is not valid YAML"),
    ],
)
def test_malformed_yaml_is_refused(text, message):
    with pytest.raises(FileEditError, match=message):
        yamldoc.load(text, "broken.yaml")


def test_empty_file_is_an_empty_mapping():
    assert dict(yamldoc.load("# only a comment\n", "x")) == {}


def test_quoting_style_is_kept_on_replace():
    document = yamldoc.load("a:\n  - \"x=1\"\n  - 'y=2'\n  - z=3\n", "x")
    document["a"][0] = yamldoc.same_style(document["a"][0], "x=9")
    document["a"][1] = yamldoc.same_style(document["a"][1], "y=9")
    assert yamldoc.dump(document, "a:\n  - x\n") == "a:\n  - \"x=9\"\n  - 'y=9'\n  - z=3\n"
