"""Scale mode of the lab: the lab's control-plane binaries on loopback plus ONE kwok process that
simulates N nodes, for load and cost measurements without containers (issue 3, item 7).

    scale.py up N [--profile P]    etcd, kube-apiserver, kube-controller-manager, kwok; N Nodes
    scale.py profile P             switch the heartbeat/controller timings to profile P
    scale.py pods COUNT [--node NAME --on-node K]   COUNT pods spread over the nodes (K of them on NAME)
    scale.py status | down

Ports are the lab's plus 10000 so both can run at once: apiserver https://127.0.0.1:26443,
etcd http://127.0.0.1:22379 (metrics :22381). Runtime files go to lab/.state/scale/, etcd data
to /dev/shm (tmpfs, as in the lab's ng-cp1). No scheduler: pods are created already bound, as
the incident benchmark only needs them to exist and be Running.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "lab" / "workers" / "standin"))

import kubelet_config  # noqa: E402  (lab/workers/standin: the kubelet stand-in's config reader)
import kwok_stages  # noqa: E402  (lab/workers/standin: kwok Stages that behave like a kubelet)
import profiles  # noqa: E402  (bench/profiles.py)


def lab_module_version(module: str) -> str:
    """The version lab/k8s-build/go.mod requires of a module: the binaries lab/scripts/build-k8s.sh built."""
    go_mod = REPO / "lab" / "k8s-build" / "go.mod"
    for line in go_mod.read_text().splitlines():
        words = line.split()
        if words[:1] == [module] or words[:2] == ["require", module]:
            return words[-1]
    raise SystemExit(f"scale: {module} is not in {go_mod}")


K8S_VERSION = lab_module_version("k8s.io/kubernetes")
ETCD_VERSION = lab_module_version("go.etcd.io/etcd/server/v3")
KWOK_VERSION = "v0.7.0"
CACHE = Path(os.environ.get("NODEGUARD_CACHE", Path.home() / ".cache" / "nodeguard"))
K8S_BIN = CACHE / "k8s" / K8S_VERSION / "bin"
ETCD = CACHE / "etcd" / ETCD_VERSION / "bin" / "etcd"
KWOK = CACHE / "kwok" / KWOK_VERSION / "bin" / "kwok"

STATE = REPO / "lab" / ".state" / "scale"
ETCD_DATA = Path(os.environ.get("NODEGUARD_SCALE_ETCD_DATA", "/dev/shm/nodeguard-scale-etcd"))
API_PORT = 26443
ETCD_CLIENT = "http://127.0.0.1:22379"
ETCD_PEER = "http://127.0.0.1:22380"
ETCD_METRICS = "http://127.0.0.1:22381"
API_URL = f"https://127.0.0.1:{API_PORT}"
NODE_LABEL = "nodeguard.dev/scale"
NODE_PREFIX = "scale-node-"
NAMESPACE = "scale"
KWOK_WORKERS = 64
# Order matters: started in this order, stopped in reverse.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kwok")


def say(message: str) -> None:
    print(f"scale: {message}", flush=True)


# --- certificates and credentials ---------------------------------------------------------

def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def ensure_pki() -> None:
    """A CA, a serving certificate for 127.0.0.1, a service-account key pair and an admin token."""
    pki = STATE / "pki"
    if (pki / "apiserver.crt").exists():
        return
    pki.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "7", "-subj", "/CN=nodeguard-scale-ca",
             "-keyout", str(pki / "ca.key"), "-out", str(pki / "ca.crt"))
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kube-apiserver",
             "-keyout", str(pki / "apiserver.key"), "-out", str(pki / "apiserver.csr"))
    (pki / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", str(pki / "apiserver.csr"), "-CA", str(pki / "ca.crt"), "-CAkey",
             str(pki / "ca.key"), "-CAcreateserial", "-days", "7", "-extfile", str(pki / "san.ext"),
             "-out", str(pki / "apiserver.crt"))
    _openssl("genrsa", "-out", str(pki / "sa.key"), "2048")
    _openssl("rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))
    token = os.urandom(16).hex()
    (pki / "tokens.csv").write_text(f"{token},nodeguard-scale-admin,nodeguard-scale-admin,system:masters\n")
    os.chmod(pki / "tokens.csv", 0o600)
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config", "current-context": "scale",
        "clusters": [{"name": "scale", "cluster": {"server": API_URL, "certificate-authority": str(pki / "ca.crt")}}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "scale", "context": {"cluster": "scale", "user": "admin"}}],
    }
    path = STATE / "admin.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    os.chmod(path, 0o600)


def kubeconfig() -> str:
    return str(STATE / "admin.kubeconfig")


# A second identity, audited: the incident benchmark runs node_outage.yml with it, and the audit
# log then holds every request the playbook made. From everyone else it holds only pod deletes, with
# their options (gracePeriodSeconds 0 is a force-delete), so that the benchmark can say who removed
# the victim's pods: node-outage, or the controller manager (its PodGC force-deletes the terminating
# pods of a node with the out-of-service taint).
AUDITED_USER = "nodeguard-bench-incident"
AUDIT_POLICY = f"""apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  verbs: [delete]
  resources: [{{group: "", resources: [pods]}}]
