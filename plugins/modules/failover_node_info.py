# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: failover_node_info
short_description: Read a node's failover settings from its distribution's files and live sysctls
version_added: 0.1.0
description:
  - Detects (or checks) the Kubernetes distribution of the host from the files on it, reads the failover-relevant
    settings from where that distribution keeps them, and returns them in the shape of the
    P(nodeguard.failover.failover_profile#filter) C(settings), plus the live TCP sysctls from C(/proc/sys).
  - "kubeadm: static pod manifests in O(manifests_dir) (control plane) and O(kubelet_config)."
  - "RKE1: C(services.*.extra_args) of the cluster.yml given in O(rke1_cluster_config)."
  - "RKE2 and k3s: C(config.yaml) then C(config.yaml.d/*.yaml) in O(rancher_config_dir), merged the way the
    distribution merges them (a later key replaces, C(key+) appends); kubelet fields also from a kubelet
    C(config) file or C(config-dir) named in C(kubelet-arg)."
  - "The running kubelet: the process of its systemd unit (the one named C(kubelet); RKE2's kubelet child of rke2;
    k3s's own process, which runs the kubelet inside) under C(/proc) of O(root). Its failover flags override the
    config file and are returned as the kubelet settings; of its environment only C(HTTP2_READ_IDLE_TIMEOUT_SECONDS)
    and C(HTTP2_PING_TIMEOUT_SECONDS) are read (no other value is returned: it may be a secret)."
  - "Overrides: every failover flag of the kubelet's command line, or of a file that puts flags there (kubeadm's
    C(/var/lib/kubelet/kubeadm-flags.env), C(/etc/default/kubelet), C(/etc/sysconfig/kubelet), kubespray's
    C(/etc/kubernetes/kubelet.env), the kubelet unit and its systemd drop-ins, RKE2/k3s C(kubelet-arg)), with its
    file and line."
  - Read-only; never changes anything. Fails with a clear message when the host does not look like the declared
    distribution, or like exactly one distribution when O(distribution=auto).
author:
  - nodeguard maintainers (@nodeguard)
options:
  distribution:
    description:
      - The distribution the host is expected to run. V(auto) detects it and fails when the host looks like none or
        several.
    type: str
    default: auto
    choices: [auto, kubeadm, rke1, rke2, k3s]
  root:
    description:
      - Prefix for every default path, to inspect a mounted root file system or a container's root.
    type: path
    default: /
  manifests_dir:
    description: kubeadm static pod directory. Defaults to C(/etc/kubernetes/manifests) under O(root).
    type: path
  kubelet_config:
    description: kubeadm kubelet configuration file. Defaults to C(/var/lib/kubelet/config.yaml) under O(root).
    type: path
  rke1_cluster_config:
    description:
      - The RKE1 cluster.yml. Needed for O(distribution=rke1) (RKE1 keeps the settings in that file on the host that
        runs C(rke up), not on the nodes).
    type: path
  rancher_config_dir:
    description: RKE2/k3s configuration directory. Defaults to C(/etc/rancher/rke2) or C(/etc/rancher/k3s) under O(root).
    type: path
  sysctls:
    description: Kernel parameters to read from C(/proc/sys).
    type: list
    elements: str
    default: [net.ipv4.tcp_retries2, net.ipv4.tcp_keepalive_time, net.ipv4.tcp_keepalive_intvl, net.ipv4.tcp_keepalive_probes]
requirements:
  - ruamel.yaml on the managed host (Debian/Ubuntu C(python3-ruamel.yaml), pip C(ruamel.yaml)).
attributes:
  check_mode:
    support: full
    description: The module never changes anything.
  diff_mode:
    support: none
    description: Nothing to diff.
  platform:
    support: full
    platforms: posix
    description: Target host with Python and ruamel.yaml.
"""

EXAMPLES = r"""
- name: What does this node run with?
  nodeguard.failover.failover_node_info:
  register: node_info

- name: Predicted timeline of the current settings
  ansible.builtin.debug:
    msg: "{{ node_info.settings | nodeguard.failover.failover_timeline(cluster_facts) }}"

