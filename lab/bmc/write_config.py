"""Write the lab BMCs' configuration: sushy-tools config and auth file, ipmi_sim lan.conf per node,
and endpoints.json (per node, the host variables `bmc` and `bmc_ipmi` for the inventory).

Usage: write_config.py --state DIR --listen IP --redfish-port N [--ipmi-port N] [--event-ca FILE] NODE...
--ipmi-port is the first node's UDP port (next nodes: +1 each, in sorted order); 0 = no IPMI.
--event-ca: the CA file event receivers must chain to (default: DIR/event-ca.pem if it exists,
else the system trust store).

The test credentials are generated on first use (credentials.json) and kept until
`bmc.sh down` removes the state directory, so rerunning `bmc.sh up` changes nothing.
Every file written here is mode 0600: most hold the password.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import sys
from pathlib import Path

import bcrypt
from system_uuid import ipmi_guid_hex, system_uuid

HERE = Path(__file__).resolve().parent
USERNAME = "nodeguard-lab"  # IPMI allows at most 16 characters
# sushy-tools checks the bcrypt hash on every request; a low cost keeps the fence
# agents' status polling cheap. The file is a lab secret with mode 0600.
BCRYPT_ROUNDS = 6


def write_private(path: Path, text: str) -> None:
    """Write atomically, readable by the owner only."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def credentials(state: Path) -> dict[str, str]:
    path = state / "credentials.json"
    if path.exists():
        return json.loads(path.read_text())
    # 16 characters (96 random bits): the longest password IPMI 1.5 accepts, so both BMCs share it.
    creds = {"username": USERNAME, "password": secrets.token_urlsafe(12)}
    write_private(path, json.dumps(creds, indent=2) + "\n")
    return creds


def write_htpasswd(state: Path, creds: dict[str, str]) -> Path:
    path = state / "htpasswd"
    # Keep the existing hash when it still matches: a new salt would be a needless change.
    if path.exists():
        user, _colon, digest = path.read_text().strip().partition(":")
        if user == creds["username"] and bcrypt.checkpw(creds["password"].encode(), digest.encode()):
            return path
    digest = bcrypt.hashpw(creds["password"].encode(), bcrypt.gensalt(rounds=BCRYPT_ROUNDS))
    write_private(path, f"{creds['username']}:{digest.decode()}\n")
    return path


def sushy_config(state: Path, listen_ip: str, port: int, nodes: list[str], auth_file: Path,
                 event_ca: Path | None = None) -> str:
    systems = [
        {"uuid": str(system_uuid(node)), "name": node, "container": node,
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
        # No disks, but an empty collection rather than sushy-tools' 500 for a system it has no storage for.
        "SUSHY_EMULATOR_STORAGE": {system["uuid"]: [] for system in systems},
        # The EventService (redfish_events.py): subscriptions outside sushy-state (bmc.sh clears that
        # at each restart); event receivers verified against NODEGUARD_BMC_EVENT_CA when it was given
        # (a missing file then fails the delivery), else against event-ca.pem in the state directory
        # when it exists, else against the system trust store.
        "NODEGUARD_BMC_EVENT_SUBSCRIPTIONS": str(state / "event-subscriptions.json"),
        "NODEGUARD_BMC_EVENT_CA": str(event_ca or state / "event-ca.pem"),
        "NODEGUARD_BMC_EVENT_CA_REQUIRED": event_ca is not None,
        # Whose events the EventService imitates (redfish_events.PERSONALITIES): one word in this file, read at
        # each power change; missing = dmtf. Tests switch it without restarting the service.
        "NODEGUARD_BMC_EVENT_PERSONALITY_FILE": str(state / "event-personality"),
    }
    lines = ["# Written by lab/bmc/write_config.py; sushy-tools reads it as Python."]
    lines += [f"{key} = {value!r}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def ipmi_lan_conf(node: str, listen_ip: str, port: int, creds: dict[str, str]) -> str:
    control = shlex.join([sys.executable, str(HERE / "ipmi_chassis_control.py"), node])
    # MD5 for IPMI 1.5 sessions; IPMI 2.0 (lanplus) sessions use RAKP-HMAC-SHA1 (cipher suite 3).
    auths = "md5"
    return "\n".join([
        "# Written by lab/bmc/write_config.py: ipmi_lan(5) config of the lab BMC for " + node,
        f'name "{node}"',
        "set_working_mc 0x20",
        "  startlan 1",
        f"    addr {listen_ip} {port}",
        "    priv_limit admin",
        f"    allowed_auths_callback {auths}",
        f"    allowed_auths_user {auths}",
        f"    allowed_auths_operator {auths}",
        f"    allowed_auths_admin {auths}",
        f"    guid {ipmi_guid_hex(node)}",  # the node's systemUUID, in SMBIOS byte order
        "  endlan",
        f'  chassis_control "{control}"',
        f'  user 2 true "{creds["username"]}" "{creds["password"]}" admin 10 md5',
        "",
    ])


def endpoints(state: Path, args: argparse.Namespace, creds: dict[str, str]) -> str:
    per_node = {}
    for index, node in enumerate(args.nodes):
        entry = {"bmc": {
            "type": "redfish",
            "address": f"https://{args.listen}:{args.redfish_port}",
            "system_id": node,
            "username": creds["username"],
            "password": creds["password"],
            "ca_cert": str(state / "ca.crt"),
        }}
        if args.ipmi_port:
            entry["bmc_ipmi"] = {
                "type": "ipmi",
                "address": args.listen,
                "port": args.ipmi_port + index,
                "username": creds["username"],
                "password": creds["password"],
                "interface": "lanplus",
                "cipher": 3,
            }
        per_node[node] = entry
    return json.dumps(per_node, indent=2, sort_keys=True) + "\n"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Write the lab BMCs' configuration.")
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--listen", required=True)
    parser.add_argument("--redfish-port", type=int, required=True)
    parser.add_argument("--ipmi-port", type=int, default=0)
    parser.add_argument("--event-ca", type=Path, help="CA file the event receivers' certificates must chain to")
    parser.add_argument("nodes", nargs="+")
    args = parser.parse_args(argv)
    args.state = args.state.resolve()
    args.event_ca = args.event_ca.resolve() if args.event_ca else None
    args.nodes = sorted(set(args.nodes))
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    state = args.state
    creds = credentials(state)
    auth_file = write_htpasswd(state, creds)
    config = sushy_config(state, args.listen, args.redfish_port, args.nodes, auth_file, args.event_ca)
    write_private(state / "sushy.conf", config)
    if args.ipmi_port:
        for index, node in enumerate(args.nodes):
            write_private(state / "ipmi" / node / "lan.conf",
                          ipmi_lan_conf(node, args.listen, args.ipmi_port + index, creds))
    write_private(state / "endpoints.json", endpoints(state, args, creds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
