"""deploy/: least-privilege RBAC, the opt-in VolumeAttachment role and the admission policy.

The policy's CEL runs only in an API server: the lab test (tests/integration/incident/
test_admission_policy.py) proves what it refuses and allows. These tests pin what the manifests
must say so that it matches the code: the taint key, the record annotation and its format, the
ServiceAccount's name, and what is matched (never the kubelet's nodes/status).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import record as records
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.nodes import OUT_OF_SERVICE_KEY
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageOptions
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions
from ansible_collections.nodeguard.failover.plugins.module_utils.model import applied

REPO = Path(__file__).resolve().parents[3]
RBAC = REPO / "deploy" / "rbac"
OPT_IN = REPO / "deploy" / "rbac-opt-in"
ADMISSION = REPO / "deploy" / "admission"


def objects(directory: Path) -> dict:
    """{(kind, name): object} of every manifest that `kubectl apply -f <directory>/` applies (not recursive)."""
    found = {}
    for path in sorted(directory.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                found[(document["kind"], document["metadata"]["name"])] = document
    return found


def service_account() -> dict:
    (account,) = [o for (kind, _name), o in objects(RBAC).items() if kind == "ServiceAccount"]
    return account


def service_account_user() -> str:
    meta = service_account()["metadata"]
    return f"system:serviceaccount:{meta['namespace']}:{meta['name']}"


def grants(directory: Path, group: str, resource: str) -> set:
    verbs = set()
    for (kind, _name), obj in objects(directory).items():
        if kind in ("ClusterRole", "Role"):
            for rule in obj["rules"]:
                if group in rule["apiGroups"] and resource in rule["resources"]:
                    verbs.update(rule["verbs"])
    return verbs


def policy() -> dict:
    return objects(ADMISSION)[("ValidatingAdmissionPolicy", "nodeguard-out-of-service-taint")]


def policy_text() -> str:
    return (ADMISSION / "10-policy.yaml").read_text()


# --- RBAC -------------------------------------------------------------------------------------


def test_default_rbac_cannot_delete_volume_attachments():
    assert grants(RBAC, "storage.k8s.io", "volumeattachments") == {"list"}


def configmap_verbs(namespace: str) -> dict:
    """{resourceNames or None: verbs} of the ConfigMap rules of the Roles in ``namespace``."""
    found = {}
    for (kind, _name), obj in objects(RBAC).items():
        if kind == "Role" and obj["metadata"]["namespace"] == namespace:
            for rule in obj["rules"]:
                if "configmaps" in rule["resources"]:
                    key = tuple(rule.get("resourceNames") or ()) or None
                    found.setdefault(key, set()).update(rule["verbs"])
    return found


def test_default_rbac_lets_the_job_keep_its_incident_history():
    """incident/history.py reads, creates and replaces ConfigMaps in the history namespace, which holds nothing else."""
    assert configmap_verbs(OutageOptions.history_namespace) == {None: {"get", "create", "update"}}
    assert OutageOptions.history_namespace == RecoverOptions.history_namespace != applied.NAMESPACE
    assert ("Namespace", OutageOptions.history_namespace) in objects(RBAC)


def test_the_job_cannot_rewrite_the_applied_profile_its_proofs_read():
    """Issue 20, item 7: on 08a3975 the history Role's ConfigMap update covered nodeguard-applied-profile."""
    assert configmap_verbs(applied.NAMESPACE) == {(applied.NAME,): {"get"}}


def test_opt_in_role_grants_only_volume_attachment_delete_to_the_service_account():
    opt_in = objects(OPT_IN)
    (role,) = [o for (kind, _name), o in opt_in.items() if kind == "ClusterRole"]
    assert role["rules"] == [{"apiGroups": ["storage.k8s.io"], "resources": ["volumeattachments"], "verbs": ["delete"]}]
    (binding,) = [o for (kind, _name), o in opt_in.items() if kind == "ClusterRoleBinding"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]}
    account = service_account()["metadata"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}]


