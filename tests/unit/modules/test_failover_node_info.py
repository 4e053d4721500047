"""nodeguard.failover.failover_node_info against fake host trees (root option)."""

import json
import pathlib

import pytest
from ansible_collections.nodeguard.failover.plugins.modules import failover_node_info

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "renderers" / "fixtures"


def put(root: pathlib.Path, path: str, text: str) -> pathlib.Path:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


@pytest.fixture
def kubeadm_root(tmp_path):
    root = tmp_path / "kubeadm"
    for name in ("kube-controller-manager.yaml", "kube-apiserver.yaml"):
        put(root, "/etc/kubernetes/manifests/" + name, (FIXTURES / name).read_text())
    put(root, "/var/lib/kubelet/config.yaml", (FIXTURES / "kubelet-config.yaml").read_text())
    put(root, "/etc/kubernetes/kubelet.conf", "apiVersion: v1\nkind: Config\n")
    return root


@pytest.fixture
def rke2_root(tmp_path):
    root = tmp_path / "rke2"
    put(root, "/etc/rancher/rke2/config.yaml", (FIXTURES / "rke2-config.yaml").read_text()
        + "kubelet-arg+:\n  - config-dir=/etc/rancher/rke2/kubelet.conf.d\n")
    put(root, "/etc/rancher/rke2/config.yaml.d/50-nodeguard.yaml",
        "kube-controller-manager-arg+:\n  - node-monitor-grace-period=20s\n"
        "kube-apiserver-arg:\n  - default-unreachable-toleration-seconds=30\n")
    put(root, "/etc/rancher/rke2/kubelet.conf.d/50-nodeguard.conf",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nnodeLeaseDurationSeconds: 20\n")
    (root / "var/lib/rancher/rke2/server").mkdir(parents=True)
    return root


def test_kubeadm_control_plane(run_module, kubeadm_root):
    result = run_module(failover_node_info, {"root": str(kubeadm_root)})
    assert not result["failed"], result
    assert result["changed"] is False
    assert result["distribution"] == "kubeadm" and result["role"] == "control_plane"
    settings = result["settings"]
    assert settings["kube_controller_manager"]["leader-elect"] == "true"
    assert "feature-gates" not in settings["kube_controller_manager"]
    assert settings["kube_controller_manager_feature_gates"] == {"RotateKubeletServerCertificate": True, "SomeAlphaGate": False}
    assert settings["kube_apiserver"]["secure-port"] == "6443"
    assert settings["kubelet"] == {"shutdownGracePeriod": "30s", "shutdownGracePeriodCriticalPods": "10s",
                                   "featureGates": {"GracefulNodeShutdown": True}}
    assert set(settings["sysctl"]) == {"net.ipv4.tcp_retries2", "net.ipv4.tcp_keepalive_time",
                                       "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
    assert settings["sysctl"]["net.ipv4.tcp_retries2"] == pathlib.Path("/proc/sys/net/ipv4/tcp_retries2").read_text().strip()
    assert len(result["files"]) == 3 and result["missing"] == []


def test_kubeadm_worker_has_no_manifests(run_module, kubeadm_root):
    for name in ("kube-controller-manager.yaml", "kube-apiserver.yaml"):
        (kubeadm_root / "etc/kubernetes/manifests" / name).unlink()
    result = run_module(failover_node_info, {"root": str(kubeadm_root), "distribution": "kubeadm"})
    assert result["role"] == "worker" and result["settings"]["kube_apiserver"] == {}
    assert len(result["missing"]) == 2


def test_rke2_merges_config_and_drop_ins(run_module, rke2_root):
    result = run_module(failover_node_info, {"root": str(rke2_root)})
    assert result["distribution"] == "rke2" and result["role"] == "control_plane", result
    settings = result["settings"]
    assert settings["kube_controller_manager"]["node-monitor-grace-period"] == "20s"  # appended, last wins
    assert settings["kube_controller_manager"]["bind-address"] == "127.0.0.1"
    assert settings["kube_apiserver"] == {"default-unreachable-toleration-seconds": "30"}  # plain key replaced
    assert settings["kubelet"] == {"nodeLeaseDurationSeconds": 20}
    assert result["files"][-1].endswith("kubelet.conf.d/50-nodeguard.conf")


def test_rke1_reads_cluster_yml(run_module, tmp_path, copy_fixture):
    path = copy_fixture("rke1-cluster.yml", "cluster.yml")
    result = run_module(failover_node_info, {"root": str(tmp_path / "empty"), "distribution": "rke1",
                                             "rke1_cluster_config": str(path)})
    assert result["distribution"] == "rke1" and result["role"] == "config_host", result
    assert result["settings"]["kube_apiserver"]["audit-log-maxage"] == "30"
    missing = run_module(failover_node_info, {"root": str(tmp_path / "empty"), "distribution": "rke1"})
    assert missing["failed"] and "does not look like rke1" in missing["msg"]


@pytest.mark.parametrize("declared", ["rke2", "k3s", "rke1"])
def test_declared_distribution_must_match(run_module, kubeadm_root, declared):
    result = run_module(failover_node_info, {"root": str(kubeadm_root), "distribution": declared})
    assert result["failed"]
    assert f"this host does not look like {declared}" in result["msg"] and "it looks like kubeadm" in result["msg"]


def test_unknown_or_ambiguous_hosts_fail(run_module, tmp_path, kubeadm_root):
    empty = run_module(failover_node_info, {"root": str(tmp_path / "nothing")})
    assert empty["failed"] and "does not look like kubeadm, rke1, rke2 or k3s" in empty["msg"]
    put(kubeadm_root, "/etc/rancher/k3s/config.yaml", "")
    both = run_module(failover_node_info, {"root": str(kubeadm_root)})
    assert both["failed"] and "looks like kubeadm and k3s" in both["msg"]
    unknown = run_module(failover_node_info, {"root": str(kubeadm_root), "distribution": "openshift"})
    assert unknown["failed"] and "value of distribution must be one of" in unknown["msg"]


def test_malformed_manifest_fails_clearly(run_module, kubeadm_root):
    (kubeadm_root / "etc/kubernetes/manifests/kube-apiserver.yaml").write_text("spec: [\n")
    result = run_module(failover_node_info, {"root": str(kubeadm_root)})
    assert result["failed"] and "kube-apiserver.yaml is not valid YAML" in result["msg"]


def test_real_ansible_run(ansible_adhoc, kubeadm_root):
    result = ansible_adhoc("failover_node_info", {"root": str(kubeadm_root)}, check=True)
    assert result["distribution"] == "kubeadm", result
    assert result["settings"]["kube_controller_manager_feature_gates"]["SomeAlphaGate"] is False


def test_kubeadm_control_plane_says_the_version_its_apiserver_image_names(run_module, kubeadm_root):
    assert run_module(failover_node_info, {"root": str(kubeadm_root)})["kubernetes_version"] == "1.35.4"
    manifest = kubeadm_root / "etc/kubernetes/manifests/kube-apiserver.yaml"
    text = manifest.read_text()
    for image, version in [
        ("registry.example:5000/kube-apiserver:v1.36.1@sha256:" + "a" * 64, "1.36.1"),  # a registry port, a digest
        ("registry.example:5000/kube-apiserver", ""),  # no tag: the colon is the registry's port
        ("registry.k8s.io/kube-apiserver@sha256:" + "b" * 64, ""),  # a digest only
        ("registry.example/kube-apiserver:stable", ""),  # a tag that names no version
    ]:
        manifest.write_text(text.replace("registry.k8s.io/kube-apiserver:v1.35.4", image))
        assert run_module(failover_node_info, {"root": str(kubeadm_root)})["kubernetes_version"] == version, image


def test_a_worker_and_rke2_say_no_version(run_module, kubeadm_root, rke2_root):
    for name in ("kube-controller-manager.yaml", "kube-apiserver.yaml"):
        (kubeadm_root / "etc/kubernetes/manifests" / name).unlink()
    assert run_module(failover_node_info, {"root": str(kubeadm_root), "distribution": "kubeadm"})["kubernetes_version"] == ""
    assert run_module(failover_node_info, {"root": str(rke2_root)})["kubernetes_version"] == ""


# The files kubeadm's packages and `kubeadm init` leave on a node (kubernetes.io, "Configuring each kubelet in your
# cluster using kubeadm", section "The kubelet drop-in file for systemd": 10-kubeadm.conf sources kubeadm-flags.env and
# /etc/default/kubelet (DEB) or /etc/sysconfig/kubelet (RPM); KUBELET_EXTRA_ARGS is "the last resort" for overrides).
TEN_KUBEADM_CONF = """\
# Note: This dropin only works with kubeadm and kubelet v1.11+
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args as a last resort.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
"""
KUBEADM_FLAGS_ENV = ('KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock '
                     '--pod-infra-container-image=registry.k8s.io/pause:3.10"\n')
# What the kubelet_heartbeat role writes: the HTTP/2 health check environment of the kubelet unit.
NODEGUARD_DROPIN = '[Service]\nEnvironment="HTTP2_PING_TIMEOUT_SECONDS=1" "HTTP2_READ_IDLE_TIMEOUT_SECONDS=1"\n'


def process(root, pid: int, argv: list, environ: dict, unit: str, parent: int = 1) -> None:
    """A /proc/<pid> under root as Linux shows it: NUL-separated cmdline and environ, stat, the unit's cgroup (v2)."""
    put(root, f"/proc/{pid}/cmdline", "\0".join(argv) + "\0")
    put(root, f"/proc/{pid}/environ", "".join(f"{name}={value}\0" for name, value in environ.items()))
    put(root, f"/proc/{pid}/stat", f"{pid} ({pathlib.Path(argv[0]).name[:15]}) S {parent} {pid} {pid} 0 -1\n")
    put(root, f"/proc/{pid}/cgroup", f"0::/system.slice/{unit}.service\n")


@pytest.fixture
def kubeadm_node(kubeadm_root):
    put(kubeadm_root, "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf", TEN_KUBEADM_CONF)
    put(kubeadm_root, "/etc/systemd/system/kubelet.service.d/90-nodeguard-failover.conf", NODEGUARD_DROPIN)
    put(kubeadm_root, "/var/lib/kubelet/kubeadm-flags.env", KUBEADM_FLAGS_ENV)
    put(kubeadm_root, "/etc/default/kubelet", "KUBELET_EXTRA_ARGS=--node-status-update-frequency=10s --v=2\n")
    argv = ["/usr/bin/kubelet", "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
            "--kubeconfig=/etc/kubernetes/kubelet.conf", "--config=/var/lib/kubelet/config.yaml",
            "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
            "--node-status-update-frequency", "10s", "--v=2"]
    process(kubeadm_root, 4242, argv, {"PATH": "/usr/bin", "HTTP2_READ_IDLE_TIMEOUT_SECONDS": "1",
                                       "HTTP2_PING_TIMEOUT_SECONDS": "1", "AWS_SECRET_ACCESS_KEY": "s3cr3t"}, "kubelet")
    process(kubeadm_root, 77, ["/usr/bin/containerd"], {"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "99"}, "containerd")
    return kubeadm_root


def test_kubeadm_reads_the_running_kubelets_environment_and_flags(run_module, kubeadm_node):
    """Issue 34: the audit never read the live kubelet; flags in KUBELET_EXTRA_ARGS override the config file."""
    result = run_module(failover_node_info, {"root": str(kubeadm_node)})
    assert not result["failed"], result
    assert result["kubelet_process"] == {
        "pid": 4242, "flags": {"node-status-update-frequency": "10s"}, "config": "/var/lib/kubelet/config.yaml",
        "environment": {"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "1", "HTTP2_PING_TIMEOUT_SECONDS": "1"}}
    assert result["settings"]["kubelet_environment"] == result["kubelet_process"]["environment"]
    # The flag wins over the config file, as in the kubelet.
    assert result["settings"]["kubelet"]["nodeStatusUpdateFrequency"] == "10s"
    assert result["overrides"] == [{"setting": "nodeStatusUpdateFrequency", "flag": "--node-status-update-frequency",
                                    "value": "10s", "source": f"{kubeadm_node}/etc/default/kubelet:1"}]
    assert "s3cr3t" not in json.dumps(result) and "PATH" not in json.dumps(result["kubelet_process"])


def test_a_flag_only_on_the_command_line_names_the_command_line(run_module, kubeadm_node):
    (kubeadm_node / "etc/default/kubelet").write_text("KUBELET_EXTRA_ARGS=--v=2\n")
    result = run_module(failover_node_info, {"root": str(kubeadm_node)})
    assert result["overrides"] == [{"setting": "nodeStatusUpdateFrequency", "flag": "--node-status-update-frequency",
                                    "value": "10s", "source": f"{kubeadm_node}/proc/4242/cmdline"}]


def test_a_flag_in_a_file_is_an_override_before_the_kubelet_restarts(run_module, kubeadm_node):
    (kubeadm_node / "proc/4242/cmdline").write_text("/usr/bin/kubelet\0--config=/var/lib/kubelet/config.yaml\0")
    (kubeadm_node / "etc/default/kubelet").write_text("KUBELET_EXTRA_ARGS=--v=2\n")
    put(kubeadm_node, "/etc/systemd/system/kubelet.service.d/20-status.conf",
        '[Service]\n# Environment="KUBELET_EXTRA_ARGS=--node-status-update-frequency=1m"\n'
        'Environment="KUBELET_EXTRA_ARGS=--node-status-update-frequency 20s --feature-gates=KubeletTracing=false"\n')
    result = run_module(failover_node_info, {"root": str(kubeadm_node)})
    assert [(o["flag"], o["value"], o["source"]) for o in result["overrides"]] == [
        ("--node-status-update-frequency", "20s", f"{kubeadm_node}/etc/systemd/system/kubelet.service.d/20-status.conf:3")]
    assert result["kubelet_process"]["flags"] == {}


def test_no_running_kubelet_reads_no_environment(run_module, kubeadm_root):
    result = run_module(failover_node_info, {"root": str(kubeadm_root)})
    assert result["kubelet_process"] == {"pid": None, "flags": {}, "config": "", "environment": {}}
    assert "kubelet_environment" not in result["settings"] and result["overrides"] == []


def test_rke2_reads_the_kubelet_child_of_rke2_and_its_kubelet_arg(run_module, rke2_root):
    # RKE2 runs the kubelet as a child of the rke2 process in the rke2-server unit, with every kubelet-arg as a flag
    # (docs.rke2.io, "Configuration Options": kubelet-arg).
    (rke2_root / "etc/rancher/rke2/config.yaml.d/60-site.yaml").write_text(
        "kubelet-arg+:\n  - node-status-update-frequency=4s\n")
    process(rke2_root, 900, ["/usr/local/bin/rke2", "server"], {"HTTP2_PING_TIMEOUT_SECONDS": "2"}, "rke2-server")
    process(rke2_root, 950, ["/var/lib/rancher/rke2/bin/kubelet", "--config-dir=/etc/rancher/rke2/kubelet.conf.d",
                             "--node-status-update-frequency=4s"],
            {"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "2", "HTTP2_PING_TIMEOUT_SECONDS": "2"}, "rke2-server", parent=900)
    result = run_module(failover_node_info, {"root": str(rke2_root)})
    assert result["kubelet_process"]["pid"] == 950
    assert result["settings"]["kubelet_environment"] == {"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "2",
                                                         "HTTP2_PING_TIMEOUT_SECONDS": "2"}
    assert result["overrides"] == [{"setting": "nodeStatusUpdateFrequency", "flag": "--node-status-update-frequency",
                                    "value": "4s", "source": f"{rke2_root}/etc/rancher/rke2/config.yaml.d/60-site.yaml:2"}]


def test_k3s_runs_the_kubelet_inside_the_k3s_process(tmp_path, run_module):
    root = tmp_path / "k3s"
    put(root, "/etc/rancher/k3s/config.yaml", "write-kubeconfig-mode: \"0644\"\n")
    process(root, 300, ["/usr/local/bin/k3s", "server"], {"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "5"}, "k3s")
    process(root, 310, ["containerd"], {}, "k3s", parent=300)
    result = run_module(failover_node_info, {"root": str(root), "distribution": "k3s"})
    assert result["kubelet_process"] == {"pid": 300, "flags": {}, "config": "",
                                         "environment": {"HTTP2_READ_IDLE_TIMEOUT_SECONDS": "5"}}


# kubespray's kubelet.env, which its kubelet.service reads (roles/kubernetes/node/templates/kubelet.env.v1beta1.j2:
# KUBELET_ARGS with --config={{ kube_config_dir }}/kubelet-config.yaml; older releases, kubelet.kubeadm.env.j2, also
# put --node-status-update-frequency={{ kubelet_status_update_frequency }} there).
KUBESPRAY_KUBELET_ENV = """\
KUBE_LOGTOSTDERR="--logtostderr=true"
KUBE_LOG_LEVEL="--v=2"
KUBELET_ADDRESS="--node-ip=10.0.0.21"
KUBELET_HOSTNAME="--hostname-override=node1"
KUBELET_ARGS="--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf \\
--config=/etc/kubernetes/kubelet-config.yaml \\
--kubeconfig=/etc/kubernetes/kubelet.conf \\
--node-status-update-frequency=10s \\
--runtime-cgroups=/system.slice/containerd.service"
"""


def test_a_kubespray_node_says_so_and_its_kubelet_env_flags_are_overrides(run_module, kubeadm_node):
    (kubeadm_node / "etc/default/kubelet").unlink()
    put(kubeadm_node, "/etc/kubernetes/kubelet.env", KUBESPRAY_KUBELET_ENV)
    result = run_module(failover_node_info, {"root": str(kubeadm_node)})
    assert result["kubespray"] is True
    assert result["overrides"] == [{"setting": "nodeStatusUpdateFrequency", "flag": "--node-status-update-frequency",
                                    "value": "10s", "source": f"{kubeadm_node}/etc/kubernetes/kubelet.env:8"}]


def test_a_plain_kubeadm_node_is_not_kubespray(run_module, kubeadm_root):
    assert run_module(failover_node_info, {"root": str(kubeadm_root)})["kubespray"] is False


def test_a_kubelet_that_reads_another_config_file_is_audited_from_that_file(run_module, kubeadm_node):
    """kubespray's kubelet reads /etc/kubernetes/kubelet-config.yaml, not kubeadm's /var/lib/kubelet/config.yaml."""
    put(kubeadm_node, "/etc/kubernetes/kubelet.env", KUBESPRAY_KUBELET_ENV)
    put(kubeadm_node, "/etc/kubernetes/kubelet-config.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\n"
        "kind: KubeletConfiguration\nnodeStatusUpdateFrequency: 4s\nnodeLeaseDurationSeconds: 20\n")
    (kubeadm_node / "etc/default/kubelet").unlink()
    (kubeadm_node / "proc/4242/cmdline").write_text(
        "/usr/local/bin/kubelet\0--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf\0"
        "--config=/etc/kubernetes/kubelet-config.yaml\0--kubeconfig=/etc/kubernetes/kubelet.conf\0")
    result = run_module(failover_node_info, {"root": str(kubeadm_node)})
    assert result["kubelet_process"]["config"] == "/etc/kubernetes/kubelet-config.yaml"
    assert result["settings"]["kubelet"] == {"nodeStatusUpdateFrequency": "4s", "nodeLeaseDurationSeconds": 20}
    assert result["files"][-1] == f"{kubeadm_node}/etc/kubernetes/kubelet-config.yaml"
