"""The Deployments of deploy/rulebook run under podman against the lab, as their pods would run.

`make test-ee` builds the decision environment (localhost/nodeguard-de:latest) and loads it into the private lab.
Each container is built from its manifest, not written again here: its image, arguments and environment (a Secret's
key where the manifest says so), each volume mounted at its path (the ConfigMap's vars, the Secrets' files, the
emptyDirs), its security context (user, fsGroup, read-only root, no capabilities, no privilege escalation), and what
the kubelet adds to a pod: the ServiceAccount's token, CA and namespace at /var/run/secrets/kubernetes.io/serviceaccount
and KUBERNETES_SERVICE_HOST/PORT, here the lab's apiserver. The allow-lists are empty: no node is ever acted on.

- node-watch: the source lists and watches as the remediation ServiceAccount with the node watch's RBAC, and the
  manifest's liveness probe, run in the container, passes.
- power-events: the listener (the probes' port) takes a BMC's Event signed with the key from the Secret and refuses
  one signed with another key; the key never reaches the log.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "eda"))
from rulebook_process import make_tls
from test_power_events_rulebook import own_token, redfish_event, system

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy" / "rulebook"
VARS = REPO / "extensions" / "eda" / "vars"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
STARTUP_TIMEOUT = 300  # the JVM and the rule engine start slowly on a busy machine
NODE = "ng-de-worker"  # mapped for power events, never in an allow-list


def manifest(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name / "20-deployment.yaml").read_text())


def pod(name: str) -> tuple[dict, dict]:
    spec = manifest(name)["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    return spec, container


def volume_files(directory: Path, volumes: dict, contents: dict) -> dict[str, Path]:
    """{volume name: local directory} holding what the pod's volume holds; ``contents``: {(kind, name): {file: text}}."""
    local = {}
    for name, volume in volumes.items():
        path = directory / "volumes" / name
        path.mkdir(parents=True)
        if "emptyDir" in volume:
            path.chmod(0o777)  # as the kubelet makes an emptyDir
        else:
            kind = "configMap" if "configMap" in volume else "secret"
            source = volume[kind].get("name") or volume[kind]["secretName"]
            for file, text in contents[(kind, source)].items():
                (path / file).write_text(text)
                (path / file).chmod(volume[kind].get("defaultMode", 0o644))
        local[name] = path
    return local


def service_account(directory: Path, lab, account: str, namespace: str) -> tuple[Path, str, str]:
    """The files the kubelet mounts for the pod's ServiceAccount, and the apiserver's host and port."""
    token = lab.kubectl("create", "token", account, "-n", namespace, "--duration=1h").stdout.strip()
    cluster = yaml.safe_load(Path(lab.kubeconfig()).read_text())["clusters"][0]["cluster"]
    path = directory / "serviceaccount"
    path.mkdir()
    (path / "token").write_text(token)
    (path / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    (path / "namespace").write_text(namespace)
    server = urllib.parse.urlsplit(cluster["server"])
    return path, server.hostname, str(server.port or 443)


def podman_run(name: str, container_name: str, directory: Path, lab, contents: dict, secret_keys: dict) -> tuple[list[str], dict]:
    """podman run of the manifest's container, with what the kubelet adds, and its environment (passed to podman, not
    on its command line); ``secret_keys``: {(Secret, key): value}."""
    spec, container = pod(name)
    pod_security, security = spec["securityContext"], container["securityContext"]
    group = pod_security["fsGroup"]
    local = volume_files(directory, {v["name"]: v for v in spec["volumes"]}, contents)
    account, host, port = service_account(directory, lab, spec["serviceAccountName"], manifest(name)["metadata"]["namespace"])
    for path in [*local.values(), account]:
        for file in path.iterdir():
            os.chown(file, -1, group)  # fsGroup
    for file in account.iterdir():
        file.chmod(0o440)
    argv = ["podman", "run", "--rm", f"--name={container_name}", "--network=host"]
    argv += [f"--user={pod_security['runAsUser']}:{pod_security['runAsGroup']}", f"--group-add={group}"]
    if security["readOnlyRootFilesystem"]:
        argv += ["--read-only", "--read-only-tmpfs=false"]
    if not security["allowPrivilegeEscalation"]:
        argv.append("--security-opt=no-new-privileges")
    argv += [f"--cap-drop={cap}" for cap in security["capabilities"]["drop"]]
    for mount in container["volumeMounts"]:
        mode = "ro" if mount.get("readOnly") else "rw"
        argv.append(f"--volume={local[mount['name']]}:{mount['mountPath']}:{mode}")
    argv.append(f"--volume={account}:{SERVICE_ACCOUNT_DIR}:ro")
    env = {}
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        else:
            ref = entry["valueFrom"]["secretKeyRef"]
            env[entry["name"]] = secret_keys[(ref["name"], ref["key"])]
    env.update(KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=port)
    argv += [f"--env={key}" for key in env]  # values through podman's environment, not its command line
    return [*argv, container["image"], *container["args"]], env


def inventory() -> dict:
    localhost = {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"}
    return {("secret", "nodeguard-rulebook-inventory"): {"inventory.yml": yaml.safe_dump({"all": {"hosts": {"localhost": localhost}}})}}


def start(name: str, lab, directory: Path, contents: dict, secret_keys: dict) -> Iterator[tuple[str, Path]]:
    _spec, container = pod(name)
    image = container["image"]
    assert subprocess.run(["podman", "image", "exists", image], check=False).returncode == 0, f"{image} is not built: run `make test-ee`"
    container_name = f"nodeguard-{name}-test-{os.getpid()}"
    argv, env = podman_run(name, container_name, directory, lab, contents, secret_keys)
    log = directory / "rulebook.log"
    with open(log, "w") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env})
    yield container_name, log
    subprocess.run(["podman", "rm", "--force", "--time", "0", container_name], capture_output=True, check=False)
    process.wait(timeout=60)


