"""Run DMTF's Redfish Protocol Validator (PyPI: redfish-protocol-validator) against a lab BMC's Redfish service.

Usage: protocol_validator.py VALIDATOR [STATE_DIR] [REPORT_DIR]
  VALIDATOR   the rf_protocol_validator program (install it in a venv of its own, see docs/redfish-conformance.md)
  STATE_DIR   the BMC's state directory (default lab/.state/bmc; a private BMC: its NODEGUARD_BMC_STATE_DIR)
  REPORT_DIR  where the validator writes its TSV report (default: a new temporary directory)

The credentials go to the validator in a config file of mode 0600 in a temporary directory, never on its command
line. The validator verifies TLS against the lab CA. REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE are removed from its
environment: requests lets them override a session's own CA bundle, and every request would then fail TLS.
Prints the validator's summary line and the failed assertions; the exit status is the validator's.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(validator: str, state: Path, report_dir: Path | None) -> int:
    endpoint = next(iter(json.loads((state / "endpoints.json").read_text()).values()))["bmc"]
    credentials = json.loads((state / "credentials.json").read_text())
    report_dir = report_dir or Path(tempfile.mkdtemp(prefix="redfish-protocol-validator-"))
    with tempfile.TemporaryDirectory() as private:
        config = Path(private) / "config.ini"
        fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(
                f"[Authentication]\nuser = {credentials['username']}\npassword = {credentials['password']}\n\n"
                f"[Connection]\nrhost = {endpoint['address']}\nca-bundle = {endpoint['ca_cert']}\navoid-http-redirect = true\n"
            )
        env = {k: v for k, v in os.environ.items() if k not in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")}
        result = subprocess.run(
            [validator, "--config", str(config), "--report-dir", str(report_dir), "--report-type", "tsv"], env=env, capture_output=True, text=True, check=False
        )
    summary = [line for line in result.stdout.splitlines() if line.startswith("Summary")]
    print(summary[0] if summary else result.stdout[-2000:] + result.stderr[-2000:])
    for report in sorted(report_dir.glob("*.tsv"))[-1:]:
        print(f"report: {report}")
        with report.open() as f:
            for row in csv.DictReader(f, delimiter="\t"):
                if row["Result"] == "FAIL":
                    print(f"FAIL {row['Assertion']} {row['Method']} {row['Status code']} {row['URI']}: {row['Message']}")
    return result.returncode


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 4:
        sys.exit(__doc__)
    state_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else HERE.parent / ".state" / "bmc"
    sys.exit(main(sys.argv[1], state_dir, Path(sys.argv[3]) if len(sys.argv) > 3 else None))
