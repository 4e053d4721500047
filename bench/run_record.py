"""How long the last `make bench` took: bench/run.sh writes raw/make-bench.json, the page prints it.

    .venv/bin/python bench/run_record.py --out docs/benchmarks/raw/make-bench.json --started 2026-11-23T11:32:09Z \
        --seconds 7500 --load-before "0.71 0.60 0.71" --failed 0 --quick false --commit 75c96f0
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timedelta
from pathlib import Path

import profiles


def record(started: str, seconds: int, load_before: str, failed: bool, quick: bool, commit: str,
           kubernetes_version: str | None = None, proof_order: str | None = None) -> dict:
    """One end-to-end run of bench/run.sh, from its start until the page is written, with the Kubernetes version its
    labs ran and node-outage's proof order (the model's, bench/profiles.py) in the code it measured."""
    begin = datetime.fromisoformat(started.replace("Z", "+00:00"))
    finished = (begin + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"started": started, "finished": finished, "seconds": seconds, "load_before": load_before,
            "every_part_finished": not failed, "quick": quick, "commit": commit,
            "kubernetes_version": kubernetes_version, "proof_order": proof_order}


def describe(run: dict | None) -> str:
    """The page's sentence about the last end-to-end run, or that none is recorded."""
    if not run:
        return "No end-to-end `make bench` run is recorded (bench/run.sh writes raw/make-bench.json)."
    hours, rest = divmod(run["seconds"], 3600)
    duration = f"{hours} h {rest // 60:02d} min" if hours else f"{rest // 60} min {rest % 60:02d} s"
    kind = "`bench/run.sh --quick`" if run["quick"] else "`make bench`"
    outcome = ("every part finished" if run["every_part_finished"]
               else "a part failed (see its log; the page counts the runs that finished)")
    return (f"The last end-to-end {kind} (commit {run['commit']}) took **{duration}**, from {run['started']} to "
            f"{run['finished']} (load average before it: {run['load_before']}); {outcome}.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--started", required=True, help="UTC, e.g. 2026-11-23T11:32:09Z")
    parser.add_argument("--seconds", type=int, required=True)
    parser.add_argument("--load-before", required=True)
    parser.add_argument("--failed", choices=["0", "1"], required=True)
    parser.add_argument("--quick", choices=["true", "false"], required=True)
    parser.add_argument("--commit", required=True)
    args = parser.parse_args()
    run = record(args.started, args.seconds, args.load_before, args.failed == "1", args.quick == "true", args.commit,
                 profiles.KUBERNETES_VERSION, profiles.CHECKOUT_PROOF_ORDER)
    args.out.write_text(json.dumps(run, indent=1) + "\n")
    print(describe(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
