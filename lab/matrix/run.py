"""The version matrix (make lab-matrix): start real binaries with what the model renders.

For every Kubernetes version whose kube-controller-manager and kubelet are built (lab/matrix/build.sh
into ~/.cache/nodeguard/matrix/<version>/bin, plus the lab's own v1.35 build), and its kube-apiserver
where that can be built (from v1.24), run every check of lab/matrix/plan.py against the binary and
record what it did:

  kube-apiserver           own etcd + PKI + base flags + the check's flags; accepted = /healthz "ok"
  kube-controller-manager  against a base kube-apiserver of the same version (the oldest one built when
                           the version has none); accepted = /healthz "ok" on its secure port and
                           still running 3 s later
  kubelet                  base KubeletConfiguration + the check's fields, no container runtime;
                           accepted/rejected as lab/matrix/signals.py reads its output

A process that exits before its signal rejected its settings (the message is its own words). Everything
listens on 127.0.0.1 only, on ports the lab does not use, with timeouts; every process is killed at the end,
also on failure or Ctrl-C. Writes docs/version-matrix.json and the table in docs/version-matrix.md; exits 1
when any check failed (a setting the model renders that a binary rejects, or a refused one it accepts).

    .venv/bin/python lab/matrix/run.py [--versions v1.31.0 v1.35.4 [--keep-others]] [--etcd PATH]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / ".build" / "collections"))
sys.path.insert(0, str(REPO / "lab" / "controlplane"))
sys.path.insert(0, str(REPO / "lab" / "matrix"))

import pki  # noqa: E402  (lab/controlplane/pki.py: the lab's own certificate helpers)
import plan  # noqa: E402
import report  # noqa: E402
import signals  # noqa: E402

CACHE = Path(os.environ.get("NODEGUARD_CACHE", Path.home() / ".cache" / "nodeguard"))
MODULES = REPO / "lab" / "matrix" / "go"
NOT_BUILDABLE = REPO / "lab" / "matrix" / "not-buildable.txt"
LAB_GO_MOD = REPO / "lab" / "k8s-build" / "go.mod"
RESULTS = REPO / "docs" / "version-matrix.json"
PAGE = REPO / "docs" / "version-matrix.md"

# Loopback ports no lab part uses (the lab publishes 16443, 8443 and 6230+).
PORTS = {"etcd": 23790, "etcd-peer": 23800, "base-apiserver": 23443, "apiserver": 23444,
         "controller-manager": 23257, "kubelet": 23250, "kubelet-healthz": 23248}
APISERVER_TIMEOUT = 180
CONTROLLER_MANAGER_TIMEOUT = 120
KUBELET_TIMEOUT = 90
STILL_RUNNING_SECONDS = 3

BASE_KUBELET_CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: {kubelet}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {kubelet_healthz}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: {ca}
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
failSwapOn: false
makeIPTablesUtilChains: false
"""
# This machine runs cgroup v1: kubelets from 1.35 refuse it unless told (failCgroupV1 exists from 1.31;
# naming it before would be an unknown field).
CGROUP_V1_FIELD = "failCgroupV1: false\n"
CGROUP_V1_FIELD_FROM = 31
# From 1.37 kube-apiserver refuses a loopback --advertise-address while it reconciles the kubernetes
# Service's endpoints ("cannot use public IP 127.0.0.1 with endpoint reconciler", seen on the first v1.37.2
# run); the matrix has no Service to reach, so it turns the reconciler off there.
LOOPBACK_RECONCILER_REFUSED_FROM = 37


def lab_version(module: str) -> str:
    """The version lab/k8s-build/go.mod requires for a module (the lab's own builds)."""
    for line in LAB_GO_MOD.read_text().splitlines():
        words = line.split()
        if words[:1] == [module] or words[:2] == ["require", module]:
            return words[-1]
    raise SystemExit(f"matrix: {module} is not in {LAB_GO_MOD}")


def minor_of(version: str) -> int:
    return int(version.lstrip("v").split(".")[1])


class Processes:
    """Every process the matrix starts, each in its own process group, all killed by stop_all()."""

    def __init__(self):
        self.running = []

    def start(self, command: list, log: Path) -> subprocess.Popen:
        with log.open("w") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        self.running.append(process)
        return process

    def stop(self, process: subprocess.Popen) -> None:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if process in self.running:
            self.running.remove(process)

    def stop_all(self) -> None:
        for process in list(reversed(self.running)):
            self.stop(process)


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def healthz(port: int, client: tuple | None) -> bool:
    """True when https://127.0.0.1:<port>/healthz answers "ok" (serving certificates are not verified)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if client:
        context.load_cert_chain(*client)
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=context, timeout=5) as answer:
            return answer.read().decode().strip() == "ok"
    except (OSError, ValueError):
        return False


def wait_healthy(process: subprocess.Popen, log: Path, port: int, client: tuple | None, timeout: float) -> tuple:
    """(observed, message): accepted once /healthz says ok (and the process lives on), rejected if it exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return plan.REJECTED, signals.refusal_message(log.read_text(errors="replace"))
        if healthz(port, client):
            waited = timeout - (deadline - time.monotonic())
            time.sleep(STILL_RUNNING_SECONDS)
            if process.poll() is None:
                return plan.ACCEPTED, f"/healthz ok after {waited:.0f} s, still running {STILL_RUNNING_SECONDS} s later"
            return plan.REJECTED, signals.refusal_message(log.read_text(errors="replace"))
        time.sleep(1)
    return "timeout", f"no /healthz ok and no exit within {timeout} s; last line: {signals.refusal_message(log.read_text(errors='replace'))}"


