"""meta/runtime.yml action group k8s: one `module_defaults: group/nodeguard.failover.k8s:` sets the cluster connection.

The group's own members are exactly the modules that take the connection options (doc fragment
nodeguard.failover.k8s_auth), each documents its membership (attribute action_group), and a real
ansible-playbook run shows the group's defaults reaching every member, the kubernetes.core ones included.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
BIN = REPO / ".venv" / "bin"
GROUP = "nodeguard.failover.k8s"
PROBE_PLAYBOOK = Path(__file__).with_name("module_defaults_k8s_group.yml")
PROBE_KUBECONFIG = "/nonexistent/nodeguard-module-defaults-probe.kubeconfig"


def ansible_env(**extra: str) -> dict:
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0", PATH=f"{BIN}:{os.environ['PATH']}", **extra)
    for name in [n for n in env if n.startswith("K8S_AUTH_")]:
        del env[name]  # a fallback from the environment must not stand in for the group default
    return env


def k8s_group() -> list:
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    return runtime.get("action_groups", {}).get("k8s", [])


def module_docs() -> dict:
    """ansible-doc's view (doc fragments merged) of every module of the collection: {fqcn: doc}."""
    names = sorted(f"nodeguard.failover.{p.stem}" for p in (REPO / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
    done = subprocess.run([str(BIN / "ansible-doc"), "--json", "-t", "module", *names], cwd=REPO, env=ansible_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return {name: entry["doc"] for name, entry in json.loads(done.stdout).items()}


def test_the_group_holds_exactly_the_modules_that_take_the_connection_and_they_document_it() -> None:
    own_members = {f"nodeguard.failover.{m}" for m in k8s_group() if isinstance(m, str) and "." not in m}
    docs = module_docs()
    takes_connection = {name for name, doc in docs.items() if {"kubeconfig", "host", "api_key"} <= set(doc["options"])}
    documents_membership = {name: doc.get("attributes", {}).get("action_group") for name, doc in docs.items()}

    assert takes_connection, "no module takes the k8s connection options"
    assert own_members == takes_connection
    for name, attribute in documents_membership.items():
        if name in own_members:
            assert attribute is not None and attribute["support"] == "full" and attribute["membership"] == [GROUP], name
        else:
            assert attribute is None, f"{name} documents membership of a group it is not in"


def test_the_group_takes_in_the_kubernetes_core_group_with_the_same_option_names() -> None:
    metadata = [m["metadata"] for m in k8s_group() if isinstance(m, dict)]
    assert metadata == [{"extend_group": ["kubernetes.core.k8s"]}]


def test_module_defaults_for_the_group_reach_every_member() -> None:
    """The probe playbook gives kubeconfig only through module_defaults; every member must fail naming that path."""
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), str(PROBE_PLAYBOOK), "--check"], cwd=REPO, capture_output=True, text=True,
        timeout=300, check=False, env=ansible_env(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1"),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tasks = {t["task"]["name"]: t["hosts"]["localhost"] for t in json.loads(done.stdout)["plays"][0]["tasks"]}
    probes = {name: result for name, result in tasks.items() if name.startswith("Probe ")}
    probed = {name.split()[1] for name in probes}
    assert probed == {"nodeguard.failover.node_outage", "nodeguard.failover.node_recover", "nodeguard.failover.failover_history_info",
                      "nodeguard.failover.failover_lease_renewal_info", "kubernetes.core.k8s_info", "kubernetes.core.k8s_cluster_info"}
    for name, result in probes.items():
        assert result.get("failed") and PROBE_KUBECONFIG in result["msg"], (name, result.get("msg"))
