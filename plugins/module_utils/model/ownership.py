# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who else owns the settings a profile tunes: the plan's refusals and notes before anything is written.

- kubelet flags (command line, KUBELET_EXTRA_ARGS files, systemd drop-ins, RKE2/k3s kubelet-arg) override the
  config file tune-failover writes: refused, naming the file and line (failover_node_info ``overrides``); so is a
  kubelet that reads another config file (``--config``, kubespray's /etc/kubernetes/kubelet-config.yaml);
- kubespray writes the same settings from its inventory variables on its next run: the plan names the variables
  and the values that keep the tuning (docs/distributions.md);
- a managed control plane (EKS, GKE, AKS) has no controller-manager or API server flags anyone can set: refused.

Pure: reads what failover_node_info returned per host, the profile, and Node objects as the API returns them.
"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import NAMES as DISTRIBUTION_NAMES
from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import distribution
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.durations import parse_duration
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import APISERVER, CONTROLLER_MANAGER, KUBELET

# kubespray's inventory variables for the settings a profile tunes (kubespray docs/operations/large-deployments.md,
# docs/advanced/kubernetes-reliability.md; defaults in roles/kubernetes/node and roles/kubernetes/control-plane).
KUBESPRAY_VARIABLES = (
    (KUBELET, "nodeStatusUpdateFrequency", "kubelet_status_update_frequency"),
    (CONTROLLER_MANAGER, "node-monitor-grace-period", "kube_controller_node_monitor_grace_period"),
    (CONTROLLER_MANAGER, "node-monitor-period", "kube_controller_node_monitor_period"),
    (APISERVER, "default-not-ready-toleration-seconds", "kube_apiserver_pod_eviction_not_ready_timeout_seconds"),
    (APISERVER, "default-unreachable-toleration-seconds", "kube_apiserver_pod_eviction_unreachable_timeout_seconds"),
)
# The rest goes through kubespray's free-form maps: KubeletConfiguration fields and controller-manager flags.
KUBESPRAY_EXTRA = {KUBELET: "kubelet_config_extra_args", CONTROLLER_MANAGER: "kube_kubeadm_controller_extra_args",
                   APISERVER: "kube_kubeadm_apiserver_extra_args"}

# What the API shows of a managed control plane on every Node: the cloud's providerID scheme and the provider's own
# mark (EKS and GKE build their kubelets with a version suffix, v1.31.4-eks-<hash> and v1.31.5-gke.1234000;
# AKS labels every node kubernetes.azure.com/cluster).
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
MANAGED = (
    ("EKS", "aws://", lambda version, labels: "-eks-" in version),
    ("GKE", "gce://", lambda version, labels: "-gke." in version),
    ("AKS", "azure://", lambda version, labels: "kubernetes.azure.com/cluster" in labels),
)


def _same(flag_value, tuned_value) -> bool:
    """A flag giving the value the profile sets (durations compared as seconds: 10s is 10.0s)."""
    try:
        return parse_duration(flag_value) == parse_duration(tuned_value)
    except (ProfileError, TypeError, ValueError):
        return str(flag_value) == str(tuned_value)


def override_refusal(node_infos, profile) -> str:
    """The refusal when a kubelet flag overrides a setting the profile tunes with another value; "" when none does.

    A flag that gives the profile's own value undoes nothing now; the audit still reports it (model/risks.py)."""
    tuned = ((profile or {}).get("settings") or {}).get(KUBELET) or {}
    found = []
    for host, info in sorted((node_infos or {}).items()):
        for entry in (info or {}).get("overrides") or []:
            if entry.get("setting") in tuned and not _same(entry["value"], tuned[entry["setting"]]):
                found.append(f"{host}: {entry['flag']}={entry['value']} in {entry['source']} overrides "
                             f"{entry['setting']} (the profile sets {tuned[entry['setting']]})")
    if not found:
        return ""
    return ("kubelet flags override settings this profile tunes: a flag wins over the kubelet config file "
            "tune-failover writes, so the tune would not apply. " + "; ".join(found) + ". Remove the flag (kubeadm: "
            "from KUBELET_EXTRA_ARGS; RKE2/k3s: from kubelet-arg) and run again. Nothing was changed.")


def config_refusal(node_infos) -> str:
    """The refusal when a running kubelet reads another config file than the one tune-failover writes; "" otherwise."""
    found = []
    for host, info in sorted((node_infos or {}).items()):
        info = info or {}
        config = (info.get("kubelet_process") or {}).get("config") or ""
        if not config or info.get("distribution") not in DISTRIBUTION_NAMES:
            continue
        expected = distribution(info["distribution"]).kubelet_config
        if expected and config != expected:
            found.append(f"{host}: the running kubelet reads --config={config}, tune-failover writes {expected}")
    if not found:
        return ""
    return ("the kubelet reads another config file than the one tune-failover writes, so the tune would not apply. "
            + "; ".join(found) + ". Set the values where that file comes from (kubespray: its inventory variables, "
            "docs/distributions.md), or point the kubelet at the distribution's file. Nothing was changed.")


def _value(value):
    """A profile value as kubespray's variable takes it (toleration seconds are whole numbers)."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def kubespray_variables(profile) -> dict:
    """kubespray inventory variables and values that keep this profile on kubespray's next run."""
    settings = (profile or {}).get("settings") or {}
    named = {(section, name) for section, name, _variable in KUBESPRAY_VARIABLES}
    found = {variable: _value(settings[section][name]) for section, name, variable in KUBESPRAY_VARIABLES
             if (settings.get(section) or {}).get(name) is not None}
    for section, variable in KUBESPRAY_EXTRA.items():
        extra = {name: _value(value) for name, value in (settings.get(section) or {}).items()
                 if (section, name) not in named and value is not None}
        if extra:
            found[variable] = extra
    return found


def kubespray_note(node_infos, profile) -> list:
    """The plan's lines for a kubespray-managed cluster ([] when no host shows kubespray's kubelet.env)."""
    hosts = [host for host, info in sorted((node_infos or {}).items()) if (info or {}).get("kubespray")]
    if not hosts:
        return []
    lines = [f"kubespray manages this cluster ({', '.join(hosts[:3])}{' ...' if len(hosts) > 3 else ''}: "
             "/etc/kubernetes/kubelet.env): its next run writes its own values back. Put these into its inventory "
             "(group_vars/k8s_cluster) to keep this tuning (docs/distributions.md, kubespray):"]
    lines += [f"  {variable}: {value}" for variable, value in kubespray_variables(profile).items()]
    return lines


def managed_control_plane(nodes) -> str:
    """The refusal for a managed control plane, "" otherwise: every Node carries one provider's mark and none is a
    control-plane node (label node-role.kubernetes.io/control-plane; a managed control plane runs outside the cluster)."""
    nodes = [node for node in nodes or [] if isinstance(node, dict)]
    if any(CONTROL_PLANE_LABEL in ((node.get("metadata") or {}).get("labels") or {}) for node in nodes):
        return ""
    for provider, scheme, marked in MANAGED:
        shown = []
        for node in nodes:
            metadata, status = node.get("metadata") or {}, node.get("status") or {}
            version = str((status.get("nodeInfo") or {}).get("kubeletVersion") or "")
            provider_id = str((node.get("spec") or {}).get("providerID") or "")
            if not (provider_id.startswith(scheme) and marked(version, metadata.get("labels") or {})):
                break
            shown.append(f"Node {metadata.get('name')}: providerID {scheme}..., kubelet {version}")
        else:
            if shown:
                return (f"this cluster's control plane is managed by {provider} ({shown[0]}): its controller-manager "
                        "and API server flags cannot be set, and nodeguard.failover tunes only clusters whose control "
                        "plane you run (kubeadm, RKE1, RKE2, k3s; docs/distributions.md). Nothing was changed.")
    return ""


def plan_checks(node_infos, profile) -> dict:
    """What the plan refuses (``refusal``, "" when nothing) and prints (``notes``) once the nodes were read."""
    refusal = " ".join(text for text in (config_refusal(node_infos), override_refusal(node_infos, profile)) if text)
    return {"refusal": refusal, "notes": kubespray_note(node_infos, profile)}
