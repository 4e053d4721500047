# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster connection options, named as in kubernetes.core, with the same K8S_AUTH_* fallbacks.

Documented by the doc fragment nodeguard.failover.k8s_auth; keep the two in step.
Unlike kubernetes.core, validate_certs defaults to true: a remediation job must not trust any server.
"""

from __future__ import annotations

from ansible.module_utils.basic import env_fallback


def _env(*names):
    return (env_fallback, list(names))


K8S_AUTH_ARGUMENT_SPEC = {
    "kubeconfig": {"type": "path", "fallback": _env("K8S_AUTH_KUBECONFIG")},
    "context": {"type": "str", "fallback": _env("K8S_AUTH_CONTEXT")},
    "host": {"type": "str", "fallback": _env("K8S_AUTH_HOST")},
    "api_key": {"type": "str", "no_log": True, "fallback": _env("K8S_AUTH_API_KEY")},
    "validate_certs": {
        "type": "bool",
        "default": True,
        "aliases": ["verify_ssl"],
        "fallback": _env("K8S_AUTH_VERIFY_SSL", "K8S_AUTH_VALIDATE_CERTS"),
    },
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"], "fallback": _env("K8S_AUTH_SSL_CA_CERT", "K8S_AUTH_CA_CERT")},
    "client_cert": {
        "type": "path",
        "aliases": ["cert_file"],
        "fallback": _env("K8S_AUTH_CERT_FILE", "K8S_AUTH_CLIENT_CERT"),
    },
    "client_key": {
        "type": "path",
        "aliases": ["key_file"],
        "no_log": False,
        "fallback": _env("K8S_AUTH_KEY_FILE", "K8S_AUTH_CLIENT_KEY"),
    },
}

AUTH_OPTION_NAMES = tuple(K8S_AUTH_ARGUMENT_SPEC)


def auth_params(params: dict) -> dict:
    """The connection options out of a module's params."""
    return {name: params.get(name) for name in AUTH_OPTION_NAMES}
