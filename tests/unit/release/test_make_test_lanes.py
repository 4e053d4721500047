"""scripts/test-parts.sh, the runner of `make test`: the parts in TEST_BESIDE run beside the others, each
one's output is printed whole, every part runs when one fails, one summary line per part, exit 1 on a failure.

The parts are stubs (a Makefile in tmp_path): the real ones are the lead's CI rehearsal.
"""

import os
import re
import shutil
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(REPO, "scripts", "test-parts.sh")

# test-integration and test-sanity each wait for the other to have started: they pass only side by side.
STUB = """
meet = for i in $$(seq 100); do [ -e {tmp}/$(1) ] && exit $(2); sleep 0.1; done; echo "never saw $(1)"; exit 9
test-integration:
\t@touch {tmp}/integration; echo "integration line 1"; echo "FAILED tests/integration/x.py::test_x"
\t@$(call meet,sanity,4)
test-sanity:
\t@touch {tmp}/sanity; echo "sanity line 1"
\t@$(call meet,integration,0)
test-molecule:
\t@echo "molecule line 1"; echo "retrying (an until loop, not a failure): Wait for instance(s)"; exit 2
test-unit:
\t@echo "unit line 1"
images:
\t@echo "images (stub)"
"""


def _run(tmp_path, parts, beside, prepare=""):
    stub = tmp_path / "stub.mk"
    stub.write_text(STUB.format(tmp=tmp_path))
    env = dict(os.environ, TEST_BESIDE=beside, TEST_PREPARE=prepare, TEST_MAKE=f"make -f {stub}")
    return subprocess.run([SCRIPT, *parts], capture_output=True, text=True, env=env, timeout=60, check=False)


@pytest.mark.skipif(not shutil.which("make") or not shutil.which("setsid"), reason="needs make and setsid")
def test_beside_parts_run_at_the_same_time_and_print_whole(tmp_path):
    result = _run(tmp_path, ["test-unit", "test-sanity", "test-molecule", "test-integration"],
                  beside="test-sanity test-molecule", prepare="images")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    # One summary line per part, in TEST_PARTS order, with its time.
    summary = out[out.index("=== make test summary"):].splitlines()[1:]
    assert [line.split()[:2] for line in summary] == [
        ["test-unit", "ok"], ["test-sanity", "ok"], ["test-molecule", "FAILED"], ["test-integration", "FAILED"]]
    assert all(re.search(r"\d+s$", line) for line in summary)
    # TEST_PREPARE ran before the foreground parts.
    assert out.index("images (stub)") < out.index("=== make test-unit\n")
    # A beside part's output is one block between its header and its end line.
    for part, lines in (("test-sanity", ["sanity line 1"]),
                        ("test-molecule", ["molecule line 1", "retrying (an until loop, not a failure): Wait for instance(s)"])):
        block = out[out.index(f"=== make {part} (ran beside"):out.index(f"=== make {part}: ")].splitlines()[1:]
        assert [line for line in block if not line.startswith("make")] == lines
    assert "=== make test-molecule: failed after" in out
    # The only line starting with FAILED is the stub's own failure, not the runner's.
    assert [line for line in out.splitlines() if line.startswith("FAILED")] == ["FAILED tests/integration/x.py::test_x"]


@pytest.mark.skipif(not shutil.which("make") or not shutil.which("setsid"), reason="needs make and setsid")
def test_without_beside_parts_every_part_runs_in_turn(tmp_path):
    result = _run(tmp_path, ["test-molecule", "test-unit"], beside="")
    assert result.returncode == 1
    assert "ran beside" not in result.stdout
    assert result.stdout.index("=== make test-molecule\n") < result.stdout.index("=== make test-unit\n")
    assert re.search(r"^  test-unit +ok +\d+s$", result.stdout, re.M)
