"""Helpers for the lab BMC tests: podman calls, a tiny test image, a private BMC instance."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
BMC_SH = REPO / "lab" / "bmc" / "bmc.sh"
# A few MB: /bin/sleep and its libraries. The BMC only cares about the container's lifecycle.
# Tagged by a hash of its content (image_tag_for).
TEST_IMAGE_NAME = "localhost/nodeguard-bmctest"
# ipmi_sim answers a chassis command only once the container has changed state, and executes every
# copy of a request it receives: a client that retransmits after 1 s, while a busy machine takes
# 4 s to restart a container, gets its reset done three times and may give up. Wait long, send once.
IPMITOOL_PATIENCE = ("-N", "60", "-R", "1")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check, timeout=60)


@contextmanager
def running_machine(name: str, image: str) -> Iterator[str]:
    """A fresh running container ``name`` (a BMC's system), removed afterwards, also when the test fails."""
    podman("rm", "--force", "--time", "0", name, check=False)
    # --init: catatonit as PID 1 forwards SIGTERM, so `podman stop` is quick.
    podman("run", "--detach", "--init", "--name", name, image)
    try:
        yield name
    finally:
        podman("rm", "--force", "--time", "0", name, check=False)


# podman's states of a container whose processes are gone: "stopped" until podman's cleanup has run, then "exited".
# The emulator's power-off returns at the first one (lab/bmc/container_power.py: off is "not powered"), so a test
# that reads right after it sees either (ci11 read "stopped").
POWERED_OFF = ("exited", "stopped")


def container_status(name: str) -> str:
    result = podman("container", "inspect", "--format", "{{.State.Status}}", name, check=False)
    return result.stdout.strip() if result.returncode == 0 else "absent"


def shared_libraries(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    paths = []
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) > parts.index("=>") + 1 and parts[parts.index("=>") + 1].startswith("/"):
            paths.append(parts[parts.index("=>") + 1])
        elif parts and parts[0].startswith("/"):
            paths.append(parts[0])
    return paths


def rootfs_files(binary: str) -> list[tuple[str, str]]:
    """(file to read, path in the image) for ``binary`` and every library ldd names, symlinks resolved.

    On Debian bookworm /lib64/ld-linux-x86-64.so.2 is a symlink into /lib/x86_64-linux-gnu: packed as
    a link it dangles inside the image and every container dies with "failed to exec pid1".
    """
    return [(os.path.realpath(path), path.lstrip("/")) for path in [binary, *shared_libraries(binary)]]


def write_rootfs(archive: Path, binary: str) -> None:
    """A tar of regular files only: ``binary`` as /bin/sleep and its libraries at the paths ldd gives."""
    files = rootfs_files(binary)
    with tarfile.open(archive, "w") as tar:
        tar.add(files[0][0], arcname="bin/sleep")
        for source, arcname in files[1:]:
            tar.add(source, arcname=arcname)


def image_tag_for(binary: str) -> str:
    """The image tag names the content it is built from, so an image packed from other files (another
    libc, or an older broken build) is never reused."""
    digest = hashlib.sha256()
    for source, arcname in rootfs_files(binary):
        digest.update(arcname.encode() + b"\0" + Path(source).read_bytes())
    return f"{TEST_IMAGE_NAME}:{digest.hexdigest()[:12]}"


def ensure_test_image() -> str:
    """Build the test image when missing, check that a container of it really runs, return its name."""
    sleep = shutil.which("sleep")
    image = image_tag_for(sleep)
    if podman("image", "exists", image, check=False).returncode != 0:
        with tempfile.TemporaryDirectory() as tmp:
            archive = Path(tmp) / "rootfs.tar"
            write_rootfs(archive, sleep)
            podman("import", "--change", 'CMD ["/bin/sleep", "infinity"]', str(archive), image)
    probe = podman("run", "--rm", "--init", image, "/bin/sleep", "0", check=False)
    if probe.returncode != 0:
        raise RuntimeError(
            f"the BMC test image {image} does not run (podman run exited {probe.returncode}): "
            f"{probe.stderr.strip() or probe.stdout.strip()}. It is packed from {sleep} and the libraries "
            f"ldd lists; remove it with `podman rmi {image}` after fixing tests/integration/bmc/bmclib.py"
        )
    return image


def free_udp_ports(count: int) -> int:
    """First of `count` consecutive free UDP ports on loopback (one IPMI simulator per node)."""
    for _attempt in range(50):
        first = free_port()
        sockets = []
        try:
            for port in range(first, first + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError(f"no {count} consecutive free UDP ports")


@dataclass
class Bmc:
    state_dir: Path
    port: int
    ipmi_port: int
    nodes: list[str]
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "NODEGUARD_BMC_STATE_DIR": str(self.state_dir),
            "NODEGUARD_BMC_PORT": str(self.port),
            "NODEGUARD_BMC_IPMI_PORT": str(self.ipmi_port),
            **self.extra_env,
        }

    def sh(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(BMC_SH), *args], env=self.env, capture_output=True, text=True, check=check, timeout=600
        )

    @property
    def endpoints(self) -> dict:
        return json.loads((self.state_dir / "endpoints.json").read_text())

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_cert(self) -> str:
        return str(self.state_dir / "ca.crt")

    @property
    def auth(self) -> tuple[str, str]:
        endpoint = self.endpoints[self.nodes[0]]["bmc"]
        return endpoint["username"], endpoint["password"]

    def pid(self, service: str = "redfish") -> int:
        return int((self.state_dir / "pids" / f"{service}.pid").read_text())

    def ipmitool(self, node: str, *command: str, password: str | None = None) -> subprocess.CompletedProcess:
        """ipmitool over IPMI 2.0 (lanplus); the password goes through the environment (-E)."""
        ipmi = self.endpoints[node]["bmc_ipmi"]
        return subprocess.run(
            ["ipmitool", "-I", "lanplus", "-C", str(ipmi["cipher"]), *IPMITOOL_PATIENCE,
             "-H", ipmi["address"], "-p", str(ipmi["port"]), "-U", ipmi["username"], "-E", *command],
            env={**os.environ, "IPMI_PASSWORD": password or ipmi["password"]},
            capture_output=True, text=True, timeout=60, check=False,
        )


def start_bmc(state_dir: Path, nodes: list[str], ipmi: bool = True, extra_env: dict[str, str] | None = None) -> Bmc:
    """A private BMC; ipmi=False: Redfish only. extra_env: more bmc.sh settings (NODEGUARD_BMC_EVENT_CA)."""
    ipmi_port = free_udp_ports(len(nodes) + 2) if ipmi else 0  # room to add nodes
    bmc = Bmc(state_dir=state_dir, port=free_port(), ipmi_port=ipmi_port, nodes=nodes, extra_env=extra_env or {})
    result = bmc.sh("up", *nodes, check=False)
    if result.returncode != 0:
        bmc.sh("down", check=False)  # what did start (Redfish, earlier simulators) must not outlive the test
        raise AssertionError(f"bmc.sh up failed:\n{result.stdout}\n{result.stderr}")
    return bmc