def wait(what: str, ready, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not ready():
        assert time.monotonic() < deadline, f"{what}:\n{log.read_text()[-6000:]}"
        time.sleep(2)


# --- node-watch --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def node_watch(lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    lab.kubectl("apply", "-f", str(REPO / "deploy" / "rbac"))
    rbac = sorted((DEPLOY / "node-watch").glob("1*.yaml"))
    for path in rbac:
        lab.kubectl("apply", "-f", str(path))
    variables = yaml.safe_load((VARS / "node-watch.yml").read_text())
    variables["nodeguard_allow_nodes"] = []
    contents = {("configMap", "nodeguard-node-watch-vars"): {"vars.yml": yaml.safe_dump(variables)}, **inventory()}
    yield from start("node-watch", lab, tmp_path_factory.mktemp("node-watch"), contents, {})
    for path in reversed(rbac):
        lab.kubectl("delete", "-f", str(path), "--ignore-not-found", check=False)


def liveness(container_name: str) -> bool:
    command = pod("node-watch")[1]["livenessProbe"]["exec"]["command"]
    return subprocess.run(["podman", "exec", container_name, *command], capture_output=True, check=False).returncode == 0


def test_the_node_watch_pod_watches_as_the_service_account_and_is_alive(node_watch) -> None:
    name, log = node_watch
    wait("the liveness probe never passed", lambda: liveness(name), log)
    text = log.read_text()
    assert "node_watch: watching Nodes and Leases" in text, text[-6000:]
    assert " nodes at resourceVersion" in text and " leases at resourceVersion" in text, text[-6000:]
    assert "watch failed" not in text, text[-6000:]


# --- power-events ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def power_events(lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, dict]]:
    lab.kubectl("apply", "-f", str(REPO / "deploy" / "rbac"))
    directory = tmp_path_factory.mktemp("power-events")
    cert, key = make_tls(directory)
    _spec, container = pod("power-events")
    (port,) = container["ports"]
    (tls,) = [m["mountPath"] for m in container["volumeMounts"] if m["name"] == "tls"]
    variables = yaml.safe_load((VARS / "power-events.yml").read_text())
    variables.update(
        nodeguard_eda_listen_port=port["containerPort"],
        nodeguard_eda_tls_cert=f"{tls}/tls.crt",
        nodeguard_eda_tls_key=f"{tls}/tls.key",
        nodeguard_power_event_bmcs=[{"node": NODE, "system": system(NODE)}],
        nodeguard_allow_nodes=[],
    )
    contents = {
        ("configMap", "nodeguard-power-events-vars"): {"vars.yml": yaml.safe_dump(variables)},
        ("secret", "nodeguard-power-events-tls"): {"tls.crt": cert.read_text(), "tls.key": key.read_text()},
        **inventory(),
    }
    hmac_key = secrets.token_hex(24)
    running = contextlib.contextmanager(start)("power-events", lab, directory, contents,
                                               {("nodeguard-power-events-key", "bmc-hmac-key"): hmac_key})
    with running as (name, log):
        yield name, log, {"port": port["containerPort"], "cert": cert, "key": hmac_key}


def post(port: int, cert: Path, token: str) -> int:
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}/redfish-events/{NODE}",
        data=json.dumps(redfish_event(NODE, "2026-11-29T05:00:00Z")).encode(),
        headers={"Content-Type": "application/json", "X-Nodeguard-Token": token},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=str(cert)), timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_the_power_events_pod_checks_the_bmc_token_with_the_key_from_its_secret(power_events) -> None:
    _name, log, listener = power_events
    wait("the listener (the probes' port) never accepted a connection", lambda: listening(listener["port"]), log)
    signed = own_token(SimpleNamespace(token=listener["key"]), NODE)
    forged = own_token(SimpleNamespace(token="another key"), NODE)
    assert post(listener["port"], listener["cert"], forged) == 200
    assert post(listener["port"], listener["cert"], signed) == 200
    wait("the signed event was not judged", lambda: "not in nodeguard_allow_nodes" in log.read_text(), log)
    text = log.read_text()
    assert "nodeguard REFUSED" in text, text[-6000:]  # the forged token
    assert listener["key"] not in text
