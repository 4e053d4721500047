"""Issue 22: the shapes real files have, edited byte for byte (fixtures written by hand, each says its source).

For each shape: only the lines the change owns differ, and a second render finds nothing to change.
tests/unit/modules/test_module_file_shapes.py runs the same shapes through the modules (check mode == real run).
"""

import json
import pathlib

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import (
    flags,
    kubeadm_config,
    kubelet,
    rancher,
    rke1,
    static_pod,
    yamldoc,
)

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


def test_removed_key_takes_its_own_comment_and_the_next_keys_comment_stays():
    """RKE1: removing feature-gates takes its own comment with it; the one about node-monitor-period stays above it."""
    services = {"kube-controller": {"feature-gates": None, "node-monitor-period": "2s", "node-monitor-grace-period": "20s"}}
    before, after = edit("rke1-cluster-feature-gates-comments.yml", lambda document: rke1.render(document, services, "cluster.yml"))
    expected = replaced(before, '      # gates turned on for the 1.24 upgrade (ticket OPS-1432)\n      feature-gates: "TTLAfterFinished=true"\n', "")
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
    """RKE2 passes both; the last wins. Setting it keeps the first line (new value) and drops the repeat with the
    comment written above the repeat (issue 38.12: it would otherwise stand above terminated-pod-gc-threshold)."""
    args = {"kube-controller-manager-arg": {"node-monitor-grace-period": "4s"}}
    before, after = edit("rke2-config-flag-twice.yaml", lambda document: rancher.render(document, args, "config.yaml"))
    expected = replaced(before, '  - "node-monitor-grace-period=40s"\n', '  - "node-monitor-grace-period=4s"\n')
    assert after == replaced(expected, '  # incident 2025-03: detect dead nodes faster\n  - "node-monitor-grace-period=20s"\n', "")


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


# -- Issue 38.12: an indented document gets a new list key, JSON stays JSON, a removed flag's comment goes --------

TERRAFORM_K3S = "k3s-config-terraform-heredoc.yaml"


@pytest.mark.parametrize("drop_in", [False, True])
def test_a_new_list_key_in_an_indented_document_is_indented_like_the_document(drop_in):
    """No block list in the file yet: the new key's items were written at column 0 and the result refused."""
    args = {"kubelet-arg": {"node-status-update-frequency": "4s"}, "kube-controller-manager-arg": {"node-monitor-period": "2s"}}
    before, after = edit(TERRAFORM_K3S, lambda document: rancher.render(document, args, "config.yaml", drop_in=drop_in))
    plus = "+" if drop_in else ""
    assert after == before + (
        f"    kubelet-arg{plus}:\n"
        "    - node-status-update-frequency=4s\n"
        f"    kube-controller-manager-arg{plus}:\n"
        "    - node-monitor-period=2s\n"
    )


# /var/lib/kubelet/config.json: a KubeletConfiguration the kubelet reads with --config (or from its --config-dir):
# "The configuration file must be a JSON or YAML representation of the parameters in this struct"
# (kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/). Laid out as jq and kubectl -o json write it:
# one key a line, 2 spaces a level, empty objects and lists as {} and []. (JSON has no comments: the source is here.)
KUBELET_JSON = "kubelet-config.json"


def kubelet_settings(settings):
    return lambda document: kubelet.render(document, settings, "config.json")


def test_a_json_kubelet_config_stays_json_line_for_line_in_its_key_order():
    settings = {"nodeStatusUpdateFrequency": "4s", "nodeLeaseDurationSeconds": 20, "featureGates": {"GracefulNodeShutdownBasedOnPodPriority": True}}
    before, after = edit(KUBELET_JSON, kubelet_settings(settings))
    expected = replaced(before, '"nodeStatusUpdateFrequency": "10s",', '"nodeStatusUpdateFrequency": "4s",')
    gate = '    "GracefulNodeShutdown": true'
    expected = replaced(expected, f"{gate}\n", f'{gate},\n    "GracefulNodeShutdownBasedOnPodPriority": true\n')
    expected = replaced(expected, '  "tlsCipherSuites": []\n}\n', '  "tlsCipherSuites": [],\n  "nodeLeaseDurationSeconds": 20\n}\n')
    assert after == expected
    assert list(json.loads(after)) == [*json.loads(before), "nodeLeaseDurationSeconds"]


