"""The node watch's Deployment (deploy/rulebook/node-watch) run under podman against the lab, as its pod would run.

`make test-ee` builds the decision environment (localhost/nodeguard-de:latest) and loads it into the private lab.
The container is built from the manifest, not written again here: its image, arguments and environment, each volume
mounted at its path (the ConfigMap's vars, the Secret's inventory, the emptyDirs), its security context (user,
read-only root, no capabilities, no privilege escalation), and what the kubelet adds to a pod: the
ServiceAccount's token, CA and namespace at /var/run/secrets/kubernetes.io/serviceaccount and
KUBERNETES_SERVICE_HOST/PORT, here the lab's apiserver. The source must list and watch as the remediation
ServiceAccount with the node watch's RBAC, and the manifest's liveness probe, run in the container, must pass.
The allow-list is empty: no node is ever acted on.
"""

from __future__ import annotations

import base64
import os
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy" / "rulebook" / "node-watch"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
STARTUP_TIMEOUT = 300  # the JVM and the rule engine start slowly on a busy machine


def manifest() -> dict:
    return yaml.safe_load((DEPLOY / "20-deployment.yaml").read_text())


def volume_files(directory: Path, volumes: dict) -> dict[str, Path]:
    """{volume name: local directory} holding what the pod's volume would hold."""
    vars_file = yaml.safe_load((REPO / "extensions" / "eda" / "vars" / "node-watch.yml").read_text())
    vars_file["nodeguard_allow_nodes"] = []  # act on nothing
    contents = {
        ("configMap", "nodeguard-node-watch-vars"): {"vars.yml": yaml.safe_dump(vars_file)},
        ("secret", "nodeguard-rulebook-inventory"): {
            "inventory.yml": yaml.safe_dump(
                {"all": {"hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": "/usr/bin/python3"}}}}
            )
        },
    }
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


def service_account(directory: Path, lab, group: int) -> tuple[Path, str, str]:
    """The files the kubelet mounts for the pod's ServiceAccount, and the apiserver's host and port."""
    spec = manifest()["spec"]["template"]["spec"]
    namespace = manifest()["metadata"]["namespace"]
    token = lab.kubectl("create", "token", spec["serviceAccountName"], "-n", namespace, "--duration=1h").stdout.strip()
    cluster = yaml.safe_load(Path(lab.kubeconfig()).read_text())["clusters"][0]["cluster"]
    path = directory / "serviceaccount"
    path.mkdir()
    (path / "token").write_text(token)
    (path / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    (path / "namespace").write_text(namespace)
    for file in path.iterdir():
        os.chown(file, -1, group)  # fsGroup
        file.chmod(0o440)
    server = urllib.parse.urlsplit(cluster["server"])
    return path, server.hostname, str(server.port or 443)


def podman_run(name: str, directory: Path, lab) -> list[str]:
    """podman run of the manifest's container, with what the kubelet would add."""
    spec = manifest()["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    pod_security, security = spec["securityContext"], container["securityContext"]
    group = pod_security["fsGroup"]
    local = volume_files(directory, {v["name"]: v for v in spec["volumes"]})
    for path in local.values():
        for file in path.iterdir():
            os.chown(file, -1, group)
    account, host, port = service_account(directory, lab, group)
    argv = [
        "podman",
        "run",
        "--rm",
        f"--name={name}",
        "--network=host",
        f"--user={pod_security['runAsUser']}:{pod_security['runAsGroup']}",
        f"--group-add={group}",
    ]
    if security["readOnlyRootFilesystem"]:
        argv += ["--read-only", "--read-only-tmpfs=false"]
    if not security["allowPrivilegeEscalation"]:
        argv.append("--security-opt=no-new-privileges")
    argv += [f"--cap-drop={cap}" for cap in security["capabilities"]["drop"]]
    for mount in container["volumeMounts"]:
        mode = "ro" if mount.get("readOnly") else "rw"
        argv.append(f"--volume={local[mount['name']]}:{mount['mountPath']}:{mode}")
    argv.append(f"--volume={account}:{SERVICE_ACCOUNT_DIR}:ro")
    env = {e["name"]: e["value"] for e in container.get("env", [])}  # the node watch takes no Secret in its environment
    env.update(KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=port)
    argv += [f"--env={key}={value}" for key, value in env.items()]
    return [*argv, container["image"], *container["args"]]


@pytest.fixture(scope="module")
def node_watch(lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    image = manifest()["spec"]["template"]["spec"]["containers"][0]["image"]
    assert subprocess.run(["podman", "image", "exists", image], check=False).returncode == 0, f"{image} is not built: run `make test-ee` (scripts/build-ee.sh)"
    lab.kubectl("apply", "-f", str(REPO / "deploy" / "rbac"))
    for path in sorted(DEPLOY.glob("1*.yaml")):
        lab.kubectl("apply", "-f", str(path))
    directory = tmp_path_factory.mktemp("node-watch")
    name = f"nodeguard-node-watch-test-{os.getpid()}"
    log = directory / "rulebook.log"
    with open(log, "w") as out:
        process = subprocess.Popen(podman_run(name, directory, lab), stdout=out, stderr=subprocess.STDOUT)
    yield name, log
    subprocess.run(["podman", "rm", "--force", "--time", "0", name], capture_output=True, check=False)
    process.wait(timeout=60)
    for path in sorted(DEPLOY.glob("1*.yaml"), reverse=True):
        lab.kubectl("delete", "-f", str(path), "--ignore-not-found", check=False)


def probe(name: str) -> subprocess.CompletedProcess:
    command = manifest()["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["exec"]["command"]
    return subprocess.run(["podman", "exec", name, *command], capture_output=True, text=True, check=False)


def test_the_node_watch_pod_watches_as_the_service_account_and_is_alive(node_watch) -> None:
    name, log = node_watch
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while probe(name).returncode != 0:
        assert time.monotonic() < deadline, f"the liveness probe never passed:\n{log.read_text()[-6000:]}\n{probe(name).stderr}"
        time.sleep(2)
    text = log.read_text()
    assert "node_watch: watching Nodes and Leases" in text, text[-6000:]
    assert "node_watch: listed" in text and " nodes at resourceVersion" in text and " leases at resourceVersion" in text, text[-6000:]
    assert "watch failed" not in text, text[-6000:]
