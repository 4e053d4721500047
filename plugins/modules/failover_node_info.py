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
      C(sysctl) holds the live values (null when the kernel has no such parameter).
  returned: success
  type: dict
  sample:
    kubelet: {nodeStatusUpdateFrequency: 4s}
    kube_controller_manager: {node-monitor-grace-period: 20s}
    kube_controller_manager_feature_gates: {}
    kube_apiserver: {default-unreachable-toleration-seconds: "30"}
    sysctl: {net.ipv4.tcp_retries2: "15"}
files:
  description: The files the settings were read from, in the order they were read.
  returned: success
  type: list
  elements: str
missing:
  description: Files the distribution may have that are absent on this host (for example no kubelet config on a
    control plane node without a kubelet).
  returned: success
  type: list
  elements: str
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import NAMES as DISTRIBUTIONS
from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import distribution as layout
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError, NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.files import read_yaml_file, require_yaml_library
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubelet, rancher, rke1, static_pod


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


class Paths:
    """Where each distribution keeps its files on this host (defaults under ``root``)."""

    def __init__(self, params):
        root = params["root"]

        def under(path):
            return os.path.join(root, path.lstrip("/"))

        self.under = under
        kubeadm = layout("kubeadm")
        self.manifests_dir = params["manifests_dir"] or under(kubeadm.manifests_dir)
        self.kubelet_config = params["kubelet_config"] or under(kubeadm.kubelet_config)
        self.rke1_cluster_config = params["rke1_cluster_config"]
        self.rancher_config_dir = params["rancher_config_dir"]

    def rancher_dir(self, distribution: str) -> str:
        return self.rancher_config_dir or self.under(layout(distribution).config_dir)

    def markers(self, distribution: str) -> list:
        """Files or directories whose presence says "this host runs <distribution>" (module_utils/distributions.py),
        with the directories this module was pointed at in place of the defaults."""
        table = layout(distribution)
        found = []
        for marker in table.markers:
            if table.manifests_dir and os.path.dirname(marker) == table.manifests_dir:
                found.append(os.path.join(self.manifests_dir, os.path.basename(marker)))
            elif table.config_dir and marker == table.config_dir:
                found.append(self.rancher_dir(distribution))
            else:
                found.append(self.under(marker))
        if distribution == "rke1" and self.rke1_cluster_config:
            found.insert(0, self.rke1_cluster_config)
        return found


def detect(paths: Paths, declared: str) -> str:
    looks_like = [name for name in DISTRIBUTIONS if any(os.path.exists(p) for p in paths.markers(name))]
    if declared != "auto":
        if declared not in looks_like:
            seen = f"; it looks like {', '.join(looks_like)}" if looks_like else ""
            raise FileEditError(
                f"this host does not look like {declared}: none of {', '.join(paths.markers(declared))} exist{seen}"
            )
        return declared
    if len(looks_like) == 1:
        return looks_like[0]
    if not looks_like:
        looked = ", ".join(p for name in DISTRIBUTIONS for p in paths.markers(name))
        raise FileEditError(f"this host does not look like kubeadm, rke1, rke2 or k3s (looked for {looked})")
    raise FileEditError(f"this host looks like {' and '.join(looks_like)}; set distribution to the one it runs")


def _last_values(flags: dict) -> dict:
    """{flag: [values]} -> {flag: last value}; a bare --flag counts as "true"."""
    return {name: ("true" if values[-1] is None else values[-1]) for name, values in flags.items() if values}


def _split_gates(flags: dict, where: str):
    values = _last_values(flags)
    gates = values.pop(flaglib.FEATURE_GATES, None)
    parsed = {gate: state == "true" for gate, state in flaglib.parse_feature_gates(gates or "", where).items()}
    return values, parsed


