# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RKE1 cluster.yml: flags live in ``services.<service>.extra_args`` as a map ``flag: "value"``.

``rke up`` applies the file to the cluster; this renderer only edits the document.
"""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

Rendered = namedtuple("Rendered", "document changes")

# RKE1 service names (cluster.yml "services" keys) and the component each one runs.
SERVICES = {
    "kube-api": "kube-apiserver",
    "kube-controller": "kube-controller-manager",
    "scheduler": "kube-scheduler",
    "kubelet": "kubelet",
    "kubeproxy": "kube-proxy",
    "etcd": "etcd",
}


def _services(document, source: str, create: bool):
    services = document.get("services")
    if services is None and create:
        services = document["services"] = yamldoc.new_mapping()
    if services is not None and not isinstance(services, dict):
        raise FileEditError(f"{source}: services must be a mapping, found {type(services).__name__}")
    return services or {}


def _extra_args(services, service: str, source: str, create: bool):
    section = services.get(service)
    if section is None:
        if not create:
            return {}
        section = services[service] = yamldoc.new_mapping()
    if not isinstance(section, dict):
        raise FileEditError(f"{source}: services.{service} must be a mapping, found {type(section).__name__}")
    extra_args = section.get("extra_args")
    if extra_args is None:
        if not create:
            return {}
        extra_args = section["extra_args"] = yamldoc.new_mapping()
    if not isinstance(extra_args, dict):
        raise FileEditError(f"{source}: services.{service}.extra_args must be a mapping, found {type(extra_args).__name__}")
    return extra_args


def _check_service(service, source: str) -> None:
    if service not in SERVICES:
        raise FileEditError(f"{source}: unknown RKE1 service {service!r} (known: {', '.join(SERVICES)})")


def render(document, services: dict, source: str) -> Rendered:
    """Apply ``{service: {flag: value|None}}`` to the extra_args of each service."""
    if not isinstance(services, dict):
        raise FileEditError(f"{source}: services must be a mapping service: {{flag: value}}, got {services!r}")
    planned = []
    for service, wanted in yamldoc.plain(services, source).items():  # playbook variables arrive as tagged strings
        _check_service(service, source)
        where = f"{source} services.{service}.extra_args"
        current = flaglib.read_map(_extra_args(_services(document, source, False), service, source, False))
        changes = flaglib.plan(current, wanted, None, where)
        if changes:
            planned.append((service, changes, current))
    if not planned:
        return Rendered(document, [])
    new_document = yamldoc.copy_document(document)
    lines = []
    for service, changes, current in planned:
        extra_args = _extra_args(_services(new_document, source, True), service, source, True)
        yamldoc.refuse_shared(extra_args, f"{source} services.{service}.extra_args")
        flaglib.apply_to_map(extra_args, changes)
        lines.extend(flaglib.describe(changes, current, service))
    return Rendered(new_document, lines)


def read_settings(document, source: str) -> dict:
    """``{service: {flag: [value]}}`` for every known service with extra_args."""
    services = _services(document, source, False)
    return {service: flaglib.read_map(_extra_args(services, service, source, False)) for service in SERVICES}
