"""A real ansible-rulebook process running extensions/eda/rulebooks/node-failover.yml (or another shipped
rulebook, e.g. power-events.yml), and a client that posts webhook payloads to it over TLS with the bearer
token, as Alertmanager (or a BMC's Redfish event subscription) does."""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import json
import os
import secrets
import socket
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

REPO = Path(__file__).resolve().parents[3]
RULEBOOK = REPO / "extensions" / "eda" / "rulebooks" / "node-failover.yml"
DEFAULT_VARS = REPO / "extensions" / "eda" / "vars" / "node-failover.yml"
VENV_BIN = REPO / ".venv" / "bin"
STARTUP_TIMEOUT = 300  # the JVM and the Drools session start slowly on a busy machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_tls(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (also its own CA) and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nodeguard-eda-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    key_path.chmod(0o600)
    return cert_path, key_path


def alert(node: str, status: str = "firing", starts_at: str = "2026-11-22T03:00:00Z", alertname: str = "NodeguardNodeDown") -> dict:
    """One alert as Alertmanager's webhook (version 4) sends it."""
    labels = {"alertname": alertname, "node": node, "severity": "critical"}
    return {
        "status": status,
        "labels": labels,
        "annotations": {"summary": f"Node {node} is NotReady or unreachable"},
        "startsAt": starts_at,
        "endsAt": "0001-01-01T00:00:00Z" if status == "firing" else "2026-11-22T03:30:00Z",
        "generatorURL": "http://prometheus.invalid/graph",
        "fingerprint": hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16],
    }


def webhook_payload(alerts: list[dict]) -> dict:
    """The Alertmanager webhook body around a list of alerts."""
    firing = any(a["status"] == "firing" for a in alerts)
    return {
        "version": "4",
        "groupKey": '{}:{alertname="NodeguardNodeDown"}',
        "truncatedAlerts": 0,
        "status": "firing" if firing else "resolved",
        "receiver": "nodeguard-eda",
        "groupLabels": {"alertname": "NodeguardNodeDown"},
        "commonLabels": {"alertname": "NodeguardNodeDown"},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager.invalid",
        "alerts": alerts,
    }


class RulebookProcess:
    """Starts ansible-rulebook on 127.0.0.1 with the shipped rulebook and vars, plus overrides."""

    def __init__(self, workdir: Path, overrides: dict, inventory: Path | None = None, env: dict | None = None,
                 rulebook: Path | str = RULEBOOK, default_vars: Path = DEFAULT_VARS, ready_line: str | None = None,
                 container_image: str | None = None, mounts: tuple[Path, ...] = ()):
        """``ready_line``: for a rulebook without a webhook, wait for this line in the log instead of the port.
        ``container_image``: run ansible-rulebook in that decision environment instead of the virtualenv (podman, the
        host's network, ``workdir`` and ``mounts`` mounted at their own paths, only the NODEGUARD_* variables passed);
        ``rulebook`` is then usually the FQCN of the rulebook installed in the image."""
        self.workdir = workdir
        self.port = free_port()
        self.token = secrets.token_urlsafe(24)
        self.bmc_key = secrets.token_urlsafe(24)  # the key of the BMCs' tokens: a secret of its own, never self.token
        self.cert, key = make_tls(workdir)
        variables = yaml.safe_load(default_vars.read_text())
        variables.update(
            nodeguard_eda_listen_host="127.0.0.1",
            nodeguard_eda_listen_port=self.port,
            nodeguard_eda_tls_cert=str(self.cert),
            nodeguard_eda_tls_key=str(key),
        )
        variables.update(overrides)
        vars_file = workdir / "vars.yml"
        vars_file.write_text(yaml.safe_dump(variables))
        if inventory is None:
            inventory = workdir / "inventory.yml"
            inventory.write_text("all:\n  hosts: {}\n")
        self.log_path = workdir / "ansible-rulebook.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 - open for the life of the process
        process_env = dict(os.environ)
        process_env.update(
            NODEGUARD_EDA_TOKEN=self.token,
            NODEGUARD_BMC_TOKEN_KEY=self.bmc_key,  # the redfish_power_events filter makes the BMCs' tokens with it
            NODEGUARD_POWER_EVENT_VARS=str(vars_file),  # the redfish_power_events filter reads its mapping there
            ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
            PATH=f"{VENV_BIN}:{process_env.get('PATH', '')}",
            PYTHONUNBUFFERED="1",
        )
        process_env.update(env or {})
        self.container = None
        prefix = [str(VENV_BIN / "ansible-rulebook")]
        if container_image is not None:
            self.container = f"nodeguard-de-test-{self.port}"
            volumes = [f"--volume={path}:{path}:ro" for path in mounts]
            variables = [f"--env={name}" for name in process_env if name.startswith("NODEGUARD_")]
            # as the owner of the workdir's 0600 files (the image's entrypoint gives any uid a passwd entry)
            prefix = ["podman", "run", "--rm", f"--name={self.container}", f"--user={os.getuid()}:{os.getgid()}", "--network=host",
                      f"--volume={workdir}:{workdir}",
                      *volumes, *variables, f"--workdir={workdir}", container_image, "ansible-rulebook"]
        self.process = subprocess.Popen(
            [
                *prefix,
                "-r",
                str(rulebook),
                "-e",
                str(vars_file),
                "-E",
                "NODEGUARD_EDA_TOKEN",
                "-i",
                str(inventory),
                "--print-events",
                "-v",  # the log explains a failed test
            ],
            cwd=workdir,
            env=process_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self._tls = ssl.create_default_context(cafile=str(self.cert))
        self._wait_listening(ready_line)

    def _wait_listening(self, ready_line: str | None = None) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ansible-rulebook exited with {self.process.returncode}:\n{self.log()}")
            if ready_line is not None:
                if ready_line in self.log():
                    return
                time.sleep(0.5)
                continue
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"ansible-rulebook did not listen on {self.port} in {STARTUP_TIMEOUT}s:\n{self.log()}")

    def post(self, payload: dict, token: str | None = None, path: str = "alerts", headers: dict | None = None) -> int:
        """POST like Alertmanager does (a bearer token), or with ``headers`` instead (a BMC's own token); returns the
        HTTP status."""
        request = urllib.request.Request(
            f"https://127.0.0.1:{self.port}/{path}",
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json", **(headers or {"Authorization": f"Bearer {token or self.token}"})},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, context=self._tls, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.container is not None:
            subprocess.run(["podman", "rm", "--force", "--time", "0", self.container], capture_output=True, check=False)
        self._log.close()
