"""deploy/rulebook/: ansible-rulebook in the cluster without an EDA controller (node-watch, power-events).

What the manifests must say so that they match the code: the rulebook installed in the decision environment, the
image the DE definition tags, the remediation ServiceAccount (the admission policy admits its taint), the node
watch's grants (exactly what deploy/rbac lacks for node_watch.py), secrets only from Secrets (the BMC HMAC key under
its own Secret key, in the variable the power-events filter reads), a hardened pod, and a liveness signal that
fails when a watch stops making progress. The lab tests (tests/integration/eda/test_rulebook_manifests_lab.py,
tests/integration/ee/test_decision_environment_deployments.py) prove them against an apiserver.
"""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_deploy_manifests import RBAC, grants, objects, service_account

REPO = Path(__file__).resolve().parents[3]
RULEBOOK_DEPLOY = REPO / "deploy" / "rulebook"
RULEBOOKS = REPO / "extensions" / "eda" / "rulebooks"
NODE_WATCH = runpy.run_path(str(REPO / "extensions" / "eda" / "plugins" / "event_source" / "node_watch.py"))
SECRET_NAMES = re.compile(r"TOKEN|KEY|PASSWORD|SECRET", re.IGNORECASE)
WRITES = {"create", "update", "patch", "delete", "deletecollection", "*"}


def deployment(name: str) -> dict:
    (found,) = [o for (kind, _n), o in objects(RULEBOOK_DEPLOY / name).items() if kind == "Deployment"]
    return found


def container(name: str) -> dict:
    (found,) = deployment(name)["spec"]["template"]["spec"]["containers"]
    return found


def env(name: str) -> dict:
    return {e["name"]: e for e in container(name).get("env", [])}


def arg_after(name: str, flag: str) -> str:
    args = container(name)["args"]
    return args[args.index(flag) + 1]


def mounted_volume(name: str, path: str) -> dict:
    """The volume mounted at the directory that holds ``path``."""
    spec = deployment(name)["spec"]["template"]["spec"]
    (mount,) = [m for m in container(name)["volumeMounts"] if os.path.dirname(path) == m["mountPath"]]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    return volume


RUNS = [("node-watch", "nodeguard.failover.node-watch"), ("power-events", "nodeguard.failover.power-events")]


@pytest.mark.parametrize(("name", "rulebook"), RUNS)
def test_runs_the_installed_rulebook_in_the_decision_environment(name: str, rulebook: str) -> None:
    definition = yaml.safe_load((REPO / "deploy" / "ee" / "decision-environment.yml").read_text())
    assert container(name)["image"] in definition["options"]["tags"]
    assert container(name)["args"][:3] == ["ansible-rulebook", "-r", rulebook]
    assert (RULEBOOKS / f"{rulebook.rsplit('.', 1)[1]}.yml").is_file()