- level: Metadata
  users: [{AUDITED_USER}]
- level: None
"""


def audited_kubeconfig() -> str:
    return str(STATE / "incident.kubeconfig")


def ensure_audited_identity() -> None:
    tokens = STATE / "pki" / "tokens.csv"
    if AUDITED_USER in tokens.read_text():
        return
    token = os.urandom(16).hex()
    with tokens.open("a") as handle:
        handle.write(f"{token},{AUDITED_USER},{AUDITED_USER},system:masters\n")
    (STATE / "audit-policy.yaml").write_text(AUDIT_POLICY)
    config = yaml.safe_load((STATE / "admin.kubeconfig").read_text())
    config["users"] = [{"name": "admin", "user": {"token": token}}]
    Path(audited_kubeconfig()).write_text(yaml.safe_dump(config))
    os.chmod(audited_kubeconfig(), 0o600)


# --- processes ----------------------------------------------------------------------------

def _pids() -> dict:
    path = STATE / "pids.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _save_pids(pids: dict) -> None:
    (STATE / "pids.json").write_text(json.dumps(pids, indent=1))


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):  # reap it first if it is our own exited child
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start(component: str, command: list[str]) -> None:
    log = open(STATE / f"{component}.log", "ab")  # noqa: SIM115 - handed to the child process
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    pids = _pids()
    pids[component] = {"pid": process.pid, "command": command}
    _save_pids(pids)


def stop(component: str, timeout: float = 20) -> None:
    pids = _pids()
    entry = pids.pop(component, None)
    _save_pids(pids)
    if not entry or not _alive(entry["pid"]):
        return
    os.kill(entry["pid"], signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(entry["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(entry["pid"]):
        os.kill(entry["pid"], signal.SIGKILL)


def running_command(component: str) -> list[str] | None:
    entry = _pids().get(component)
    return entry["command"] if entry and _alive(entry["pid"]) else None


def _flags(flags: dict) -> list[str]:
    return [f"--{name}={value}" for name, value in sorted(flags.items())]


def etcd_command() -> list[str]:
    return [str(ETCD), "--name=scale", f"--data-dir={ETCD_DATA}",
            f"--listen-client-urls={ETCD_CLIENT}", f"--advertise-client-urls={ETCD_CLIENT}",
            f"--listen-peer-urls={ETCD_PEER}", f"--initial-advertise-peer-urls={ETCD_PEER}",
            f"--initial-cluster=scale={ETCD_PEER}", f"--listen-metrics-urls={ETCD_METRICS}",
            "--snapshot-count=10000", "--quota-backend-bytes=8589934592"]


def apiserver_command(settings: dict) -> list[str]:
    pki = STATE / "pki"
    base = {
        "advertise-address": "127.0.0.1", "bind-address": "127.0.0.1", "secure-port": API_PORT,
        "etcd-servers": ETCD_CLIENT, "allow-privileged": "true", "authorization-mode": "Node,RBAC",
        "client-ca-file": pki / "ca.crt", "tls-cert-file": pki / "apiserver.crt",
        "tls-private-key-file": pki / "apiserver.key", "token-auth-file": pki / "tokens.csv",
        "service-account-issuer": "https://kubernetes.default.svc.cluster.local",
        "service-account-key-file": pki / "sa.pub", "service-account-signing-key-file": pki / "sa.key",
        "service-cluster-ip-range": "10.96.0.0/12", "enable-admission-plugins": "NodeRestriction",
        "audit-policy-file": STATE / "audit-policy.yaml", "audit-log-path": STATE / "audit.log",
        "audit-log-maxsize": 200,
    }
    if int(K8S_VERSION.lstrip("v").split(".")[1]) >= 37:
        # v1.37 refuses a loopback advertise address while it reconciles the kubernetes Service's endpoints
        # ("cannot use public IP 127.0.0.1 with endpoint reconciler"; seen in the version matrix). Nothing in
        # scale mode reaches that Service.
        base["endpoint-reconciler-type"] = "none"
    return [str(K8S_BIN / "kube-apiserver"), *_flags({**base, **settings["kube_apiserver"]})]


def controller_manager_command(settings: dict) -> list[str]:
    pki = STATE / "pki"
    base = {
        "kubeconfig": kubeconfig(), "authentication-kubeconfig": kubeconfig(),
        "authorization-kubeconfig": kubeconfig(), "bind-address": "127.0.0.1", "secure-port": 0,
        "leader-elect": "false", "controllers": "*", "root-ca-file": pki / "ca.crt",
        "service-account-private-key-file": pki / "sa.key", "service-cluster-ip-range": "10.96.0.0/12",
        "use-service-account-credentials": "false",
    }
    return [str(K8S_BIN / "kube-controller-manager"), *_flags({**base, **settings["kube_controller_manager"]})]


def kwok_stage_documents(kubelet: kubelet_config.KubeletSettings) -> str:
    """The lab stand-in's Stages, except that pods start without waiting for a volume manager
    (scale mode has none: its pods have no volumes)."""
    documents = kwok_stages.stages(kubelet)
    for stage in documents:
        if stage["metadata"]["name"] == "pod-start":
            expressions = stage["spec"]["selector"]["matchExpressions"]
            stage["spec"]["selector"]["matchExpressions"] = [
                e for e in expressions if "PodReadyToStartContainers" not in e["key"]]
    # kwok's default of 4 workers per loop, each waiting for its request, caps a kwok process at
    # about 100 writes/s: far below 1000 independent kubelets. Enough workers that the control
    # plane, not the simulator, is what limits the measured rate.
    options = {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
               "options": {"nodeLeaseParallelism": KWOK_WORKERS, "nodePlayStageParallelism": KWOK_WORKERS,
                           "podPlayStageParallelism": KWOK_WORKERS}}
    return yaml.dump_all([options, *documents], Dumper=kwok_stages._BlockStyleDumper, sort_keys=False)


def kubelet_settings(settings: dict) -> kubelet_config.KubeletSettings:
    document = {"kind": "KubeletConfiguration", **settings["kubelet"]}
    return kubelet_config.settings_from_document(document)


def kwok_command(settings: dict, profile: str) -> list[str]:
    kubelet = kubelet_settings(settings)
    stages = STATE / f"kwok-stages-{profile}.yaml"
    stages.write_text(kwok_stage_documents(kubelet))
    return [str(KWOK), f"--kubeconfig={kubeconfig()}", f"--config={stages}",
            f"--manage-nodes-with-label-selector={NODE_LABEL}=true", "--cidr=10.128.0.1/9",
            f"--node-lease-duration-seconds={kubelet.lease_duration_seconds}",
            "--v=WARN"]  # a log line per status patch would cost more CPU than the patch


# --- the API --------------------------------------------------------------------------------

def api():
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig(), client_configuration=configuration)
    configuration.connection_pool_maxsize = 16  # read when the ApiClient builds its pool, not later
    return client.CoreV1Api(client.ApiClient(configuration))


def wait_ready(timeout: float = 400) -> None:
    deadline = time.monotonic() + timeout
    while True:
        result = subprocess.run([str(K8S_BIN / "kubectl"), f"--kubeconfig={kubeconfig()}", "--request-timeout=10s",
                                 "get", "--raw", "/readyz"], capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"scale: kube-apiserver not ready after {timeout:.0f}s; see {STATE}/kube-apiserver.log")
        time.sleep(1)


# A real node's status lists the images it holds (up to 50, nodeStatusMaxImages); they make up
# most of a Node object's size, and every status write stores the whole object in etcd again.
NODE_IMAGES = [
    {"names": [f"registry.example.com/team-{i:02d}/service-{i:02d}@sha256:{i:064x}",
               f"registry.example.com/team-{i:02d}/service-{i:02d}:v1.{i}.0"],
     "sizeBytes": 50_000_000 + i * 1_000_003}
    for i in range(40)
]


def node_body(name: str) -> dict:
    resources = {"cpu": "32", "memory": "256Gi", "pods": "250"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {NODE_LABEL: "true", "kubernetes.io/hostname": name, "type": "kwok"},
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"}},
        "status": {"capacity": resources, "allocatable": resources, "images": NODE_IMAGES,
                   "nodeInfo": {"kubeletVersion": K8S_VERSION, "architecture": "amd64", "operatingSystem": "linux",
                                "containerRuntimeVersion": f"kwok-{KWOK_VERSION}", "kernelVersion": "",
                                "osImage": "kwok", "kubeProxyVersion": "", "bootID": "", "machineID": "",
                                "systemUUID": ""}},
    }


def node_names(count: int) -> list[str]:
    return [f"{NODE_PREFIX}{index:04d}" for index in range(count)]


def create_nodes(count: int) -> None:
    from kubernetes.client.rest import ApiException

    core = api()
    existing = {n.metadata.name for n in core.list_node(label_selector=f"{NODE_LABEL}=true").items}
    wanted = node_names(count)

    def create(name: str) -> None:
        try:
            core.create_node(node_body(name))
        except ApiException as error:
            if error.status != 409:
                raise

    def delete(name: str) -> None:
        core.delete_node(name)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(create, [n for n in wanted if n not in existing]))
        list(pool.map(delete, sorted(existing - set(wanted))))
    say(f"{count} nodes registered")


def wait_nodes_ready(count: int, timeout: float = 600) -> None:
    core = api()
    deadline = time.monotonic() + timeout
    while True:
        nodes = core.list_node(label_selector=f"{NODE_LABEL}=true").items
        ready = sum(1 for n in nodes for c in (n.status.conditions or []) if c.type == "Ready" and c.status == "True")
        if ready >= count:
            say(f"{ready}/{count} nodes Ready")
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"scale: only {ready}/{count} nodes Ready after {timeout:.0f}s")
        time.sleep(3)


def pod_body(name: str, node: str) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "scale"}},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "registry.invalid/app:1"}],
                 "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}]},
    }


def create_pods(total: int, node_count: int, special_node: str | None, on_special: int) -> None:
    """total pods, on_special of them on special_node, the rest round-robin over the other nodes."""
    from kubernetes.client.rest import ApiException

    core = api()
    try:
        core.create_namespace({"metadata": {"name": NAMESPACE}})
    except ApiException as error:
        if error.status != 409:
            raise
    others = [n for n in node_names(node_count) if n != special_node]
    plan = [(f"pod-{special_node}-{i:03d}", special_node) for i in range(on_special)] if special_node else []
    plan += [(f"pod-{i:05d}", others[i % len(others)]) for i in range(total - len(plan))]
    existing = {p.metadata.name for p in core.list_namespaced_pod(NAMESPACE).items}

    def create(item: tuple[str, str]) -> None:
        try:
            core.create_namespaced_pod(NAMESPACE, pod_body(*item))
        except ApiException as error:
            if error.status != 409:
                raise

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(create, [item for item in plan if item[0] not in existing]))
    say(f"{total} pods in namespace {NAMESPACE} ({on_special} on {special_node}) in "
        f"{time.monotonic() - started:.0f}s")


# --- commands -------------------------------------------------------------------------------

def apply_profile(profile: str) -> None:
    """(Re)start the components whose command line differs for this profile.

    A new kwok process has a new lease holder identity and would wait out the old leases
    (up to 40s) before renewing them, during which the controller manager may mark every node
    NotReady. So on a switch: stop kwok and the controller manager, delete the node leases,
    let kwok create fresh ones, and only then start the controller manager.
    """
    ensure_audited_identity()
    settings = profiles.profile_settings(profile, node_count=max(1, _node_count()))
    wanted = {
        "kube-apiserver": apiserver_command(settings),
        "kube-controller-manager": controller_manager_command(settings),
        "kwok": kwok_command(settings, profile),
    }
    if any(running_command(c) != wanted[c] for c in wanted):
        # Quiet the heartbeats first: an apiserver restarting under 1000 nodes' writes may not
        # answer /readyz for minutes on a busy machine.
        stop("kube-controller-manager")
        stop("kwok")
        if running_command("kube-apiserver") != wanted["kube-apiserver"]:
            stop("kube-apiserver")
            start("kube-apiserver", wanted["kube-apiserver"])
        wait_ready()
        leases = coordination()
        leases.delete_collection_namespaced_lease("kube-node-lease")
        start("kwok", wanted["kwok"])
        wait_leases(_node_count())
        start("kube-controller-manager", wanted["kube-controller-manager"])
    (STATE / "profile").write_text(profile)
    say(f"profile {profile}: {json.dumps(settings)}")


def coordination():
    from kubernetes import client, config

    return client.CoordinationV1Api(config.new_client_from_config(config_file=kubeconfig()))


def wait_leases(count: int, timeout: float = 300) -> None:
    """Until kwok holds a lease for each of the count nodes."""
    leases = coordination()
    deadline = time.monotonic() + timeout
    while True:
        held = sum(1 for lease in leases.list_namespaced_lease("kube-node-lease").items
                   if lease.metadata.name.startswith(NODE_PREFIX) and lease.spec.holder_identity)
        if held >= count or time.monotonic() > deadline:
            say(f"kwok holds {held}/{count} node leases")
            return
        time.sleep(1)


def _node_count() -> int:
    path = STATE / "nodes"
    return int(path.read_text()) if path.exists() else 0


def cmd_up(count: int, profile: str) -> None:
    for binary in (ETCD, K8S_BIN / "kube-apiserver", K8S_BIN / "kube-controller-manager", KWOK):
        if not binary.exists():
            raise SystemExit(f"scale: {binary} is missing; run lab/scripts/build-k8s.sh")
    STATE.mkdir(parents=True, exist_ok=True)
    ensure_pki()
    if not running_command("etcd"):
        ETCD_DATA.mkdir(parents=True, exist_ok=True, mode=0o700)
        start("etcd", etcd_command())
    (STATE / "nodes").write_text(str(count))
    settings = profiles.profile_settings(profile, node_count=count)
    ensure_audited_identity()
    if not running_command("kube-apiserver"):
        start("kube-apiserver", apiserver_command(settings))
    wait_ready()
    create_nodes(count)
    apply_profile(profile)
    wait_nodes_ready(count)
    say(f"up: {count} nodes, profile {profile}, kubeconfig {kubeconfig()}")


def cmd_down() -> None:
    for component in reversed(COMPONENTS):
        stop(component)
    subprocess.run(["rm", "-rf", str(ETCD_DATA)], check=True)
    for name in ("nodes", "profile", "pids.json"):
        (STATE / name).unlink(missing_ok=True)
    say("down")


def cmd_status() -> int:
    up = 0
    for component in COMPONENTS:
        entry = _pids().get(component)
        alive = bool(entry) and _alive(entry["pid"])
        up += alive
        print(f"{component}: {'running pid ' + str(entry['pid']) if alive else 'stopped'}")
    profile = STATE / "profile"
    print(f"nodes: {_node_count()}  profile: {profile.read_text() if profile.exists() else '-'}")
    return 0 if up == len(COMPONENTS) else 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up")
    up.add_argument("nodes", type=int)
    up.add_argument("--profile", default="kubernetes-default", choices=profiles.ALL_PROFILES)
    profile = sub.add_parser("profile")
    profile.add_argument("name", choices=profiles.ALL_PROFILES)
    pods = sub.add_parser("pods")
    pods.add_argument("count", type=int)
    pods.add_argument("--node", default=None)
    pods.add_argument("--on-node", type=int, default=0)
    sub.add_parser("down")
    sub.add_parser("status")
    args = parser.parse_args()
    if args.command == "up":
        cmd_up(args.nodes, args.profile)
    elif args.command == "profile":
        apply_profile(args.name)
    elif args.command == "pods":
        create_pods(args.count, _node_count(), args.node, args.on_node)
    elif args.command == "down":
        cmd_down()
    else:
        return cmd_status()
    return 0


if __name__ == "__main__":
    sys.exit(main())