class Version:
    """One Kubernetes version's binaries, its own etcd, PKI and base kube-apiserver in a scratch directory."""

    def __init__(self, version: str, bin_dir: Path, apiserver: Path, etcd: Path, scratch: Path, processes: Processes):
        self.version, self.bin, self.etcd, self.dir, self.processes = version, bin_dir, etcd, scratch, processes
        self.apiserver = apiserver  # this version's own, or the oldest built one when this version has none
        # Before 1.24 --insecure-port (kube-apiserver) and --port (kube-controller-manager) exist and must be 0.
        self.legacy = minor_of(version) < 24
        self.legacy_apiserver = minor_of(apiserver.parent.parent.name) < 24  # .../<version>/bin/kube-apiserver
        self.pki = scratch / "pki"
        self.admin = scratch / "admin.conf"

    def binary(self, name: str) -> str:
        return str(self.apiserver if name == plan.APISERVER_BINARY else self.bin / name)

    def make_pki(self) -> None:
        ca = pki.make_ca(self.pki / "ca", "nodeguard-matrix-ca")
        pki.make_leaf(self.pki / "apiserver", ca, "kube-apiserver", server=True, sans=["127.0.0.1", "localhost", "10.96.0.1"])
        admin = pki.make_leaf(self.pki / "admin", ca, "kubernetes-admin", organization="system:masters", client=True)
        pki.write_service_account_keys(self.pki)
        pki.write_kubeconfig(self.admin, server=f"https://127.0.0.1:{PORTS['base-apiserver']}", ca=ca, user="kubernetes-admin",
                             client=admin)

    @property
    def client(self) -> tuple:
        return (str(self.pki / "admin.crt"), str(self.pki / "admin.key"))

    def start_etcd(self) -> subprocess.Popen:
        url, peer = f"http://127.0.0.1:{PORTS['etcd']}", f"http://127.0.0.1:{PORTS['etcd-peer']}"
        process = self.processes.start([
            str(self.etcd), "--name=matrix", f"--data-dir={self.dir / 'etcd'}", f"--listen-client-urls={url}",
            f"--advertise-client-urls={url}", f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=matrix={peer}",
        ], self.dir / "etcd.log")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=3) as answer:
                    if b'"health":"true"' in answer.read():
                        return process
            except OSError:
                time.sleep(1)
        raise RuntimeError(f"etcd did not become healthy: {signals.refusal_message((self.dir / 'etcd.log').read_text())}")

    def apiserver_command(self, port: int, extra: tuple) -> list:
        command = [
            self.binary("kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{PORTS['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
            f"--cert-dir={self.dir / f'apiserver-{port}'}", f"--tls-cert-file={self.pki / 'apiserver.crt'}",
            f"--tls-private-key-file={self.pki / 'apiserver.key'}", f"--client-ca-file={self.pki / 'ca.crt'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={self.pki / 'sa.pub'}", f"--service-account-signing-key-file={self.pki / 'sa.key'}",
            "--service-cluster-ip-range=10.96.0.0/12", "--authorization-mode=RBAC",
        ]
        if self.legacy_apiserver:
            command.append("--insecure-port=0")
        if minor_of(self.apiserver.parent.parent.name) >= LOOPBACK_RECONCILER_REFUSED_FROM:
            command.append("--endpoint-reconciler-type=none")
        return command + list(extra)

    def start_base_apiserver(self) -> subprocess.Popen:
        log = self.dir / "base-apiserver.log"
        process = self.processes.start(self.apiserver_command(PORTS["base-apiserver"], ()), log)
        observed, message = wait_healthy(process, log, PORTS["base-apiserver"], self.client, APISERVER_TIMEOUT)
        if observed != plan.ACCEPTED:
            raise RuntimeError(f"the base kube-apiserver (no profile flags) did not become healthy: {observed}: {message}")
        return process

    def run(self, check: plan.Check, number: int) -> tuple:
        """(observed, message) for one check."""
        log = self.dir / f"{number:02d}-{check.component}.log"
        if check.component == plan.APISERVER_BINARY:
            process = self.processes.start(self.apiserver_command(PORTS["apiserver"], check.args), log)
            try:
                return wait_healthy(process, log, PORTS["apiserver"], self.client, APISERVER_TIMEOUT)
            finally:
                self.processes.stop(process)
        if check.component == plan.CONTROLLER_MANAGER_BINARY:
            command = [
                self.binary("kube-controller-manager"), f"--kubeconfig={self.admin}",
                f"--authentication-kubeconfig={self.admin}", f"--authorization-kubeconfig={self.admin}",
                "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={PORTS['controller-manager']}",
                f"--cert-dir={self.dir / 'controller-manager'}", f"--service-account-private-key-file={self.pki / 'sa.key'}",
                f"--root-ca-file={self.pki / 'ca.crt'}",
            ] + (["--port=0"] if self.legacy else []) + list(check.args)
            process = self.processes.start(command, log)
            try:
                return wait_healthy(process, log, PORTS["controller-manager"], None, CONTROLLER_MANAGER_TIMEOUT)
            finally:
                self.processes.stop(process)
        return self.run_kubelet(check, log)

    def run_kubelet(self, check: plan.Check, log: Path) -> tuple:
        base = BASE_KUBELET_CONFIG.format(kubelet=PORTS["kubelet"], kubelet_healthz=PORTS["kubelet-healthz"],
                                          ca=self.pki / "ca.crt")
        if minor_of(self.version) >= CGROUP_V1_FIELD_FROM:
            base += CGROUP_V1_FIELD
        config = log.with_suffix(".config.yaml")
        config.write_text(plan.kubelet_config(base, check.kubelet_settings))
        root = self.dir / f"kubelet-{log.stem}"
        command = [
            self.binary("kubelet"), f"--config={config}", f"--kubeconfig={self.admin}", f"--root-dir={root}",
            f"--cert-dir={root / 'pki'}", "--hostname-override=nodeguard-matrix",
            f"--container-runtime-endpoint=unix://{self.dir / 'no-runtime.sock'}",
        ] + (["--container-runtime=remote"] if self.legacy else [])
        process = self.processes.start(command, log)
        try:
            deadline = time.monotonic() + KUBELET_TIMEOUT
            while time.monotonic() < deadline:
                exited = process.poll() is not None
                observed, message = signals.kubelet_verdict(log.read_text(errors="replace"))
                if observed:
                    return observed, message
                if exited:
                    return plan.REJECTED, signals.refusal_message(log.read_text(errors="replace"))
                time.sleep(0.5)
            return "timeout", f"neither its version line nor an exit within {KUBELET_TIMEOUT} s"
        finally:
            self.processes.stop(process)

    def binary_version(self) -> str:
        answer = subprocess.run([self.binary(plan.KUBELET_BINARY), "--version"], capture_output=True, text=True, check=False)
        return answer.stdout.strip() or answer.stderr.strip()


def versions_to_run(wanted: list) -> list:
    """[(version, bin directory or None, note)]: the matrix's own builds, the lab's build, and the unbuildable."""
    entries = {}
    lab_build = "the lab's build (lab/scripts/build-k8s.sh)"
    for module in sorted(MODULES.iterdir()) if MODULES.is_dir() else []:
        # A version the lab builds too (same module, same version ldflags) is taken from the lab's cache.
        lab_bin = CACHE / "k8s" / module.name / "bin"
        if all((lab_bin / name).exists() for name in plan.COMPONENTS):
            entries[module.name] = (lab_bin, lab_build)
        else:
            entries[module.name] = (CACHE / "matrix" / module.name / "bin", "")
    lab = lab_version("k8s.io/kubernetes")
    entries[lab] = (CACHE / "k8s" / lab / "bin", lab_build)
    if NOT_BUILDABLE.exists():
        for line in NOT_BUILDABLE.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                version, note = line.split(None, 1)
                entries[version] = (None, note)
    chosen = []
    for version in sorted(entries, key=lambda text: tuple(int(part) for part in text.lstrip("v").split("."))):
        if wanted and version not in wanted:
            continue
        bin_dir, note = entries[version]
        # kube-apiserver may be missing (lab/matrix/go/<version>/commands says why); the other two may not.
        built = bin_dir is not None and all((bin_dir / name).exists() for name in plan.COMPONENTS[1:])
        if bin_dir is not None and not built:
            note = note or f"no binaries in {bin_dir}: run lab/matrix/build.sh {version}"
        chosen.append((version, bin_dir if built else None, note))
    return chosen


def run_version(version: str, bin_dir: Path, stand_in_apiserver: Path, etcd: Path, note: str) -> dict:
    """Every check of one version; without its own kube-apiserver, the others run against stand_in_apiserver."""
    entry = {"version": version, "status": "built", "note": note, "checks": []}
    own = bin_dir / plan.APISERVER_BINARY
    components = plan.COMPONENTS if own.exists() else plan.COMPONENTS[1:]
    if not own.exists() and stand_in_apiserver is None:
        return {**entry, "status": "error", "note": "no kube-apiserver of its own and none built to stand in"}
    if not own.exists():
        entry["note"] = (f"no kube-apiserver of its own (lab/matrix/go/{version}/commands says why): kube-controller-manager "
                         f"ran against kube-apiserver {stand_in_apiserver.parent.parent.name}")
    processes = Processes()
    with tempfile.TemporaryDirectory(prefix=f"nodeguard-matrix-{version}-") as scratch:
        target = Version(version, bin_dir, own if own.exists() else stand_in_apiserver, etcd, Path(scratch), processes)
        entry["binary_version"] = target.binary_version()
        started = time.monotonic()
        try:
            target.make_pki()
            target.start_etcd()
            target.start_base_apiserver()
            for number, check in enumerate(plan.checks_for(version.lstrip("v"), components)):
                began = time.monotonic()
                observed, message = target.run(check, number)
                entry["checks"].append({
                    "component": check.component, "profile": check.profile, "kind": check.kind, "given": check.given,
                    "expected": check.expected, "observed": observed, "message": message or check.reason,
                    "seconds": round(time.monotonic() - began, 1),
                })
                verdict = "ok" if observed == check.expected else "FAILED"
                print(f"  {verdict:6} {check.component:23} {check.profile:30} {observed:8} {check.given}", flush=True)
        except RuntimeError as error:
            entry["status"] = "error"
            entry["note"] = str(error)
            print(f"  ERROR {error}", flush=True)
        finally:
            processes.stop_all()
        entry["seconds"] = round(time.monotonic() - started, 1)
    return entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", nargs="*", default=[], help="only these versions (default: every one found)")
    parser.add_argument("--keep-others", action="store_true",
                        help="with --versions: keep the other versions' results of the last run on the page, marked as such")
    parser.add_argument("--etcd", type=Path, help="an etcd binary other than the lab's (for trying the runner out)")
    args = parser.parse_args()
    # A SIGTERM (timeout, CI cancel) must still run the finally blocks that kill the binaries.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    etcd_version = lab_version("go.etcd.io/etcd/server/v3")
    etcd = args.etcd or CACHE / "etcd" / etcd_version / "bin" / "etcd"
    if args.etcd:
        etcd_version = subprocess.run([str(etcd), "--version"], capture_output=True, text=True, check=False).stdout.split()[2]
    if not etcd.exists():
        raise SystemExit(f"matrix: the lab's etcd {etcd} is missing; run make lab-build")
    busy = [f"{name} {port}" for name, port in PORTS.items() if not port_free(port)]
    if busy:
        raise SystemExit(f"matrix: loopback ports in use: {', '.join(busy)}")

    started = datetime.datetime.now(datetime.UTC)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip()
    results = {"started": started.strftime("%Y-%m-%d %H:%M:%S"), "commit": commit, "etcd": etcd_version, "versions": []}
    every = versions_to_run([])
    apiservers = [bin_dir / plan.APISERVER_BINARY for version, bin_dir, note in every
                  if bin_dir is not None and (bin_dir / plan.APISERVER_BINARY).exists()]
    for version, bin_dir, note in versions_to_run(args.versions):
        if bin_dir is None:
            print(f"== {version}: not built ({note})", flush=True)
            results["versions"].append({"version": version, "status": "not built", "note": note, "checks": []})
            continue
        print(f"== {version} ({bin_dir})", flush=True)
        # The oldest kube-apiserver built stands in for a version that has none.
        results["versions"].append(run_version(version, bin_dir, apiservers[0] if apiservers else None, etcd, note))
    finished = datetime.datetime.now(datetime.UTC)
    results["finished"] = finished.strftime("%Y-%m-%d %H:%M:%S")
    results["duration_seconds"] = round((finished - started).total_seconds())

    if args.keep_others and RESULTS.exists():
        results = report.merge(json.loads(RESULTS.read_text()), results)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    PAGE.write_text(report.replace_generated(PAGE.read_text(), report.markdown(results)))
    failures = report.failed_checks(results)
    errors = [entry["version"] for entry in results["versions"] if entry["status"] == "error"]
    for version, check in failures:
        print(f"FAILED {version} {check['component']} {check['profile']}: expected {check['expected']}, "
              f"observed {check['observed']}: {check['message']}")
    print(f"matrix: {RESULTS.relative_to(REPO)} and {PAGE.relative_to(REPO)} written; "
          f"{len(failures)} failed check(s), {len(errors)} version(s) with errors")
    return 1 if failures or errors else 0


if __name__ == "__main__":
    sys.exit(main())
