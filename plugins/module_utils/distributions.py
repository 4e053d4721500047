# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection knows about each Kubernetes distribution and kubeadm API, in one table each.

``DISTRIBUTIONS`` is the one registry of distributions. The model, the file readers (failover_node_info),
the renderers and the roles (through the ``failover_distribution`` filter) read it; nothing else names a
path, a service or a marker file. The lists that cannot import it (role argument_specs, module
DOCUMENTATION, the table in docs/distributions.md) are generated from it by scripts/render-distributions.py,
and tests/unit/model/test_distribution_lists.py fails when any list disagrees with it.
docs/architecture.md ("Add a distribution") says how to add one.
"""

from __future__ import annotations

from typing import NamedTuple

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError


class Distribution(NamedTuple):
    name: str
    # How the component flags are stored, which names the renderer and the readers that handle them:
    # "kubeadm" (static pod manifests + a kubelet config file), "rancher" (config.yaml + config.yaml.d,
    # kubelet drop-ins), "rke1" (cluster.yml on the config host). Role control_plane_flags runs tasks/<config_format>.yml.
    config_format: str
    # Files or directories whose presence says "this host runs it" (absolute, before any root prefix).
    markers: tuple
    # The kubelet's kubeconfig on a node (which API server address the kubelet uses).
    kubelet_kubeconfig: str
    # systemd units that run the kubelet on a server (control plane) and on an agent (worker); "" = none (RKE1: a container).
    server_service: str
    agent_service: str
    # Where the component flags live on a node: kubeadm static pods, RKE2/k3s config.yaml (+ config.yaml.d), RKE1 cluster.yml.
    manifests_dir: str
    config_dir: str
    kubelet_config: str
    kubelet_dropin_dir: str
    # CA that signed the kube-apiserver serving certificate, for the health check.
    apiserver_ca: str
    # A directory only servers (control-plane nodes) have; "" where the flags themselves tell.
    server_marker: str
    # A file the kubelet logs to besides the journal of its unit (RKE2); "" = the journal only.
    kubelet_log_file: str = ""


DISTRIBUTIONS = {
    "kubeadm": Distribution(
        name="kubeadm",
        config_format="kubeadm",
        markers=("/etc/kubernetes/manifests/kube-apiserver.yaml", "/etc/kubernetes/manifests/kube-controller-manager.yaml",
                 "/etc/kubernetes/kubelet.conf"),
        kubelet_kubeconfig="/etc/kubernetes/kubelet.conf",
        server_service="kubelet",
        agent_service="kubelet",
        manifests_dir="/etc/kubernetes/manifests",
        config_dir="",
        kubelet_config="/var/lib/kubelet/config.yaml",
        kubelet_dropin_dir="",
        apiserver_ca="/etc/kubernetes/pki/ca.crt",
        server_marker="",
    ),
    "rke1": Distribution(
        name="rke1",
        config_format="rke1",
        # The nodes carry only the kube-node kubeconfig; the settings are in cluster.yml on the config host.
        markers=("/etc/kubernetes/ssl/kubecfg-kube-node.yaml",),
        kubelet_kubeconfig="/etc/kubernetes/ssl/kubecfg-kube-node.yaml",
        server_service="",
        agent_service="",
        manifests_dir="",
        config_dir="",
        kubelet_config="",
        kubelet_dropin_dir="",
        apiserver_ca="/etc/kubernetes/ssl/kube-ca.pem",
        server_marker="",
    ),
    "rke2": Distribution(
        name="rke2",
        config_format="rancher",
        markers=("/etc/rancher/rke2", "/var/lib/rancher/rke2"),
        kubelet_kubeconfig="/var/lib/rancher/rke2/agent/kubelet.kubeconfig",
        server_service="rke2-server",
        agent_service="rke2-agent",
        manifests_dir="",
        config_dir="/etc/rancher/rke2",
        kubelet_config="",
        kubelet_dropin_dir="/var/lib/rancher/rke2/agent/etc/kubelet.conf.d",
        apiserver_ca="/var/lib/rancher/rke2/server/tls/server-ca.crt",
        server_marker="/var/lib/rancher/rke2/server",
        kubelet_log_file="/var/lib/rancher/rke2/agent/logs/kubelet.log",
    ),
    "k3s": Distribution(
        name="k3s",
        config_format="rancher",
        markers=("/etc/rancher/k3s", "/var/lib/rancher/k3s"),
        kubelet_kubeconfig="/var/lib/rancher/k3s/agent/kubelet.kubeconfig",
        server_service="k3s",
        agent_service="k3s-agent",
        manifests_dir="",
        config_dir="/etc/rancher/k3s",
        kubelet_config="",
        kubelet_dropin_dir="/var/lib/rancher/k3s/agent/etc/kubelet.conf.d",
        apiserver_ca="/var/lib/rancher/k3s/server/tls/server-ca.crt",
        server_marker="/var/lib/rancher/k3s/server",
    ),
}
NAMES = tuple(DISTRIBUTIONS)
RANCHER = tuple(name for name, entry in DISTRIBUTIONS.items() if entry.config_format == "rancher")


def listed(names) -> str:
    """Names for a message: "kubeadm, rke1, rke2 or k3s"."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def distribution(name) -> Distribution:
    """The table entry, or ProfileError("unknown-distribution")."""
    if name not in DISTRIBUTIONS:
        raise ProfileError("unknown-distribution", f"unknown distribution {name!r}; choose one of: {', '.join(NAMES)}")
    return DISTRIBUTIONS[name]


class KubeadmApi(NamedTuple):
    api_version: str
    first: tuple  # first kubeadm minor that reads it
    last: tuple  # last kubeadm minor that reads it
    written_from: tuple  # kubeadm writes it by default from this minor (until the next one takes over)
    extra_args: str  # "map" ({name: value}) or "list" ([{name, value}])


# Read ranges from kubeadm's scheme (cmd/kubeadm/app/apis/kubeadm/scheme/scheme.go): v1beta2 is still registered
# (deprecated, a warning) in v1.26.15 and gone in v1.27.16; v1beta3 still registered in v1.36.3 and gone in v1.37.2,
# which names it among the old APIs (cmd/kubeadm/app/util/config/common.go validateSupportedVersion).
KUBEADM_APIS = (
    KubeadmApi("kubeadm.k8s.io/v1beta2", (1, 15), (1, 26), (1, 15), "map"),
    KubeadmApi("kubeadm.k8s.io/v1beta3", (1, 22), (1, 36), (1, 22), "map"),
    KubeadmApi("kubeadm.k8s.io/v1beta4", (1, 31), (1, 99), (1, 31), "list"),
)
KUBEADM_API_BY_VERSION = {api.api_version: api for api in KUBEADM_APIS}


def kubeadm_api_written(minor: tuple) -> KubeadmApi:
    """The ClusterConfiguration API kubeadm of this (major, minor) writes."""
    return [api for api in KUBEADM_APIS if api.written_from <= minor][-1]


def kubeadm_api(api_version) -> KubeadmApi | None:
    """The table entry of a ClusterConfiguration apiVersion, None when the collection does not know it."""
    return KUBEADM_API_BY_VERSION.get(api_version)
