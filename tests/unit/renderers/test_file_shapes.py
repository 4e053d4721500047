"""Issue 22: the shapes real files have, edited byte for byte (fixtures written by hand, each says its source).

For each shape: only the lines the change owns differ, and a second render finds nothing to change.
tests/unit/modules/test_module_file_shapes.py runs the same shapes through the modules (check mode == real run).
"""

import pathlib

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import rancher, yamldoc

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def fixture_text(name):
    return (FIXTURES / name).read_bytes().decode("utf-8")  # not read_text(): it would turn CR LF into LF


def edit(name, render):
    """(text before, text after) of fixture ``name`` with ``render`` applied; checks the second run is a no-op."""
    text = fixture_text(name)
    rendered = render(yamldoc.load(text, name))
    assert rendered.changes
    after = yamldoc.dump(rendered.document, text, name)
    assert not render(yamldoc.load(after, name)).changes, "a second run would change the file again"
    return text, after


def replaced(text, old, new):
    assert text.count(old) == 1, old
    return text.replace(old, new)


# -- CR LF (a Windows RKE2 agent's C:\etc\rancher\rke2\config.yaml) ----------------------------------------

WINDOWS_AGENT = "rke2-windows-agent-config-crlf.yaml"


def test_crlf_lines_stay_crlf_and_new_lines_get_crlf():
    args = {"kubelet-arg": {"max-pods": None}, "kube-proxy-arg": {"v": "2"}}
    before, after = edit(WINDOWS_AGENT, lambda document: rancher.render(document, args, "config.yaml"))
    assert before.count("\r\n") == before.count("\n") == 13
    expected = replaced(before, '  - "max-pods=110"\r\n', "")
    expected = replaced(expected, '  - "feature-gates=WinDSR=true"\r\n', '  - "feature-gates=WinDSR=true"\r\n  - v=2\r\n')
    assert after == expected


@pytest.mark.parametrize(("text", "newline"), [("a: 1\r\nb: 2\r\n", "\r\n"), ("a: 1\nb: 2\n", "\n"), ("a: 1\r\nb: 2\nc: 3\r\n", "\r\n"), ("", "\n")])
def test_line_ending_is_the_one_most_lines_have(text, newline):
    assert yamldoc.line_ending(text) == newline
