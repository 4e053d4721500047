"""Fixtures shared by the incident lab tests."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
LOCK_NAMESPACE = "nodeguard-system"


@pytest.fixture(scope="module")
def remediator(lab, tmp_path_factory):
    """Apply deploy/rbac and return connection vars that authenticate as the ServiceAccount."""
    lab.kubectl("apply", "-f", str(REPO / "deploy" / "rbac"))
    token = lab.kubectl("create", "token", "nodeguard-remediator", "-n", LOCK_NAMESPACE, "--duration=2h").stdout.strip()
    kubeconfig = yaml.safe_load(Path(lab.kubeconfig()).read_text())
    cluster = kubeconfig["clusters"][0]["cluster"]
    directory = tmp_path_factory.mktemp("remediator")
    ca = directory / "ca.crt"
    ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    # failover_kubeconfig "" wins over the inventory's k8s_kubeconfig (the lab's admin): the run authenticates by token only.
    return {"failover_kubeconfig": "", "failover_host": cluster["server"], "failover_api_key": token,
            "failover_ca_cert": str(ca), "_dir": directory}
