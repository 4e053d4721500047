# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster connection options shared by every module that talks to the Kubernetes API, and its action group.

The matching argument spec is K8S_AUTH_ARGUMENT_SPEC in plugins/module_utils/k8s/args.py.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file. Without it and without O(host), the in-cluster service account is used
        when the module runs in a pod, else C(~/.kube/config).
      - Falls back to the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: path
  context:
    description:
      - Kubeconfig context to use. Falls back to E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description:
      - API server URL; overrides the kubeconfig's. Falls back to E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Bearer token. Never logged. Falls back to E(K8S_AUTH_API_KEY).
    type: str
  validate_certs:
    description:
      - Verify the API server's TLS certificate. Defaults to true even when a kubeconfig says otherwise;
        set it to false explicitly to skip verification.
      - Falls back to E(K8S_AUTH_VERIFY_SSL).
    type: bool
    default: true
    aliases: [verify_ssl]
  ca_cert:
    description:
      - CA bundle that signs the API server certificate. Falls back to E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Client certificate for TLS client authentication. Falls back to E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Key of O(client_cert). Falls back to E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
requirements:
  - kubernetes (Python client) >= 24.2.0
notes:
  - Option names and E(K8S_AUTH_*) variables follow M(kubernetes.core.k8s), so existing settings carry over.
attributes:
  action_group:
    description:
      - Use C(group/nodeguard.failover.k8s) in C(module_defaults) to set the cluster connection options once for
        every module of the group. The group also takes in the C(kubernetes.core.k8s) group and
        M(kubernetes.core.k8s_cluster_info), whose options have the same names.
    support: full
    membership:
      - nodeguard.failover.k8s
"""