# --- admission policy --------------------------------------------------------------------------


def test_policy_matches_node_writes_only_not_the_kubelets_status_updates():
    spec = policy()["spec"]
    assert spec["failurePolicy"] == "Fail"
    (rule,) = spec["matchConstraints"]["resourceRules"]
    assert rule["apiGroups"] == [""]
    assert rule["resources"] == ["nodes"]  # never nodes/status or "*"
    assert set(rule["operations"]) == {"CREATE", "UPDATE"}  # DELETE and removal of the taint stay allowed


def test_policy_checks_only_requests_that_add_the_out_of_service_taint():
    (condition,) = policy()["spec"]["matchConditions"]
    expression = condition["expression"]
    assert expression.count(f"t.key == '{OUT_OF_SERVICE_KEY}'") == 2  # present now, absent before
    assert "oldObject == null" in expression  # CREATE counts as adding


def test_policy_names_the_record_annotation_the_code_writes():
    assert f"'{records.ANNOTATION}'" in policy_text()


def test_policy_record_check_matches_the_records_serialisation():
    """The policy requires the record to contain '"node":"<name>"'; that is how record.py writes it."""
    validations = [v["expression"] for v in policy()["spec"]["validations"]]
    assert "variables.record.contains('\"node\":\"' + object.metadata.name + '\"')" in validations
    rec = records.new({"metadata": {"name": "ng-worker1", "uid": "u1"}}, "job", 0.0, None)
    text = records.annotations_patch(rec)["metadata"]["annotations"][records.ANNOTATION]
    assert '"node":"ng-worker1"' in text


def test_policy_has_one_validation_per_guarantee_each_naming_what_is_missing():
    validations = policy()["spec"]["validations"]
    messages = " ".join(v["messageExpression"] for v in validations)
    for words in ("incident record", "does not name node", "may not add", "is Ready"):
        assert words in messages
    assert all(v["reason"] == "Forbidden" for v in validations)


def variables() -> dict:
    return {v["name"]: v["expression"] for v in policy()["spec"]["variables"]}


def test_parameters_come_first_and_default_to_the_remediation_service_account_and_no_power_event_path():
    """docs/rbac.md changes them with JSON patches on /spec/variables/0..2."""
    names = [v["name"] for v in policy()["spec"]["variables"]]
    assert names[:3] == ["allowedUsers", "allowedGroups", "powerEventPath"]
    assert yaml.safe_load(variables()["allowedUsers"].replace("'", '"')) == [service_account_user()]
    assert variables()["allowedGroups"] == "[]"
    assert variables()["powerEventPath"] == "false"


def test_no_param_kind_and_a_binding_that_denies():
    """A built-in paramKind breaks for good once its last binding goes (kubernetes/kubernetes#133827)."""
    assert "paramKind" not in policy()["spec"]
    binding = objects(ADMISSION)[("ValidatingAdmissionPolicyBinding", "nodeguard-out-of-service-taint")]["spec"]
    assert binding == {"policyName": policy()["metadata"]["name"], "validationActions": ["Deny"]}


def test_the_remediation_service_account_cannot_change_its_own_guard():
    """deploy/rbac/ grants no write to admission policies: the job cannot allow itself to taint a Ready node."""
    guarded = {"validatingadmissionpolicies", "validatingadmissionpolicybindings", "*"}
    writes = {"create", "update", "patch", "delete", "deletecollection", "*"}
    for directory in (RBAC, OPT_IN):
        for (kind, _name), obj in objects(directory).items():
            if kind in ("ClusterRole", "Role"):
                for rule in obj["rules"]:
                    assert not (guarded & set(rule["resources"]) and writes & set(rule["verbs"])), (obj["metadata"]["name"], rule)


def test_apply_order_puts_the_policy_before_its_binding():
    kinds = [yaml.safe_load(p.read_text())["kind"] for p in sorted(ADMISSION.glob("*.yaml"))]
    assert kinds == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