- name: The config host of an RKE1 cluster
  nodeguard.failover.failover_node_info:
    distribution: rke1
    rke1_cluster_config: /opt/rke/cluster.yml
"""

RETURN = r"""
distribution:
  description: The distribution the host runs (detected or confirmed).
  returned: success
  type: str
  sample: kubeadm
role:
  description:
    - V(control_plane) when control plane settings were found on the host, else V(worker).
    - V(config_host) for RKE1, whose settings live in the cluster.yml on the host that runs C(rke up).
  returned: success
  type: str
settings:
  description:
    - Current settings in the shape of the failover profile. C(kubelet) holds KubeletConfiguration fields (zero values
      and absent fields mean the Kubernetes default and are left out); C(kube_controller_manager) and C(kube_apiserver)
      map flag names to string values; C(kube_controller_manager_feature_gates) maps gates to booleans;
      C(sysctl) holds the live values (null when the kernel has no such parameter); C(kubelet_environment) the
      running kubelet's HTTP/2 health check environment (absent when no kubelet runs).
  returned: success
  type: dict
  sample:
    kubelet: {nodeStatusUpdateFrequency: 4s}
    kube_controller_manager: {node-monitor-grace-period: 20s}
    kube_controller_manager_feature_gates: {}
    kube_apiserver: {default-unreachable-toleration-seconds: "30"}
    sysctl: {net.ipv4.tcp_retries2: "15"}
kubernetes_version:
  description:
    - The Kubernetes version the kube-apiserver static pod's image tag names, without its C(v), on a kubeadm control
      plane node; empty elsewhere, or when the tag names no version (a digest only, a custom tag).
  returned: success
  type: str
  sample: 1.35.4
files:
  description: The files the settings were read from, in the order they were read.
  returned: success
  type: list
  elements: str
kubelet_process:
  description:
    - The running kubelet; C(pid) null when none runs (or on an RKE1 config host). C(flags) are its failover flags,
      C(config) the config file it reads (its C(--config), empty without one; when it is not the distribution's
      and O(kubelet_config) is not given, the kubelet settings are read from it), C(environment) only the HTTP/2
      health check names it runs with (also in C(settings.kubelet_environment)).
  returned: success
  type: dict
  sample:
    pid: 4242
    flags: {node-status-update-frequency: 10s}
    config: /var/lib/kubelet/config.yaml
    environment: {HTTP2_READ_IDLE_TIMEOUT_SECONDS: "1", HTTP2_PING_TIMEOUT_SECONDS: "1"}
overrides:
  description:
    - Failover flags that override the kubelet's config file, with where each is set (C(file:line), else the
      process's C(/proc/<pid>/cmdline)). C(setting) is the KubeletConfiguration field the flag replaces.
  returned: success
  type: list
  elements: dict
  sample:
    - {setting: nodeStatusUpdateFrequency, flag: --node-status-update-frequency, value: 10s,
       source: "/etc/default/kubelet:1"}
kubespray:
  description:
    - True when kubespray set this node up (its kubelet environment file C(/etc/kubernetes/kubelet.env) exists).
      kubespray's next run writes its own values back; docs/distributions.md names its variables.
  returned: success
  type: bool
missing:
  description: Files the distribution may have that are absent on this host (for example no kubelet config on a
    control plane node without a kubelet).
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import NAMES as DISTRIBUTIONS
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.files import require_yaml_library
from ansible_collections.nodeguard.failover.plugins.module_utils.node_settings import read_node


def argument_spec() -> dict:
    return {
        "distribution": {"type": "str", "default": "auto", "choices": ["auto", *DISTRIBUTIONS]},
        "root": {"type": "path", "default": "/"},
        "manifests_dir": {"type": "path"},
        "kubelet_config": {"type": "path"},
        "rke1_cluster_config": {"type": "path"},
        "rancher_config_dir": {"type": "path"},
        "sysctls": {
            "type": "list",
            "elements": "str",
            "default": ["net.ipv4.tcp_retries2", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_keepalive_intvl",
                        "net.ipv4.tcp_keepalive_probes"],
        },
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    require_yaml_library(module)
    try:
        result = read_node(module.params)
    except NodeguardError as error:
        module.fail_json(msg=str(error))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
