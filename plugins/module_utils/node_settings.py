# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a node's failover settings from where its distribution keeps them (failover_node_info's readers).

Paths and marker files come from module_utils/distributions.py; the file shapes from the renderers.
Read-only: nothing here writes.
"""

from __future__ import annotations

import glob
import os

from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import NAMES as DISTRIBUTIONS
from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import distribution as layout
from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import listed
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.files import read_yaml_file
from ansible_collections.nodeguard.failover.plugins.module_utils.kubelet_process import KUBESPRAY_ENV, flag_files, read_kubelet
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import KUBELET_ENVIRONMENT
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubelet, rancher, rke1, static_pod


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
        self.kubelet_config_given = bool(params["kubelet_config"])
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
        raise FileEditError(f"this host does not look like {listed(DISTRIBUTIONS)} (looked for {looked})")
    raise FileEditError(f"this host looks like {' and '.join(looks_like)}; set distribution to the one it runs")


def _last_values(flags: dict) -> dict:
    """{flag: [values]} -> {flag: last value}; a bare --flag counts as "true"."""
    return {name: "true" if value is None else value for name, value in flaglib.last_values(flags).items()}


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
        self.kubelet_arg_files = []  # RKE2/k3s config files whose kubelet-arg become kubelet flags
        self.kubernetes_version = ""  # what the kube-apiserver static pod's image tag names (kubeadm)

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


def read_kubeadm(reader: Reader, paths: Paths, _distribution: str) -> None:
    flags = {}
    for component in ("kube-controller-manager", "kube-apiserver"):
        path = os.path.join(paths.manifests_dir, component + ".yaml")
        document = reader.document(path)
        flags[component] = static_pod.read_flags(document, component, path) if document is not None else {}
        reader.control_plane = reader.control_plane or document is not None
        if component == "kube-apiserver" and document is not None:
            reader.kubernetes_version = static_pod.image_version(document, component, path)
    reader.component_flags(flags["kube-controller-manager"], flags["kube-apiserver"], paths.manifests_dir)
    reader.kubelet_file(paths.kubelet_config)


def read_rke1(reader: Reader, paths: Paths, _distribution: str) -> None:
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
    reader.kubelet_arg_files = [path for path, _doc in documents]
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


# One reader per config_format of the registry (module_utils/distributions.py).
READERS = {"kubeadm": read_kubeadm, "rke1": read_rke1, "rancher": read_rancher}


def read_sysctls(names: list) -> dict:
    values = {}
    for name in names:
        try:
            with open(os.path.join("/proc/sys", *name.split(".")), encoding="utf-8") as handle:
                values[name] = handle.read().strip()
        except OSError:
            values[name] = None
    return values


def read_running_kubelet(reader: Reader, paths: Paths, distribution: str) -> dict:
    """The running kubelet (its unit's process under ``root``/proc) and the flags that override its config file.

    Its failover flags go into the kubelet settings (flags override the config file), its environment (HTTP/2
    health check names only) into settings.kubelet_environment. RKE1 runs the kubelet in a container of its own:
    nothing to read on the config host."""
    table = layout(distribution)
    units = tuple(dict.fromkeys(unit for unit in (table.server_service, table.agent_service) if unit))
    if not units:
        return {"pid": None, "flags": {}, "config": "", "environment": {}, "overrides": []}
    found = read_kubelet(paths.under("/proc"), units, flag_files(paths.under, units, reader.kubelet_arg_files))
    running_config = paths.under(found["config"]) if found["config"] else ""
    if table.kubelet_config and not paths.kubelet_config_given and running_config not in ("", paths.kubelet_config):
        # The kubelet reads another config file than the distribution's (kubespray: /etc/kubernetes/kubelet-config.yaml):
        # its settings are that file's.
        reader.settings["kubelet"] = {}
        reader.kubelet_file(running_config)
    reader.settings["kubelet"].update(kubelet.flags_to_settings({name: [value] for name, value in found["flags"].items()}))
    if found["pid"] is not None:
        reader.settings[KUBELET_ENVIRONMENT] = found["environment"]
    return found


def read_node(params: dict) -> dict:
    """What the module returns: the distribution, the role, the settings in profile shape, the files read."""
    paths = Paths(params)
    distribution = detect(paths, params["distribution"])
    reader = Reader()
    READERS[layout(distribution).config_format](reader, paths, distribution)
    running = read_running_kubelet(reader, paths, distribution)
    settings = dict(reader.settings, sysctl=read_sysctls(params["sysctls"]))
    return {
        "changed": False,
        "distribution": distribution,
        "role": "config_host" if distribution == "rke1" else "control_plane" if reader.control_plane else "worker",
        "settings": settings,
        "kubernetes_version": reader.kubernetes_version,
        "files": reader.files,
        "missing": reader.missing,
        "kubelet_process": {"pid": running["pid"], "flags": running["flags"], "config": running["config"],
                            "environment": running["environment"]},
        "overrides": running["overrides"],
        "kubespray": os.path.isfile(paths.under(KUBESPRAY_ENV)),
    }