def test_a_json_kubelet_config_loses_a_removed_field_and_its_comma():
    before, after = edit(KUBELET_JSON, kubelet_settings({"nodeStatusUpdateFrequency": None, "tlsCipherSuites": None}))
    expected = replaced(before, '  "nodeStatusUpdateFrequency": "10s",\n', "")
    assert after == replaced(expected, '  "evictionHard": {},\n  "tlsCipherSuites": []\n', '  "evictionHard": {}\n')


@pytest.mark.parametrize(
    "text",
    [
        '{\n\t"apiVersion": "kubelet.config.k8s.io/v1beta1",\n\t"kind": "KubeletConfiguration",\n\t"nodeStatusUpdateFrequency": "10s"\n}',
        '{\n    "kind": "KubeletConfiguration",\n    "apiVersion": "kubelet.config.k8s.io/v1beta1",\n    "nodeStatusUpdateFrequency": "10s"\n}\n',
        '{"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1", "nodeStatusUpdateFrequency": "10s"}\n',
        '{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","nodeStatusUpdateFrequency":"10s"}',
    ],
    ids=["tabs-no-final-newline", "four-spaces", "one-line", "one-line-compact"],
)
def test_json_in_other_layouts_keeps_its_layout(text):
    after = yamldoc.dump(kubelet_settings({"nodeStatusUpdateFrequency": "4s"})(yamldoc.load(text, "c")).document, text)
    assert after == text.replace('10s"', '4s"')


def test_json_in_a_layout_that_cannot_be_written_back_is_refused():
    text = '{\n  "kind" : "KubeletConfiguration",\n  "apiVersion" : "kubelet.config.k8s.io/v1beta1",\n  "nodeStatusUpdateFrequency" : "10s"\n}\n'
    rendered = kubelet_settings({"nodeStatusUpdateFrequency": "4s"})(yamldoc.load(text, "c"))
    with pytest.raises(FileEditError, match=r"config\.json is JSON in a layout .* nothing changed"):
        yamldoc.dump(rendered.document, text, "config.json")


COMMENTED_KCM = "kube-controller-manager-commented.yaml"


def test_a_removed_flag_takes_the_comment_above_it_along():
    before, after = edit(COMMENTED_KCM, kcm({"feature-gates": None, "node-monitor-grace-period": None}))
    gates = "    - --feature-gates=RotateKubeletServerCertificate=true,SomeAlphaGate=false\n"
    expected = replaced(before, "    # gates for the 1.34 upgrade, ticket OPS-2211\n" + gates, "")
    assert after == replaced(expected, "    # dead-node detection: see runbook RB-12 before changing\n    - --node-monitor-grace-period=40s\n", "")


def test_a_removed_last_flag_takes_its_comment_and_leaves_the_next_keys_comment():
    """kube-scheduler: the comment below the last flag is about image:, the one above it goes with the flag."""
    before, after = edit("kube-scheduler-commented.yaml", lambda document: static_pod.render(document, "kube-scheduler", {"kube-api-qps": None}, None, "s"))
    assert after == replaced(before, "    # raised for the batch workloads, see ticket OPS-1234\n    - --kube-api-qps=100\n", "")


def test_a_changed_flag_keeps_the_comment_above_it():
    before, after = edit(COMMENTED_KCM, kcm({"node-monitor-grace-period": "20s", "kube-api-qps": None}))
    expected = replaced(before, "    - --node-monitor-grace-period=40s\n", "    - --node-monitor-grace-period=20s\n")
    assert after == replaced(expected, "    # raised for the batch workloads, see ticket OPS-1234\n    - --kube-api-qps=100\n", "")


def test_a_removed_kubeadm_extra_arg_takes_the_comment_above_it_along():
    name = "kubeadm-cluster-config-v1beta4-commented.yaml"
    before, after = edit(
        name,
        lambda document: kubeadm_config.render(document, {"node-monitor-grace-period": None}, {"default-not-ready-toleration-seconds": None}, name),
    )
    item = '  - name: default-not-ready-toleration-seconds\n    value: "60"\n'
    expected = replaced(before, "  # evict from dead nodes sooner than the stock 300 s (ticket OPS-2210)\n" + item, "")
    assert after == replaced(expected, "  # dead-node detection: see runbook RB-12 before changing\n  - name: node-monitor-grace-period\n    value: 40s\n", "")


# -- Found while at it: a flow list over several lines, a byte order mark ---------------------------------------------

