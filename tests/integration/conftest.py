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

import fcntl
from collections.abc import Iterator

import lablib
import pytest

CONTROL_PLANE_HEALTHY_TIMEOUT = 180


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
