"""Issue 22: the shapes real files have, edited byte for byte (fixtures written by hand, each says its source).

For each shape: only the lines the change owns differ, and a second render finds nothing to change.
tests/unit/modules/test_module_file_shapes.py runs the same shapes through the modules (check mode == real run).
"""

import pathlib

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags, rancher, rke1, static_pod, yamldoc

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def fixture_text(name):
    """The fixture as its system writes it. A ``-crlf`` fixture is a Windows file with CR LF line endings, stored with
    LF (ansible-test's line-endings sanity test refuses CR LF in a collection) and given its CR LF back here."""
    data = (FIXTURES / name).read_bytes()  # not read_text(): it would turn CR LF into LF
    if "-crlf." in name:
        data = data.replace(b"\n", b"\r\n")
    return data.decode("utf-8")


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


# -- Static pods: the process as it runs, command then args (issue 22.1) -------------------------------------

KOPS = "kube-controller-manager-kops-go-runner.manifest"
FAST = {"node-monitor-period": "2s", "node-monitor-grace-period": "20s"}


def kcm(flags, feature_gates=None):
    return lambda document: static_pod.render(document, "kube-controller-manager", flags, feature_gates, "kube-controller-manager.yaml")


def test_kops_go_runner_new_flags_go_after_the_component_binary_in_args():
    """kOps: command [/go-runner], args: go-runner's flags, /usr/local/bin/kube-controller-manager, its flags."""
    before, after = edit(KOPS, kcm(dict(FAST, v="4")))
    expected = replaced(before, "    - --v=2\n", "    - --v=4\n    - --node-monitor-period=2s\n    - --node-monitor-grace-period=20s\n")
    assert after == expected
    document = yamldoc.load(after, KOPS)
    assert static_pod.command_of(document, "kube-controller-manager", KOPS) == ["/go-runner"]
    args = static_pod.args_of(document, "kube-controller-manager", KOPS)
    assert args.index("--node-monitor-grace-period=20s") > args.index("/usr/local/bin/kube-controller-manager")


def test_kops_go_runner_flags_are_not_the_components():
    document = yamldoc.load(fixture_text(KOPS), KOPS)
    flags = static_pod.read_flags(document, "kube-controller-manager", KOPS)
    assert "log-file" not in flags and "also-stdout" not in flags and flags["v"] == ["2"]
    assert static_pod.render(document, "kube-controller-manager", {"log-file": None}, None, KOPS).changes == []


def test_flow_command_with_args_the_flags_are_edited_in_args():
    before, after = edit("kube-controller-manager-flow-command-args.yaml", kcm(FAST))
    expected = replaced(before, "      - --node-monitor-grace-period=40s   # stock\n", "      - --node-monitor-grace-period=20s   # stock\n")
    assert after == replaced(expected, "      - --use-service-account-credentials=true\n",
                             "      - --use-service-account-credentials=true\n      - --node-monitor-period=2s\n")
    assert '      command: ["kube-controller-manager"]\n' in after


TWICE = "kube-controller-manager-flag-in-command-and-args.yaml"


def test_a_flag_in_command_and_again_in_args_is_set_where_it_first_is_and_the_repeat_goes():
    before, after = edit(TWICE, kcm({"node-monitor-grace-period": "4s", "node-monitor-period": "2s"}))
    expected = replaced(before, "    - --node-monitor-grace-period=40s\n", "    - --node-monitor-grace-period=4s\n")
    expected = replaced(expected, "    args:\n    - --node-monitor-grace-period=20s\n", "    args:\n")
    assert after == replaced(expected, "    - --v=2\n", "    - --v=2\n    - --node-monitor-period=2s\n")


def test_the_value_the_process_runs_with_is_the_last_one_given():
    """args' 20s comes after command's 40s: the component runs with 20s, so asking for 20s changes nothing."""
    document = yamldoc.load(fixture_text(TWICE), TWICE)
    assert static_pod.read_flags(document, "kube-controller-manager", TWICE)["node-monitor-grace-period"] == ["40s", "20s"]
    assert kcm({"node-monitor-grace-period": "20s"})(document).changes == []
    assert kcm({"node-monitor-grace-period": "40s"})(document).changes == ["kube-controller-manager: node-monitor-grace-period 40s,20s -> 40s"]


@pytest.mark.parametrize(
    ("container", "message"),
    [
        ({"name": "c", "args": ["--a=1"]}, "has no command list and its args do not name the c binary"),
        ({"name": "c", "command": ["/bin/sh", "-c", "exec /usr/local/bin/c --a=1"]}, "runs its command through /bin/sh"),
        ({"name": "c", "command": "c --a=1"}, "command must be a list"),
    ],
)
def test_a_process_whose_flags_cannot_be_placed_is_refused(container, message):
    document = yamldoc.load("kind: Pod\nspec:\n  containers: []\n", "x")
    document["spec"]["containers"].append(container)
    with pytest.raises(FileEditError, match=message):
        static_pod.render(document, "c", {"a": "2"}, None, "c.yaml")


# -- The health check reads a running process the same way (roles/control_plane_flags) -----------------------

GO_RUNNER_LINE = ("4242 /go-runner --log-file=/var/log/kube-controller-manager.log --also-stdout "
                  "/usr/local/bin/kube-controller-manager --leader-elect=true --node-monitor-grace-period=40s "
                  "--node-monitor-grace-period=20s")


@pytest.mark.parametrize(
    ("wanted", "runs"),
    [
        ({"node-monitor-grace-period": "20s"}, True),  # the last value given is the one it runs with
        ({"node-monitor-grace-period": "40s"}, False),
        ({"log-file": None}, True),  # go-runner's flag, not the component's
        ({"also-stdout": True}, False),
    ],
)
def test_a_go_runner_process_is_read_after_the_component_binary(wanted, runs):
    assert bool(flags.processes_with_flags([GO_RUNNER_LINE], wanted, "kube-controller-manager")) is runs