class Reader:
    """Collects settings and the files they came from."""

    def __init__(self):
        self.files = []
        self.missing = []
        self.settings = {"kubelet": {}, "kube_controller_manager": {}, "kube_controller_manager_feature_gates": {},
                         "kube_apiserver": {}}
        self.control_plane = False

    def document(self, path: str, required: bool = False):
        if not os.path.exists(path):
            if required:
                raise FileEditError(f"{path} does not exist")
            self.missing.append(path)
            return None
        document, _text, _checksum = read_yaml_file(path)
        self.files.append(path)
        return document

    def component_flags(self, kcm_flags: dict, apiserver_flags: dict, where: str) -> None:
        if kcm_flags or apiserver_flags:
            self.control_plane = True
        kcm, gates = _split_gates(kcm_flags, where)
        self.settings["kube_controller_manager"].update(kcm)
        self.settings["kube_controller_manager_feature_gates"].update(gates)
        self.settings["kube_apiserver"].update(_last_values(apiserver_flags))

    def kubelet_file(self, path: str) -> None:
        document = self.document(path)
        if document is not None:
            self.settings["kubelet"].update(kubelet.read_settings(document, path))


def read_kubeadm(reader: Reader, paths: Paths) -> None:
    flags = {}
    for component in ("kube-controller-manager", "kube-apiserver"):
        path = os.path.join(paths.manifests_dir, component + ".yaml")
        document = reader.document(path)
        flags[component] = static_pod.read_flags(document, component, path) if document is not None else {}
        reader.control_plane = reader.control_plane or document is not None
    reader.component_flags(flags["kube-controller-manager"], flags["kube-apiserver"], paths.manifests_dir)
    reader.kubelet_file(paths.kubelet_config)


def read_rke1(reader: Reader, paths: Paths) -> None:
    if not paths.rke1_cluster_config:
        raise FileEditError("distribution rke1 needs rke1_cluster_config: the settings live in cluster.yml")
    path = paths.rke1_cluster_config
    services = rke1.read_settings(reader.document(path, required=True), path)
    reader.component_flags(services["kube-controller"], services["kube-api"], path)
    reader.settings["kubelet"].update(kubelet.flags_to_settings(services["kubelet"]))


def read_rancher(reader: Reader, paths: Paths, distribution: str) -> None:
    directory = paths.rancher_dir(distribution)
    candidates = [os.path.join(directory, "config.yaml")]
    # Only *.yaml, in name order: what RKE2 and k3s read.
    candidates += sorted(glob.glob(os.path.join(directory, "config.yaml.d", "*.yaml")))
    documents = [(path, doc) for path in candidates for doc in [reader.document(path)] if doc is not None]
    effective = rancher.merge_files(documents)
    reader.component_flags(effective.get("kube-controller-manager-arg", {}), effective.get("kube-apiserver-arg", {}),
                           directory)
    reader.control_plane = reader.control_plane or os.path.isdir(paths.under(layout(distribution).server_marker))
    kubelet_flags = effective.get("kubelet-arg", {})
    # Kubelet precedence: --config file, then --config-dir drop-ins, then flags.
    config = _last_values(kubelet_flags)
    if "config" in config:
        reader.kubelet_file(paths.under(config["config"]))
    if "config-dir" in config:
        for path in sorted(glob.glob(os.path.join(paths.under(config["config-dir"]), "*.conf"))):
            reader.kubelet_file(path)
    reader.settings["kubelet"].update(kubelet.flags_to_settings(kubelet_flags))


def read_sysctls(names: list) -> dict:
    values = {}
    for name in names:
        try:
            with open(os.path.join("/proc/sys", *name.split(".")), encoding="utf-8") as handle:
                values[name] = handle.read().strip()
        except OSError:
            values[name] = None
    return values


def run(module) -> dict:
    params = module.params
    paths = Paths(params)
    distribution = detect(paths, params["distribution"])
    reader = Reader()
    if distribution == "kubeadm":
        read_kubeadm(reader, paths)
    elif distribution == "rke1":
        read_rke1(reader, paths)
    else:
        read_rancher(reader, paths, distribution)
    settings = dict(reader.settings, sysctl=read_sysctls(params["sysctls"]))
    return {
        "changed": False,
        "distribution": distribution,
        "role": "config_host" if distribution == "rke1" else "control_plane" if reader.control_plane else "worker",
        "settings": settings,
        "files": reader.files,
        "missing": reader.missing,
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    require_yaml_library(module)
    try:
        result = run(module)
    except NodeguardError as error:
        module.fail_json(msg=str(error))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
