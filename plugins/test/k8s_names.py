# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test k8s_node_name: is a value a valid Kubernetes node name (DNS-1123 subdomain)?"""

from __future__ import annotations

from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.names import is_dns1123_subdomain


def k8s_node_name(value):
    return is_dns1123_subdomain(value)


class TestModule:
    def tests(self):
        return {"k8s_node_name": k8s_node_name}
