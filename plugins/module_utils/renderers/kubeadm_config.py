# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubeadm ClusterConfiguration (ConfigMap kube-system/kubeadm-config, key ClusterConfiguration).

``kubeadm upgrade`` regenerates the static pod manifests from this document, so flags set only
in the manifests are lost. Where the flags go depends on the API version (the table is
``KUBEADM_APIS`` in module_utils/distributions.py):

* kubeadm.k8s.io/v1beta2 (kubeadm 1.15-1.25) and v1beta3 (1.22-1.35): ``controllerManager.extraArgs`` /
  ``apiServer.extraArgs`` are maps;
* kubeadm.k8s.io/v1beta4 (kubeadm 1.31+): they are lists of ``{name, value}``.
"""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.nodeguard.failover.plugins.module_utils.distributions import KUBEADM_APIS
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

Rendered = namedtuple("Rendered", "document changes")

API_VERSIONS = {api.api_version: api.extra_args for api in KUBEADM_APIS}
KIND = "ClusterConfiguration"
SECTIONS = (("controllerManager", "kube-controller-manager"), ("apiServer", "kube-apiserver"))


def shape_of(document, source: str) -> str:
    """"map" or "list": how extraArgs are written in this document's apiVersion."""
    if document.get("kind") != KIND:
        raise FileEditError(f"{source}: expected kind {KIND}, found {document.get('kind')!r}")
    api_version = document.get("apiVersion")
    if api_version not in API_VERSIONS:
        raise FileEditError(
            f"{source}: unsupported apiVersion {api_version!r} (supported: {', '.join(API_VERSIONS)})"
        )
    return API_VERSIONS[api_version]


def _extra_args(document, section: str, shape: str, source: str, create: bool):
    component = document.get(section)
    if component is None:
        if not create:
            return None
        component = document[section] = yamldoc.new_mapping()
    if not isinstance(component, dict):
        raise FileEditError(f"{source}: {section} must be a mapping")
    extra_args = component.get("extraArgs")
    if extra_args is None and create:
        extra_args = component["extraArgs"] = yamldoc.new_mapping() if shape == "map" else []
    wanted_type = dict if shape == "map" else list
    if extra_args is not None and not isinstance(extra_args, wanted_type):
        raise FileEditError(
            f"{source}: {section}.extraArgs must be a {'map' if shape == 'map' else 'list of {name, value}'} "
            f"in {document.get('apiVersion')}"
        )
    return extra_args


def _read(extra_args, shape: str, where: str) -> dict:
    if extra_args is None:
        return {}
    return flaglib.read_map(extra_args) if shape == "map" else flaglib.read_named_list(extra_args, where)


def render(document, controller_manager_flags: dict | None, apiserver_flags: dict | None, source: str) -> Rendered:
    """Apply flag maps (None removes a flag) to controllerManager and apiServer extraArgs."""
    shape = shape_of(document, source)
    wanted_by_section = {"controllerManager": controller_manager_flags, "apiServer": apiserver_flags}
    planned = []
    for section, _component in SECTIONS:
        where = f"{source} {section}.extraArgs"
        current = _read(_extra_args(document, section, shape, source, False), shape, where)
        changes = flaglib.plan(current, wanted_by_section[section], None, where)
        if changes:
            planned.append((section, changes, current))
    if not planned:
        return Rendered(document, [])
    new_document = yamldoc.copy_document(document)
    lines = []
    for section, changes, current in planned:
        extra_args = _extra_args(new_document, section, shape, source, True)
        yamldoc.refuse_shared(extra_args, f"{source} {section}.extraArgs")
        if shape == "map":
            flaglib.apply_to_map(extra_args, changes)
        else:
            flaglib.apply_to_named_list(extra_args, changes)
        lines.extend(flaglib.describe(changes, current, section))
    return Rendered(new_document, lines)


def read_settings(document, source: str) -> dict:
    """``{component: {flag: [values]}}`` for kube-controller-manager and kube-apiserver."""
    shape = shape_of(document, source)
    return {
        component: _read(_extra_args(document, section, shape, source, False), shape, f"{source} {section}.extraArgs")
        for section, component in SECTIONS
    }
