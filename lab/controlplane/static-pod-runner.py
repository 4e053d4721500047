"""Run /etc/kubernetes/manifests/*.yaml the way the kubelet runs static pods, without containers.

For every manifest (files whose name starts with a dot are ignored, as the kubelet does) the
first container's command + args become a transient systemd unit named after the pod
(`kube-apiserver.service`, ...), so `systemctl status kube-apiserver` and
`journalctl -u kube-apiserver` work on the node. Like the kubelet:
- a changed manifest (content hash) stops the component and starts it with the new command line;
- a removed or unreadable manifest stops it;
- a component that exits is started again (systemd Restart=always, fixed back-off);
- two manifests with the same pod name: the first one (by file name) wins, the other is reported.

Container images, volumes, probes and resources are ignored: binaries come from the node's PATH
(the lab bind-mounts them) and hostPath volumes are the node's own paths.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

MANIFEST_DIR = Path(os.environ.get("STATIC_POD_PATH", "/etc/kubernetes/manifests"))
STATE_DIR = Path(os.environ.get("STATIC_POD_STATE", "/run/static-pod-runner"))
POLL_SECONDS = float(os.environ.get("STATIC_POD_POLL_SECONDS", "1"))
RESTART_SECONDS = os.environ.get("STATIC_POD_RESTART_SECONDS", "5")
LAUNCHER = STATE_DIR / "launch"  # runs a manifest's command with its argv[0] as written
UNIT_CHECK_EVERY = 5  # polls between checks that every unit still exists

log = logging.getLogger("static-pod-runner")


class Pod:
    """What the runner needs from one manifest."""

    def __init__(self, path: Path, content: bytes):
        self.path = path
        self.digest = hashlib.sha256(content).hexdigest()
        doc = yaml.safe_load(content)
        if not isinstance(doc, dict) or doc.get("kind") != "Pod":
            raise ValueError("not a Pod manifest")
        self.name = doc["metadata"]["name"]
        container = doc["spec"]["containers"][0]
        self.argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
        if not self.argv:
            raise ValueError("the first container has no command")
        self.env = {e["name"]: str(e.get("value", "")) for e in container.get("env") or [] if "name" in e}

    @property
    def unit(self) -> str:
        return f"{self.name}.service"


def systemctl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["systemctl", *args], capture_output=True, text=True, check=False)


def read_manifests() -> dict[str, Pod]:
    """Desired pods by name. Unreadable manifests are left out, so their component stops."""
    pods: dict[str, Pod] = {}
    if not MANIFEST_DIR.is_dir():
        return pods
    for path in sorted(MANIFEST_DIR.iterdir()):
        if path.name.startswith(".") or not path.is_file():
            continue
        try:
            pod = Pod(path, path.read_bytes())
        except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError, yaml.YAMLError) as error:
            # a broken manifest: report it and run nothing for it, as the kubelet does
            log.error("ignoring %s: %s", path, error)
            continue
        if pod.name in pods:
            log.error("ignoring %s: pod name %r is already defined by %s", path, pod.name, pods[pod.name].path)
            continue
        pods[pod.name] = pod
    return pods


def running() -> dict[str, dict]:
    """Components this runner started, with the manifest digest they run."""
    result = {}
    for record in STATE_DIR.glob("*.json"):
        try:
            result[record.stem] = json.loads(record.read_text())
        except (OSError, ValueError):
            record.unlink(missing_ok=True)
    return result


def stop(name: str) -> None:
    log.info("stopping %s", name)
    systemctl("stop", f"{name}.service")
    systemctl("reset-failed", f"{name}.service")
    (STATE_DIR / f"{name}.json").unlink(missing_ok=True)


def start(pod: Pod) -> None:
    log.info("starting %s from %s (sha256 %s): %s", pod.name, pod.path, pod.digest[:12], " ".join(pod.argv))
    command = [
        "systemd-run", "--collect", f"--unit={pod.unit}",
        f"--description=static pod {pod.name} from {pod.path}",
        "--property=Restart=always", f"--property=RestartSec={RESTART_SECONDS}",
        "--property=StartLimitIntervalSec=0", "--property=TimeoutStopSec=30",
    ]
    command += [f"--setenv={key}={value}" for key, value in pod.env.items()]
    # The launcher keeps argv[0] as the manifest wrote it (systemd would make it an absolute path),
    # so /proc/<pid>/cmdline reads exactly like the container's command on a kubeadm node.
    command += ["--", str(LAUNCHER), *pod.argv]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        log.error("could not start %s: %s", pod.name, result.stderr.strip())
        return
    record = {"digest": pod.digest, "manifest": str(pod.path), "argv": pod.argv, "started": time.time()}
    (STATE_DIR / f"{pod.name}.json").write_text(json.dumps(record))


def unit_exists(name: str) -> bool:
    state = systemctl("show", "--property=LoadState,ActiveState", "--value", f"{name}.service").stdout.split()
    return state[:1] == ["loaded"] and state[1:2] != ["inactive"]


def reconcile(check_units: bool) -> None:
    desired = read_manifests()
    current = running()
    for name in current:
        if name not in desired:
            stop(name)
    for name, pod in desired.items():
        record = current.get(name)
        if record is None:
            start(pod)
        elif record["digest"] != pod.digest:
            log.info("%s changed", pod.path)
            stop(name)
            start(pod)
        elif check_units and not unit_exists(name):
            log.warning("%s is gone (stopped by hand?): starting it again", pod.unit)
            stop(name)
            start(pod)


def write_launcher() -> None:
    """`exec -a` lives in a script, not in the unit's command line: systemd keeps a transient unit's
    command in a file that a daemon-reload (any unit change on this node) parses again, and the "$0"
    of an inline `bash -c` came back from that as a literal, so the next restart failed for ever."""
    LAUNCHER.write_text('#!/bin/bash\nexec -a "$1" "$@"\n')
    LAUNCHER.chmod(0o755)


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(message)s")
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    write_launcher()
    log.info("watching %s every %ss", MANIFEST_DIR, POLL_SECONDS)
    polls = 0
    while True:
        reconcile(check_units=polls % UNIT_CHECK_EVERY == 0)
        polls += 1
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    main()
