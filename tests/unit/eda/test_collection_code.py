"""extensions/eda/plugins/collection_code.py: the one way the three EDA sources reach the collection's code. Each
source, run by path as ansible-rulebook runs it, imports the module_utils of the collection it is installed in, and
says what is missing when it is run from outside a collections path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SOURCES = {"bmc_power_poll": "readers", "node_watch": "safety", "redfish_sse": "redfish"}


def run(script: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing on sys.path but what the source adds
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("source", SOURCES)
def test_installed_in_a_collections_path_the_source_imports_that_collections_code(source: str, tmp_path: Path) -> None:
    link = tmp_path / "ansible_collections" / "nodeguard" / "failover"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO)
    installed = link / "extensions" / "eda" / "plugins" / "event_source" / f"{source}.py"
    done = run(f"import runpy\nns = runpy.run_path({str(installed)!r})\nprint(ns['_import_collection']()[{SOURCES[source]!r}].__file__)\n", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(str(link / "plugins" / "module_utils") + os.sep)


@pytest.mark.parametrize("source", SOURCES)
def test_run_by_path_outside_a_collections_path_the_source_says_what_is_missing(source: str, tmp_path: Path) -> None:
    path = REPO / "extensions" / "eda" / "plugins" / "event_source" / f"{source}.py"
    done = run(f"import runpy\nns = runpy.run_path({str(path)!r})\nns['_import_collection']()\n", tmp_path)
    assert done.returncode != 0
    assert f"nodeguard.failover.{source} needs the collection nodeguard.failover installed in a collections path" in done.stderr
