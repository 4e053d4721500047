"""Write the lab BMC's sushy-tools config, HTTP basic auth file and endpoints.json.

Usage: write_config.py STATE_DIR LISTEN_IP PORT NODE...

The test credentials are generated on first use (credentials.json, mode 0600) and kept
until `bmc.sh down` removes the state directory, so rerunning `bmc.sh up` changes nothing.
Every file holding a secret is written with mode 0600.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import uuid
from pathlib import Path

import bcrypt

USERNAME = "nodeguard-lab"
# sushy-tools checks the bcrypt hash on every request; a low cost keeps the fence
# agents' status polling cheap. The file is a lab secret with mode 0600.
BCRYPT_ROUNDS = 6
UUID_NAMESPACE = uuid.UUID("4f0c2d9e-6a53-4b8e-9d61-2b7d1f0e8a11")


def write_private(path: Path, text: str) -> None:
    """Write atomically, readable by the owner only."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def credentials(state: Path) -> dict[str, str]:
    path = state / "credentials.json"
    if path.exists():
        return json.loads(path.read_text())
    creds = {"username": USERNAME, "password": secrets.token_urlsafe(18)}
    write_private(path, json.dumps(creds, indent=2) + "\n")
    return creds


def write_htpasswd(state: Path, creds: dict[str, str]) -> Path:
    path = state / "htpasswd"
    # Keep the existing hash when it still matches: a new salt would be a needless change.
    if path.exists():
        user, _, digest = path.read_text().strip().partition(":")
        if user == creds["username"] and bcrypt.checkpw(creds["password"].encode(), digest.encode()):
            return path
    digest = bcrypt.hashpw(creds["password"].encode(), bcrypt.gensalt(rounds=BCRYPT_ROUNDS))
    write_private(path, f"{creds['username']}:{digest.decode()}\n")
    return path


def system_uuid(node: str) -> str:
    # Stable across restarts, so clients that cached a UUID keep working.
    return str(uuid.uuid5(UUID_NAMESPACE, node))


def sushy_config(state: Path, listen_ip: str, port: int, nodes: list[str], auth_file: Path) -> str:
    systems = [
        {"uuid": system_uuid(node), "name": node, "container": node,
         "power_state": "Off", "external_notifier": False, "nics": []}
        for node in nodes
    ]
    settings = {
        "SUSHY_EMULATOR_LISTEN_IP": listen_ip,
        "SUSHY_EMULATOR_LISTEN_PORT": port,
        "SUSHY_EMULATOR_SSL_CERT": str(state / "server.crt"),
        "SUSHY_EMULATOR_SSL_KEY": str(state / "server.key"),
        "SUSHY_EMULATOR_AUTH_FILE": str(auth_file),
        "SUSHY_EMULATOR_STATE_DIR": str(state / "sushy-state"),
        "SUSHY_EMULATOR_FAKE_DRIVER": True,
        "SUSHY_EMULATOR_FAKE_SYSTEMS": systems,
    }
    lines = ["# Written by lab/bmc/redfish/write_config.py; sushy-tools reads it as Python."]
    lines += [f"{key} = {value!r}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def endpoints(state: Path, listen_ip: str, port: int, nodes: list[str], creds: dict[str, str]) -> str:
    per_node = {
        node: {
            "type": "redfish",
            "address": f"https://{listen_ip}:{port}",
            "system_id": node,
            "username": creds["username"],
            "password": creds["password"],
            "ca_cert": str(state / "ca.crt"),
        }
        for node in nodes
    }
    return json.dumps(per_node, indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        sys.exit(__doc__)
    state, listen_ip, port, nodes = Path(argv[0]).resolve(), argv[1], int(argv[2]), sorted(set(argv[3:]))
    creds = credentials(state)
    auth_file = write_htpasswd(state, creds)
    write_private(state / "sushy.conf", sushy_config(state, listen_ip, port, nodes, auth_file))
    write_private(state / "endpoints.json", endpoints(state, listen_ip, port, nodes, creds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