@pytest.mark.parametrize(("name", "rulebook"), RUNS)
def test_one_pod_as_the_remediation_service_account(name: str, rulebook: str) -> None:
    spec = deployment(name)["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    account = service_account()["metadata"]
    assert deployment(name)["metadata"]["namespace"] == account["namespace"]
    assert spec["template"]["spec"]["serviceAccountName"] == account["name"]


@pytest.mark.parametrize(("name", "rulebook"), RUNS)
def test_a_hardened_pod(name: str, rulebook: str) -> None:
    pod = deployment(name)["spec"]["template"]["spec"]["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["seccompProfile"] == {"type": "RuntimeDefault"}
    own = container(name)["securityContext"]
    assert own == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    assert "memory" in container(name)["resources"]["limits"]


@pytest.mark.parametrize(("name", "rulebook"), RUNS)
def test_vars_from_a_config_map_and_the_inventory_from_a_secret(name: str, rulebook: str) -> None:
    assert "configMap" in mounted_volume(name, arg_after(name, "-e"))
    assert mounted_volume(name, arg_after(name, "-i"))["secret"]["secretName"] == "nodeguard-rulebook-inventory"


@pytest.mark.parametrize(("name", "rulebook"), RUNS)
def test_no_secret_in_the_manifest(name: str, rulebook: str) -> None:
    for variable, entry in env(name).items():
        if SECRET_NAMES.search(variable):
            assert "value" not in entry and "secretKeyRef" in entry["valueFrom"], variable
    assert not [o for (kind, _n), o in objects(RULEBOOK_DEPLOY / name).items() if kind == "Secret"]


# --- node-watch: RBAC and liveness ---------------------------------------------------------------


def test_node_watch_grants_only_what_deploy_rbac_lacks_for_the_watch() -> None:
    """node_watch.py lists and watches Nodes and the Leases of kube-node-lease; deploy/rbac has no watch."""
    directory = RULEBOOK_DEPLOY / "node-watch"
    assert grants(directory, "", "nodes") == {"watch"}
    assert grants(directory, "coordination.k8s.io", "leases") == {"list", "watch"}
    assert grants(RBAC, "", "nodes") | grants(directory, "", "nodes") >= {"get", "list", "watch"}
    (lease_role,) = [o for (kind, _n), o in objects(directory).items() if kind == "Role"]
    assert lease_role["metadata"]["namespace"] == NODE_WATCH["LEASE_NAMESPACE"]
    account = service_account()["metadata"]
    for (kind, _n), obj in objects(directory).items():
        if kind in ("ClusterRole", "Role"):
            assert not any(WRITES & set(rule["verbs"]) for rule in obj["rules"]), obj["metadata"]["name"]
        if kind.endswith("Binding"):
            assert obj["subjects"] == [{"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}]


def probe(directory: Path) -> int:
    """The node watch's liveness command, run here against ``directory`` instead of its mount."""
    command = container("node-watch")["livenessProbe"]["exec"]["command"]
    mount = env("node-watch")[NODE_WATCH["LIVENESS_ENV"]]["value"]
    code = command[2].replace(f'"{mount}/"', repr(f"{directory}/"))
    assert code != command[2], "the probe does not read the liveness directory"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, check=False).returncode


def test_node_watch_liveness_fails_when_either_watch_stops_making_progress(tmp_path) -> None:
    assert probe(tmp_path) != 0  # nothing listed yet
    for kind in ("nodes", "leases"):
        NODE_WATCH["liveness"](str(tmp_path), kind)()
    assert probe(tmp_path) == 0
    stale = time.time() - 901
    os.utime(tmp_path / "leases", (stale, stale))
    assert probe(tmp_path) != 0


def test_node_watch_liveness_directory_is_a_writable_mount_and_outlasts_watch_requests() -> None:
    mount = env("node-watch")[NODE_WATCH["LIVENESS_ENV"]]["value"]
    (volume_mount,) = [m for m in container("node-watch")["volumeMounts"] if m["mountPath"] == mount]
    assert not volume_mount.get("readOnly")
    assert "emptyDir" in mounted_volume("node-watch", f"{mount}/nodes")
    stale_after = int(re.search(r"> (\d+) for k in", container("node-watch")["livenessProbe"]["exec"]["command"][2]).group(1))
    assert stale_after >= 3 * NODE_WATCH["ARGS_SCHEMA"]["properties"]["watch_timeout"]["default"]
    assert container("node-watch")["startupProbe"]["exec"] == container("node-watch")["livenessProbe"]["exec"]


# --- power-events: the key, the listener ---------------------------------------------------------


def power_filter() -> dict:
    (rules,) = yaml.safe_load((RULEBOOKS / "power-events.yml").read_text())
    ((source,),) = [s["filters"] for s in rules["sources"] if "filters" in s]
    return source["nodeguard.failover.redfish_power_events"]


def test_the_bmc_hmac_key_has_its_own_secret_key_in_the_variable_the_filter_reads() -> None:
    variables = env("power-events")
    own = {"name": "nodeguard-power-events-key", "key": "bmc-hmac-key"}
    carrying = {name for name, e in variables.items() if e.get("valueFrom", {}).get("secretKeyRef") == own}
    # exactly the variable the filter reads: a copy in NODEGUARD_EDA_TOKEN (Alertmanager's token) makes it refuse every event
    assert carrying == {power_filter()["token_env"]} == {"NODEGUARD_BMC_TOKEN_KEY"}
    assert "NODEGUARD_EDA_TOKEN" not in variables


def test_the_filter_reads_the_mapping_from_the_vars_file() -> None:
    variables = env("power-events")
    assert variables[power_filter()["vars_file_env"]]["value"] == arg_after("power-events", "-e")
    assert power_filter()["vars_file_env"] in container("power-events")["args"]


def test_the_listener_is_probed_and_served_on_the_shipped_port() -> None:
    shipped = yaml.safe_load((REPO / "extensions" / "eda" / "vars" / "power-events.yml").read_text())
    (port,) = container("power-events")["ports"]
    assert port["containerPort"] == shipped["nodeguard_eda_listen_port"]
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container("power-events")[kind]["tcpSocket"] == {"port": port["name"]}
    (service,) = [o for (kind, _n), o in objects(RULEBOOK_DEPLOY / "power-events").items() if kind == "Service"]
    assert service["spec"]["selector"] == deployment("power-events")["spec"]["selector"]["matchLabels"]
    assert [p["targetPort"] for p in service["spec"]["ports"]] == [port["name"]]


def test_the_tls_files_come_from_a_tls_secret() -> None:
    assert mounted_volume("power-events", "/etc/nodeguard/eda/tls/tls.crt")["secret"]["secretName"] == "nodeguard-power-events-tls"
