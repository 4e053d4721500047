# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that merge failover settings into the YAML text kept in cluster ConfigMaps.

kube-system/kubeadm-config (key ClusterConfiguration) and kube-system/kubelet-config (key kubelet)
hold YAML documents as strings; these filters return the new string, unchanged byte for byte
when nothing needs to change, so kubernetes.core.k8s reports no change on a second run.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError, ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import (
    kubeadm_accepts_api,
    kubeadm_api_version,
    parse_version,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubeadm_config, kubelet, yamldoc


def _with_gates(flags, gates, where: str) -> dict:
    flags = dict(flags or {})
    if gates:
        existing = flags.get("feature-gates")
        if isinstance(existing, str):
            raise FileEditError(f"{where}: give feature gates either in feature-gates or as a mapping, not both")
        flags["feature-gates"] = dict(existing or {}, **gates)
    return flags


def kubeadm_cluster_config_merge(cluster_configuration_yaml, controller_manager_flags=None, apiserver_flags=None,
                                 controller_manager_feature_gates=None, kubernetes_version=None):
    """New ClusterConfiguration text with the flags merged into controllerManager/apiServer extraArgs."""
    source = "ClusterConfiguration"
    try:
        document = yamldoc.load(_text(cluster_configuration_yaml, source), source)
        if kubernetes_version:
            _check_api(document, kubernetes_version, source)
        flags = _with_gates(controller_manager_flags, controller_manager_feature_gates, source)
        rendered = kubeadm_config.render(document, flags, apiserver_flags, source)
        if not rendered.changes:
            return cluster_configuration_yaml
        return yamldoc.dump(rendered.document, cluster_configuration_yaml, source)
    except FileEditError as error:
        raise AnsibleFilterError(str(error)) from error


def kubelet_config_merge(kubelet_yaml, settings):
    """New KubeletConfiguration text with ``settings`` (camelCase fields, None removes) applied."""
    source = "kubelet-config"
    try:
        document = yamldoc.load(_text(kubelet_yaml, source), source)
        rendered = kubelet.render(document, settings, source)
        if not rendered.changes:
            return kubelet_yaml
        return yamldoc.dump(rendered.document, kubelet_yaml, source)
    except FileEditError as error:
        raise AnsibleFilterError(str(error)) from error


def kubelet_settings_to_flags(settings, skip_unsupported=False):
    """KubeletConfiguration fields -> kubelet command-line flags (for RKE1 extra_args, RKE2/k3s kubelet-arg)."""
    try:
        return kubelet.settings_to_flags(settings, "kubelet settings", skip_unsupported=bool(skip_unsupported))
    except FileEditError as error:
        raise AnsibleFilterError(str(error)) from error


def _check_api(document, kubernetes_version, source: str) -> None:
    """Refuse a ClusterConfiguration apiVersion the cluster's kubeadm does not read."""
    try:
        version = parse_version(kubernetes_version)
    except ProfileError as error:
        raise FileEditError(f"{source}: {error}") from error
    api_version = document.get("apiVersion") if isinstance(document, dict) else None
    if not kubeadm_accepts_api(version, api_version):
        raise FileEditError(f"{source}: kubeadm {version} does not read apiVersion {api_version!r} "
                            f"(it writes {kubeadm_api_version(version)})")


def _text(value, source: str) -> str:
    if not isinstance(value, str):
        raise FileEditError(f"{source}: expected the YAML text of the ConfigMap key, got {type(value).__name__}")
    return value


class FilterModule:
    """nodeguard.failover filters for the kubeadm-config and kubelet-config ConfigMaps."""

    def filters(self):
        return {
            "kubeadm_cluster_config_merge": kubeadm_cluster_config_merge,
            "kubelet_config_merge": kubelet_config_merge,
            "kubelet_settings_to_flags": kubelet_settings_to_flags,
        }