FLOW_MULTILINE = "rke2-config-flow-lists-multiline.yaml"


def test_a_flow_list_over_several_lines_changed_next_to_another_change_is_written_once():
    """The multi-line flow list and the line after it change: the list's lines are replaced, not kept beside the new one."""
    args = {"kube-controller-manager-arg": {"node-monitor-grace-period": None}, "kubelet-arg": {"node-status-update-frequency": "4s"}}
    before, after = edit(FLOW_MULTILINE, lambda document: rancher.render(document, args, "config.yaml"))
    expected = replaced(
        before,
        '[\n  "node-monitor-grace-period=40s",\n  "terminated-pod-gc-threshold=500"\n]\nkubelet-arg: [ "max-pods=150" ]\n',
        '["terminated-pod-gc-threshold=500"]\nkubelet-arg: ["max-pods=150", node-status-update-frequency=4s]\n',
    )
    assert after == expected


def test_a_flow_list_over_several_lines_alone_keeps_the_lines_around_it():
    args = {"kube-apiserver-arg": {"v": "2"}}
    before, after = edit(FLOW_MULTILINE, lambda document: rancher.render(document, args, "config.yaml"))
    assert after == before + "kube-apiserver-arg:\n- v=2\n"


@pytest.mark.parametrize(
    ("name", "render"),
    [
        (KUBELET_JSON, kubelet_settings({"nodeStatusUpdateFrequency": "4s"})),
        ("rke2-config-comments.yaml", lambda document: rancher.render(document, {"kubelet-arg": {"max-pods": "110"}}, "config.yaml")),
    ],
)
def test_a_byte_order_mark_stays_and_the_file_keeps_its_shape(name, render):
    """Windows editors (Notepad before Windows 10 1903) start UTF-8 files with a BOM."""
    text = fixture_text(name)
    with_bom = "\ufeff" + text
    assert yamldoc.dump(render(yamldoc.load(with_bom, name)).document, with_bom) == "\ufeff" + yamldoc.dump(render(yamldoc.load(text, name)).document, text)


def test_a_file_with_only_comments_keeps_them_and_gets_the_new_keys_after_them():
    """rancher_config edits an empty config.yaml (k3s and RKE2 start on one); the comments in it are the owner's."""
    args = {"kubelet-arg": {"node-status-update-frequency": "4s"}}
    before, after = edit("k3s-config-comments-only.yaml", lambda document: rancher.render(document, args, "config.yaml"))
    assert after == before + "kubelet-arg:\n- node-status-update-frequency=4s\n"


def test_a_tab_before_a_trailing_comment_is_read_and_kept():
    """go-yaml (the kubelet's reader) takes it; ruamel.yaml alone refused the file as "not valid YAML"."""
    settings = {"nodeStatusUpdateFrequency": "4s", "nodeLeaseDurationSeconds": 20}
    before, after = edit("kubelet-config-tab-before-comment.yaml.fixture", lambda document: kubelet.render(document, settings, "config.yaml"))
    expected = replaced(before, "nodeStatusUpdateFrequency: 10s\t# stock; see runbook RB-12\n", "nodeStatusUpdateFrequency: 4s\t# stock; see runbook RB-12\n")
    assert after == expected + "nodeLeaseDurationSeconds: 20\n"


@pytest.mark.parametrize("text", ['a: "x\t#y"\n', "a: 'x\t#y'  # c\n"])
def test_a_tab_and_hash_inside_quotes_are_the_value(text):
    assert yamldoc.load(text, "f")["a"] == "x\t#y"


def test_a_removed_kubeadm_extra_arg_next_to_a_changed_one_takes_only_its_own_comment():
    """Items of a {name, value} list are told apart by their name, not by the key "name" they all have."""
    name = "kubeadm-cluster-config-v1beta4-commented.yaml"
    flags = {"default-not-ready-toleration-seconds": None, "default-unreachable-toleration-seconds": "30"}
    before, after = edit(name, lambda document: kubeadm_config.render(document, None, flags, name))
    item = '  - name: default-not-ready-toleration-seconds\n    value: "60"\n'
    expected = replaced(before, "  # evict from dead nodes sooner than the stock 300 s (ticket OPS-2210)\n" + item, "")
    unreachable = "  - name: default-unreachable-toleration-seconds\n"
    assert after == replaced(expected, unreachable + '    value: "60"\n', unreachable + '    value: "30"\n')
