"""RBAC exactly as the code needs it (issue 20, item 7): every grant in deploy/rbac and deploy/rbac-opt-in is
used by an API call the collection's code makes, and every call the code makes is granted.

The calls are read from the source, not listed by hand: every kubernetes client call in
plugins/module_utils/k8s/services.py (``self.<api>.<method>``, e.g. ``self.core.read_node`` is nodes get), of
every ``Cluster`` method that code in plugins/ calls. A method added to services.py and used, without its grant,
fails here; so does a grant left behind when the code stops using it (statefulsets get, on 08a3975).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import MEDIK8S_RESOURCES

REPO = Path(__file__).resolve().parents[3]
SERVICES = REPO / "plugins" / "module_utils" / "k8s" / "services.py"
PLUGINS = REPO / "plugins"
GRANTS = (REPO / "deploy" / "rbac", REPO / "deploy" / "rbac-opt-in")

# The typed APIs Cluster builds (services.Cluster.__init__), by attribute, and their API groups.
API_GROUPS = {"core": "", "apps": "apps", "storage": "storage.k8s.io", "coordination": "coordination.k8s.io"}
# self.custom.list_cluster_custom_object(group, version, plural): the resources of services.MEDIK8S_RESOURCES.
CUSTOM_LIST = ("custom", "list_cluster_custom_object")
# GET /version: open to every authenticated user (system:public-info-viewer), no RBAC object grants it.
PUBLIC = {("version_api", "get_code")}
# kubernetes-client method verbs -> RBAC verbs
VERBS = {"read": "get", "list": "list", "patch": "patch", "create": "create", "replace": "update", "delete": "delete"}
CLIENT_METHOD = re.compile(r"^(read|list|patch|create|replace|delete)_(?:namespaced_)?([a-z_]+?)(?:_for_all_namespaces)?$")


def client_calls() -> dict:
    """{Cluster method: {(apiGroup, resource, verb)}} from the source of services.Cluster."""
    tree = ast.parse(SERVICES.read_text())
    (cluster,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Cluster"]
    calls = {}
    for method in cluster.body:
        if not isinstance(method, ast.FunctionDef) or method.name.startswith("_"):
            continue
        found = set()
        for node in ast.walk(method):
            # self.<api>.<client method>
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and getattr(node.value.value, "id", "") == "self":
                api, name = node.value.attr, node.attr
                if (api, name) in PUBLIC:
                    continue
                if (api, name) == CUSTOM_LIST:
                    found.update((group, plural, "list") for plural, (group, _version) in MEDIK8S_RESOURCES.items())
                    continue
                assert api in API_GROUPS, f"Cluster.{method.name} calls self.{api}.{name}: add its API group to this test"
                match = CLIENT_METHOD.match(name)
                assert match, f"Cluster.{method.name} calls self.{api}.{name}: not a client method this test can read"
                verb, kind = match.groups()
                found.add((API_GROUPS[api], kind.replace("_", "") + "s", VERBS[verb]))
        calls[method.name] = found
    return calls


def used_methods(names) -> set:
    """The Cluster methods that code in plugins/ (outside services.py) calls, as ``<anything>.<method>(``."""
    text = "\n".join(path.read_text() for path in PLUGINS.rglob("*.py") if path != SERVICES)
    return {name for name in names if re.search(rf"\.{name}\(", text)}


def granted() -> set:
    """{(apiGroup, resource, verb)} of every Role and ClusterRole rule in deploy/rbac and deploy/rbac-opt-in."""
    found = set()
    for directory in GRANTS:
        for path in sorted(directory.glob("*.yaml")):
            for document in yaml.safe_load_all(path.read_text()):
                if document and document["kind"] in ("Role", "ClusterRole"):
                    for rule in document["rules"]:
                        for group in rule["apiGroups"]:
                            for resource in rule["resources"]:
                                found.update((group, resource, verb) for verb in rule["verbs"])
    return found


def needed() -> set:
    calls = client_calls()
    return set().union(*(calls[name] for name in used_methods(calls)))


def test_every_call_the_code_makes_is_granted():
    missing = needed() - granted()
    assert not missing, f"called but not granted in deploy/rbac*: {sorted(missing)}"


def test_every_grant_is_used_by_a_call():
    unused = granted() - needed()
    assert not unused, f"granted in deploy/rbac* but never called: {sorted(unused)}"


def test_every_cluster_method_is_used():
    """A method nobody calls would hide a grant the code does not need behind a call it never makes."""
    calls = client_calls()
    assert set(calls) == used_methods(calls), f"unused Cluster methods: {sorted(set(calls) - used_methods(calls))}"


def test_the_reader_sees_what_it_should():
    """The parser itself: a few calls it must find, so that an empty result cannot pass the tests above."""
    calls = client_calls()
    assert calls["patch_node"] == {("", "nodes", "patch")}
    assert calls["list_pods_on_node"] == {("", "pods", "list")}
    assert calls["replace_config_map"] == {("", "configmaps", "update")}
    assert calls["delete_volume_attachment"] == {("storage.k8s.io", "volumeattachments", "delete")}
    assert calls["get_node_lease"] == {("coordination.k8s.io", "leases", "get")}
    assert ("remediation.medik8s.io", "nodehealthchecks", "list") in calls["list_medik8s"]
