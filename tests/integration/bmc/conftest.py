"""Fixtures for the lab BMC tests: a private Redfish service and throwaway node containers.

These tests do not need the failover lab: they start their own BMC (own state directory,
own free port) and their own tiny containers, and always remove both, so they can run
before `make lab-up` and next to a running lab without touching it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from bmclib import Bmc, ensure_test_image, podman, running_machine, start_bmc


@pytest.fixture(scope="session")
def test_image() -> str:
    return ensure_test_image()


@pytest.fixture(scope="session")
def bmc(tmp_path_factory) -> Iterator[Bmc]:
    """One private BMC for the session, serving two systems named after test containers."""
    prefix = f"ng-bmctest-{os.getpid()}"
    bmc = start_bmc(tmp_path_factory.mktemp("bmc") / "state", [f"{prefix}-a", f"{prefix}-b"])
    try:
        yield bmc
    finally:
        bmc.sh("down", check=False)


@pytest.fixture
def node(bmc: Bmc, test_image: str) -> Iterator[str]:
    """A fresh running container for the BMC's first system, removed after the test."""
    with running_machine(bmc.nodes[0], test_image) as name:
        yield name


@pytest.fixture
def absent_node(bmc: Bmc) -> str:
    """The BMC's second system, whose container does not exist."""
    name = bmc.nodes[1]
    podman("rm", "--force", "--time", "0", name, check=False)
    return name
