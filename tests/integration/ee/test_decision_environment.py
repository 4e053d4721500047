"""The power-event rulebook in the decision environment (deploy/ee/decision-environment.yml, `make ee`).

ansible-rulebook runs in localhost/nodeguard-de:latest with the rulebook and the filter of the collection
installed in the image (`-r nodeguard.failover.power-events`), nothing from the host's virtualenv. A BMC posts a
vendor-shaped power-off Event with its own token to its own path: the rulebook must start its node-outage action
(a recorder playbook here, as tests/integration/eda does) for that node with the event's time; a test event must run
nothing. Only loopback is used (the image shares the host's network: in `make test-ee`, the private lab's).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "eda"))
from rulebook_process import REPO, RulebookProcess
from test_power_events_rulebook import own_token, redfish_event, system

IMAGE = "localhost/nodeguard-de:latest"
RECORDER = REPO / "tests" / "integration" / "eda" / "playbooks" / "record-power-outage.yml"
NODE = "ng-de-worker"
RUN_TIMEOUT = 300


@pytest.fixture(scope="module")
def rulebook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RulebookProcess]:
    exists = subprocess.run(["podman", "image", "exists", IMAGE], check=False)
    assert exists.returncode == 0, f"{IMAGE} is not built: run `make test-ee` (scripts/build-ee.sh)"
    workdir = tmp_path_factory.mktemp("de")
    (workdir / "records").mkdir()
    process = RulebookProcess(
        workdir,
        overrides={
            "nodeguard_outage_playbook": str(RECORDER),
            "nodeguard_allow_nodes": [NODE],
            "nodeguard_power_event_bmcs": [{"node": NODE, "system": system(NODE)}],
        },
        env={"NODEGUARD_EDA_RECORD_DIR": str(workdir / "records")},
        rulebook="nodeguard.failover.power-events",
        default_vars=REPO / "extensions" / "eda" / "vars" / "power-events.yml",
        container_image=IMAGE,
        mounts=(RECORDER.parent,),
    )
    yield process
    process.stop()


def runs(rulebook: RulebookProcess) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((rulebook.workdir / "records").glob(f"outage-{NODE}-*"))]


def test_the_decision_environment_runs_the_power_event_rulebook(rulebook: RulebookProcess) -> None:
    path, own = f"redfish-events/{NODE}", {"X-Nodeguard-Token": own_token(rulebook, NODE)}
    test_event = redfish_event(NODE, "2026-11-23T07:59:00Z", MessageId="ResourceEvent.1.3.0.ResourcePoweredOff")
    test_event["Name"] = "Test Event"
    assert rulebook.post(test_event, path=path, headers=own) == 200
    assert rulebook.post(redfish_event(NODE, "2026-11-23T08:00:00.250Z"), path=path, headers=own) == 200
    deadline = time.monotonic() + RUN_TIMEOUT
    while not runs(rulebook):
        assert time.monotonic() < deadline, f"no node-outage run from the decision environment:\n{rulebook.log()[-6000:]}"
        assert rulebook.process.poll() is None, f"ansible-rulebook in {IMAGE} exited:\n{rulebook.log()[-6000:]}"
        time.sleep(0.5)
    (run,) = runs(rulebook)
    assert run["outage_nodes"] == [NODE]
    assert run["power_event_time"] == "2026-11-23T08:00:00.25Z"
    assert "nodeguard REFUSED" in rulebook.log(), "the test event was not refused"
    assert rulebook.token not in rulebook.log()
