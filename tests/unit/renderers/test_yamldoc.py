"""The YAML round trip keeps what it does not own."""

import pathlib

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubelet, rancher, rke1, static_pod, yamldoc

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


FIXTURE_FILES = sorted(path for pattern in ("*.yaml", "*.yml", "*.manifest", "*.json", "*.fixture") for path in FIXTURES.glob(pattern))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_round_trip_is_byte_identical(path):
    text = path.read_bytes().decode("utf-8")
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


# --- Real-world-shaped files: only the owned lines change, every other byte stays (issue 12.7) ---


def edited(name, render):
    """(original text, text after ``render`` changed the document loaded from fixture ``name``)."""
    text = (FIXTURES / name).read_bytes().decode("utf-8")
    rendered = render(yamldoc.load(text, name))
    assert rendered.changes
    return text, yamldoc.dump(rendered.document, text)


def replaced(text, old, new):
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_rke1_list_item_offset_and_ssh_key_block_are_not_reindented():
    """nodes: "  - address:" / "    user:" is a dash offset of 2 and a mapping indent of 2, not 4."""
    services = {"kube-controller": {"node-monitor-grace-period": "20s"}, "kubelet": {"node-status-update-frequency": "4s"}}
    before, after = edited("rke1-cluster-list-offset.yml", lambda document: rke1.render(document, services, "cluster.yml"))
    expected = replaced(before, '      terminated-pod-gc-threshold: "1000"\n',
                        '      terminated-pod-gc-threshold: "1000"\n      node-monitor-grace-period: 20s\n')
    expected = replaced(expected, '      max-pods: "110"\n', '      max-pods: "110"\n      node-status-update-frequency: 4s\n')
    assert after == expected


def test_new_blocks_take_the_indentation_of_their_neighbours_and_go_before_the_blank_line():
    services = {"etcd": {"election-timeout": "5000"}, "kubeproxy": {"v": "2"}}
    before, after = edited("rke1-cluster-list-offset.yml", lambda document: rke1.render(document, services, "cluster.yml"))
    expected = replaced(before, "        bucket_name: staging-etcd\n",
                        "        bucket_name: staging-etcd\n    extra_args:\n      election-timeout: '5000'\n")
    expected = replaced(expected, '      - "/var/lib/kubelet-plugins:/var/lib/kubelet-plugins"\n\n',
                        '      - "/var/lib/kubelet-plugins:/var/lib/kubelet-plugins"\n  kubeproxy:\n    extra_args:\n      v: \'2\'\n\n')
    assert after == expected


def test_kubelet_trailing_spaces_flow_lists_and_missing_final_newline_are_kept():
    settings = {"nodeStatusUpdateFrequency": "4s", "nodeLeaseDurationSeconds": 20}
    before, after = edited("kubelet-config-trailing-spaces.yaml.fixture", lambda document: kubelet.render(document, settings, "config.yaml"))
    assert not before.endswith("\n")
    expected = replaced(before, "nodeStatusUpdateFrequency: 10s\n", "nodeStatusUpdateFrequency: 4s\n")
    assert after == expected + "\nnodeLeaseDurationSeconds: 20"


def test_rke2_comments_between_keys_and_new_items_before_the_comment_that_follows_the_list():
    args = {
        "kube-controller-manager-arg": {"node-monitor-grace-period": "20s", "node-monitor-period": "2s"},
        "kubelet-arg": {"node-status-update-frequency": "4s"},
    }
    before, after = edited("rke2-config-comments.yaml", lambda document: rancher.render(document, args, "config.yaml"))
    expected = replaced(before, '  - "node-monitor-grace-period=40s"   # platform default\n',
                        '  - "node-monitor-grace-period=20s"   # platform default\n  - node-monitor-period=2s\n')
    expected = replaced(expected, '  - "eviction-hard=memory.available<300Mi"\n',
                        '  - "eviction-hard=memory.available<300Mi"\n  - node-status-update-frequency=4s\n')
    assert after == expected


def test_removing_the_last_item_keeps_the_comment_and_blank_line_after_it_and_drops_the_one_above_it():
    args = {"kube-controller-manager-arg": {"node-monitor-grace-period": None}, "kubelet-arg": {"eviction-hard": None}}
    before, after = edited("rke2-config-comments.yaml", lambda document: rancher.render(document, args, "config.yaml"))
    expected = replaced(before, '  - "node-monitor-grace-period=40s"   # platform default\n', "")
    assert after == replaced(expected, '  # eviction tuned for small nodes\n  - "eviction-hard=memory.available<300Mi"\n', "")


def test_static_pod_new_flag_goes_before_the_comment_about_the_next_key():
    flags = {"kube-api-burst": "200", "leader-elect": None}
    before, after = edited(
        "kube-scheduler-commented.yaml", lambda document: static_pod.render(document, "kube-scheduler", flags, None, "kube-scheduler.yaml")
    )
    expected = replaced(before, "    - --leader-elect=true\n", "")
    expected = replaced(expected, "    - --kube-api-qps=100\n", "    - --kube-api-qps=100\n    - --kube-api-burst=200\n")
    assert after == expected


