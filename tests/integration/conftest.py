"""Fixtures for the integration tests that run on the failover lab (docs/lab.md).

- `lab` (session): makes sure the lab is up (runs `lab/scripts/lab.sh up` when the API does not
  answer) and returns the `lablib` module, so tests write `lab.power_off("ng-worker1")`.
  While the session uses the lab it holds a shared lock on lab/.state/.lab.users:
  `lab.sh down` waits for it instead of pulling the lab away in the middle of a test.
- marker `changes_control_plane`: the test edits static pod manifests in ng-cp1; every manifest is
  put back as it was afterwards, and the test ends only when every component is healthy again.
- marker `resets_lab`: after the test, `lablib.reset_lab()` powers nodes on, removes test taints
  and annotations, and waits for nodes and workloads to be Ready.

Tests that need no lab (tests/integration/bmc) do not ask for `lab` and never start it.
"""

from __future__ import annotations

import base64
import fcntl
from collections.abc import Iterator
from pathlib import Path

import lablib
import pytest
import yaml

CONTROL_PLANE_HEALTHY_TIMEOUT = 180
REPO = Path(__file__).resolve().parents[2]
LOCK_NAMESPACE = "nodeguard-system"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "changes_control_plane: the test edits ng-cp1's static pod manifests; "
                                       "they are restored and the components healthy again after it")
    config.addinivalue_line("markers", "resets_lab: lablib.reset_lab() runs after the test")


@pytest.fixture(scope="session")
def lab():
    if not lablib.lab_is_up():
        lablib.lab_up()
    lablib.wait_for(lablib.lab_is_up, timeout=60, what="the lab's kube-apiserver /readyz")
    with open(lablib.STATE / ".lab.users", "a") as users:
        fcntl.flock(users, fcntl.LOCK_SH)
        yield lablib


@pytest.fixture(autouse=True)
def _restore_control_plane(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("changes_control_plane") is None:
        yield
        return
    request.getfixturevalue("lab")
    saved = {component: lablib.read_manifest(component) for component in lablib.HEALTH_URLS}
    yield
    for component, text in saved.items():
        current = lablib.cp_exec("cat", lablib.manifest_path(component), check=False).stdout
        if current != text:
            lablib.write_manifest(component, text)
    for component in saved:
        lablib.wait_for(lambda component=component: lablib.component_healthy(component),
                        timeout=CONTROL_PLANE_HEALTHY_TIMEOUT, what=f"{component} healthy after the restore")
    lablib.wait_for(lablib.lab_is_up, timeout=CONTROL_PLANE_HEALTHY_TIMEOUT, what="the API after the restore")


@pytest.fixture(autouse=True)
def _reset_lab_after(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("resets_lab") is None:
        yield
        return
    request.getfixturevalue("lab")
    yield
    lablib.reset_lab()


@pytest.fixture(scope="module")
def remediator(lab, tmp_path_factory):
    """Apply deploy/rbac and return connection vars that authenticate as the ServiceAccount (incident and ee tests)."""
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
