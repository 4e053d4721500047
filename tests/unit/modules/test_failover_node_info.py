"""nodeguard.failover.failover_node_info against fake host trees (root option)."""

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