@pytest.mark.parametrize(
    "text, change, expected",
    [
        # Offset-0 list in one block, offset-2 list in another: each keeps its own.
        ("a:\n- x\nb:\n  - y\n", lambda d: d["b"].append("z"), "a:\n- x\nb:\n  - y\n  - z\n"),
        ("a:\n- x\nb:\n  - y\n", lambda d: d["a"].append("z"), "a:\n- x\n- z\nb:\n  - y\n"),
        # Four-space mappings with two-space list offsets.
        ("top:\n    list:\n      - x\n    k: 1\n", lambda d: d["top"].__setitem__("n", 2), "top:\n    list:\n      - x\n    k: 1\n    n: 2\n"),
        # A comment-only line that introduces the next key stays after the new item (offset 0).
        ("e:\n- a=b\n# next\nf: 1", lambda d: d["e"].append("z"), "e:\n- a=b\n- z\n# next\nf: 1"),
        # Flow spacing, trailing spaces, literal blocks with trailing spaces stay on untouched lines.
        ("a:   [ 1,2 ]  \nb: |\n  x  \n  y\nc: 1\n", lambda d: d.__setitem__("c", 2), "a:   [ 1,2 ]  \nb: |\n  x  \n  y\nc: 2\n"),
        # Removing a whole key keeps the comment that introduced the next one, without doubling blank lines.
        ("a: 1\n\nk:\n  - x\n# about b\n\nb: 2\n", lambda d: d.pop("k"), "a: 1\n\n# about b\n\nb: 2\n"),
    ],
)
def test_untouched_lines_are_byte_identical(text, change, expected):
    document = yamldoc.load(text, "x")
    change(document)
    assert yamldoc.dump(document, text) == expected


def test_a_merge_that_would_not_hold_the_document_falls_back_to_the_plain_dump(monkeypatch):
    document = yamldoc.load("a: [ 1,2 ]\nb: 1\n", "x")
    document["b"] = 2
    monkeypatch.setattr(yamldoc, "_merge", lambda original, base, edited: "a: [1, 2]\nb: 1\n")
    assert yamldoc.dump(document, "a: [ 1,2 ]\nb: 1\n") == "a: [1, 2]\nb: 2\n"


def test_malformed_yaml_message_names_the_place_but_not_the_values():
    with pytest.raises(FileEditError) as error:
        yamldoc.load("token: first-secret\ntoken: second-secret\n", "/etc/rancher/rke2/config.yaml")
    message = str(error.value)
    assert message.startswith("/etc/rancher/rke2/config.yaml is not valid YAML: ")
    assert 'duplicate key "token"' in message and "line 2" in message
    assert "secret" not in message.replace("/etc/rancher", "")


@pytest.mark.parametrize(
    "text, empty",
    [("", True), ("\n\n", True), ("# nothing yet\n", True), ("---\n# c\n", True), ("{}\n", False), ("a: 1\n", False)],
)
def test_is_empty(text, empty):
    assert yamldoc.is_empty(text) is empty


@pytest.mark.parametrize(
    "line",
    [
        "etcd-s3-access-key: AKIAEXAMPLE\n",
        "etcd_s3_access_key: AKIAEXAMPLE\n",
        "etcd-s3-secret-key: AKIAEXAMPLE\n",
        "etcd-s3-session-token: AKIAEXAMPLE\n",
        "    secretKey: AKIAEXAMPLE\n",
        "  - \"etcd-s3-secret-key=AKIAEXAMPLE\"\n",
        "    - --token=AKIAEXAMPLE\n",
        "datastore-endpoint: postgres://u:AKIAEXAMPLE@db/k3s\n",
    ],
)
def test_secret_values_are_masked_in_both_spellings(line):
    from ansible_collections.nodeguard.failover.plugins.module_utils.files import REDACTED, redact_secrets

    masked = redact_secrets(line)
    assert "AKIAEXAMPLE" not in masked and REDACTED in masked


@pytest.mark.parametrize(
    "line", ["token-file: /etc/rancher/token\n", "secrets-encryption: true\n", "    - --use-service-account-credentials=true\n"]
)
def test_paths_and_booleans_are_not_secrets(line):
    from ansible_collections.nodeguard.failover.plugins.module_utils.files import redact_secrets

    assert redact_secrets(line) == line


class TaggedStr(str):
    """A str subclass, as Ansible 2.19 hands a templated playbook variable (ruamel.yaml cannot write it)."""


@pytest.mark.parametrize(
    "name, render",
    [
        ("kube-controller-manager.yaml", lambda document, value: static_pod.render(
            document, "kube-controller-manager", {TaggedStr("node-monitor-grace-period"): value}, {TaggedStr("A"): True}, "m.yaml")),
        ("rke2-config.yaml", lambda document, value: rancher.render(
            document, {TaggedStr("kube-controller-manager-arg"): {TaggedStr("node-monitor-grace-period"): value}}, "config.yaml")),
        ("rke1-cluster.yml", lambda document, value: rke1.render(
            document, {TaggedStr("kube-controller"): {TaggedStr("node-monitor-grace-period"): value}}, "cluster.yml")),
    ],
    ids=["static_pod", "rancher", "rke1"],
)
def test_renderers_take_str_subclasses_from_playbook_variables(name, render):
    text = (FIXTURES / name).read_text()
    with_plain = yamldoc.dump(render(yamldoc.load(text, name), "20s").document, text)
    with_tagged = yamldoc.dump(render(yamldoc.load(text, name), TaggedStr("20s")).document, text)
    assert with_tagged == with_plain and "20s" in with_plain
