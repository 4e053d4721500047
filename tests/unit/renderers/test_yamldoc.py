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


def test_redact_secrets_masks_values_and_block_scalars_only():
    from ansible_collections.nodeguard.failover.plugins.module_utils.files import redact_secrets

    text = (
        "nodes:\n- address: 10.0.0.1\n  ssh_key: |-\n    -----BEGIN OPENSSH PRIVATE KEY-----\n    AAAA\n  user: rke\n"
        "ssh_key_path: ~/.ssh/id_ed25519\nprivate_registries:\n- url: r.example\n  password: hunter2\n"
        "agent-token: abc\nsecrets_encryption_config:\n  enabled: true\n"
    )
    assert redact_secrets(text) == (
        "nodes:\n- address: 10.0.0.1\n  ssh_key: <redacted by nodeguard.failover>\n  user: rke\n"
        "ssh_key_path: ~/.ssh/id_ed25519\nprivate_registries:\n- url: r.example\n"
        "  password: <redacted by nodeguard.failover>\n"
        "agent-token: <redacted by nodeguard.failover>\nsecrets_encryption_config:\n  enabled: true\n"
    )
