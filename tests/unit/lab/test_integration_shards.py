"""Every directory of lab tests runs somewhere: in one of scripts/integration.sh's two shards (make test), or, for the
execution-environment tests, in make test-ee. A new directory left out of both would never run."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
# Run by `make test-ee` (they build the EE and DE images first), not by the integration shards.
ELSEWHERE = {"ee"}


def shards() -> list[set[str]]:
    text = (REPO / "scripts" / "integration.sh").read_text()
    block = re.search(r"^SHARDS=\((.*?)\)$", text, re.S | re.M).group(1)
    return [{path.removeprefix("tests/integration/") for path in shard.split()} for shard in re.findall(r'"([^"]*)"', block)]


def test_every_lab_test_directory_runs_in_exactly_one_shard_or_in_make_test_ee():
    directories = {path.name for path in (REPO / "tests" / "integration").iterdir() if path.is_dir() and any(path.glob("test_*.py"))}
    first, second = shards()
    assert first.isdisjoint(second)
    assert directories - ELSEWHERE == first | second
    assert "-k 'test_execution_environment or test_decision_environment'" in (REPO / "Makefile").read_text()
