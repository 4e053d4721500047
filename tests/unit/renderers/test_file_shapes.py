"""Issue 22: the shapes real files have, edited byte for byte (fixtures written by hand, each says its source).

For each shape: only the lines the change owns differ, and a second render finds nothing to change.
tests/unit/modules/test_module_file_shapes.py runs the same shapes through the modules (check mode == real run).
"""

import pathlib

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import rancher, rke1, yamldoc

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def fixture_text(name):
    return (FIXTURES / name).read_bytes().decode("utf-8")  # not read_text(): it would turn CR LF into LF


class Changed:
    """What a renderer returns, for a test that changes the document itself."""

    def __init__(self, document):
        self.document, self.changes = document, ["changed by the test"]


def edit(name, render, idempotent=True):
    """(text before, text after) of fixture ``name`` with ``render`` applied; checks the second run is a no-op."""
    text = fixture_text(name)
    rendered = render(yamldoc.load(text, name))
    assert rendered.changes
    after = yamldoc.dump(rendered.document, text)
    if idempotent:
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


# -- Blocks whose indentation ruamel does not reproduce: only the owned lines change -------------------------


def test_flow_command_with_args_and_mixed_list_offsets_keeps_every_other_line():
    """A hand-written static pod: command: ["kube-controller-manager"], args at offset 0 under a list at offset 2."""

    def change(document):
        args = document["spec"]["containers"][0]["args"]
        args[4] = yamldoc.same_style(args[4], "--node-monitor-grace-period=20s")
        args.append("--node-monitor-period=2s")
        return Changed(document)

    before, after = edit("kube-controller-manager-flow-command-args.yaml", change, idempotent=False)
    expected = replaced(before, "      - --node-monitor-grace-period=40s   # stock\n", "      - --node-monitor-grace-period=20s   # stock\n")
    expected = replaced(expected, "      - --use-service-account-credentials=true\n",
                        "      - --use-service-account-credentials=true\n      - --node-monitor-period=2s\n")
    assert after == expected
    assert "      - --allocate-node-cidrs=true \n" in after  # its trailing space too


def test_a_document_indented_six_spaces_stays_indented_and_keeps_its_flow_spacing():
    args = {
        "kube-controller-manager-arg": {"node-monitor-grace-period": "20s", "node-monitor-period": "2s"},
        "kube-apiserver-arg": {"default-not-ready-toleration-seconds": "30"},
    }
    before, after = edit("rke2-config-indented.yaml", lambda document: rancher.render(document, args, "config.yaml"))
    expected = replaced(before, '        - "node-monitor-grace-period=40s"\n', '        - "node-monitor-grace-period=20s"\n')
    expected = replaced(expected, '        - "terminated-pod-gc-threshold=1000"\n',
                        '        - "terminated-pod-gc-threshold=1000"\n        - node-monitor-period=2s\n')
    # The flow list that changes is ruamel's line (the change owns it); the other flow lists keep their spaces.
    expected = replaced(expected, '      kube-apiserver-arg: [ "audit-log-maxage=30" ]\n',
                        '      kube-apiserver-arg: ["audit-log-maxage=30", default-not-ready-toleration-seconds=30]\n')
    assert after == expected


def test_removed_key_leaves_the_comment_of_the_next_key_above_that_key():
    """RKE1: removing feature-gates keeps both comments, and the one about node-monitor-period stays above it."""
    services = {"kube-controller": {"feature-gates": None, "node-monitor-period": "2s", "node-monitor-grace-period": "20s"}}
    before, after = edit("rke1-cluster-feature-gates-comments.yml", lambda document: rke1.render(document, services, "cluster.yml"))
    expected = replaced(before, '      feature-gates: "TTLAfterFinished=true"\n', "")
    expected = replaced(expected, "      node-monitor-period: 5s\n", "      node-monitor-period: 2s\n")
    assert after == replaced(expected, "      node-monitor-grace-period: 40s\n", "      node-monitor-grace-period: 20s\n")
    assert "# dead-node detection: see runbook RB-12 before changing\n      node-monitor-period: 2s\n" in after


def test_a_changed_line_keeps_the_spaces_before_its_comment():
    args = {"kubelet-arg": {"node-status-update-frequency": "4s"}}
    before, after = edit(WINDOWS_AGENT, lambda document: rancher.render(document, args, "config.yaml"))
    assert after == replaced(before, '"node-status-update-frequency=10s"   # stock\r\n', '"node-status-update-frequency=4s"   # stock\r\n')


# -- Anchors, aliases, merge keys; a flag given twice -------------------------------------------------------

ANCHORS = "rke1-cluster-anchors.yml"


def test_anchors_aliases_and_merge_keys_are_kept():
    services = {"kube-controller": {"node-monitor-grace-period": "20s", "node-monitor-period": "2s"}}
    before, after = edit(ANCHORS, lambda document: rke1.render(document, services, "cluster.yml"))
    expected = replaced(before, "      node-monitor-grace-period: 40s\n", "      node-monitor-grace-period: 20s\n      node-monitor-period: 2s\n")
    assert after == expected


@pytest.mark.parametrize("service", ["kube-api", "scheduler"])
def test_a_mapping_shared_through_an_anchor_is_not_changed(service):
    document = yamldoc.load(fixture_text(ANCHORS), ANCHORS)
    with pytest.raises(FileEditError, match=rf"services\.{service}\.extra_args is shared through the YAML anchor &log_args"):
        rke1.render(document, {service: {"v": "4"}}, "cluster.yml")


def test_a_flag_given_twice_is_set_once_where_it_first_was():
    """RKE2 passes both; the last wins. Setting it keeps the first line (new value) and drops the repeat, not its comment."""
    args = {"kube-controller-manager-arg": {"node-monitor-grace-period": "4s"}}
    before, after = edit("rke2-config-flag-twice.yaml", lambda document: rancher.render(document, args, "config.yaml"))
    expected = replaced(before, '  - "node-monitor-grace-period=40s"\n', '  - "node-monitor-grace-period=4s"\n')
    assert after == replaced(expected, '  - "node-monitor-grace-period=20s"\n', "")
