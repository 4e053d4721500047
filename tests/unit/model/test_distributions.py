"""module_utils/distributions.py is the one table of distributions and kubeadm APIs; the others read it."""

import os

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils import distributions
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model import profile
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubeadm_config, rancher

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_everyone_names_the_same_distributions():
    assert profile.DISTRIBUTIONS == distributions.NAMES == ("kubeadm", "rke1", "rke2", "k3s")
    assert rancher.DISTRIBUTIONS == distributions.RANCHER
    assert rancher.config_dir("rke2") == distributions.distribution("rke2").config_dir == "/etc/rancher/rke2"


def test_an_unknown_distribution_is_refused_by_name():
    with pytest.raises(ProfileError, match=r"\[unknown-distribution\].*microk8s"):
        distributions.distribution("microk8s")


@pytest.mark.parametrize("minor, api", [((1, 20), "v1beta2"), ((1, 21), "v1beta2"), ((1, 22), "v1beta3"),
                                        ((1, 30), "v1beta3"), ((1, 31), "v1beta4"), ((1, 36), "v1beta4")])
def test_kubeadm_api_written_by_version(minor, api):
    assert distributions.kubeadm_api_written(minor).api_version == "kubeadm.k8s.io/" + api


def test_the_renderer_edits_every_kubeadm_api_in_the_table():
    assert {api.api_version: api.extra_args for api in distributions.KUBEADM_APIS} == kubeadm_config.API_VERSIONS


@pytest.mark.parametrize("path", [
    "roles/failover_audit/vars/main.yml", "roles/kubelet_heartbeat/vars/main.yml", "roles/kubelet_heartbeat/tasks/main.yml",
    "roles/control_plane_flags/tasks/rancher.yml", "roles/control_plane_flags/tasks/kubeadm.yml",
])
def test_roles_take_paths_and_services_from_the_table(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as handle:
        text = handle.read()
    for spelled in ("/var/lib/rancher/", "rke2-agent", "k3s-agent", "kubecfg-kube-node", "/etc/kubernetes/pki/ca.crt",
                    "kubelet.kubeconfig"):
        assert spelled not in text, f"{path} spells {spelled!r}; use the failover_distribution filter"


@pytest.mark.parametrize("minor, api, reads", [
    # kubeadm's scheme: v1beta2 registered (deprecated) in v1.26.15, gone in v1.27.16;
    # v1beta3 registered (deprecated) in v1.36.3, gone in v1.37.2 (an "old API spec" error there).
    ((1, 26), "v1beta2", True), ((1, 27), "v1beta2", False),
    ((1, 36), "v1beta3", True), ((1, 37), "v1beta3", False),
    ((1, 30), "v1beta4", False), ((1, 31), "v1beta4", True), ((1, 37), "v1beta4", True),
])
def test_kubeadm_reads_each_api_until_the_minor_that_drops_it(minor, api, reads):
    entry = distributions.kubeadm_api("kubeadm.k8s.io/" + api)
    assert (entry.first <= minor <= entry.last) is reads
