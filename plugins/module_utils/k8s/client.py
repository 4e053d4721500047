# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build a kubernetes.client.ApiClient from kubernetes.core-style connection options.

Precedence, as in kubernetes.core: an explicit host/api_key/cert option wins over the kubeconfig;
without kubeconfig and host, the in-cluster service account is used when present, else ~/.kube/config.
"""

from __future__ import annotations

import os
import socket
import traceback

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ClusterError

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException
    from urllib3.connection import HTTPConnection
    from urllib3.util.retry import Retry

    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()


# TCP keepalive on every connection to the API server (seconds idle before the first probe, between probes, probes):
# a connection whose peer vanished without a word (a rebooted or cut-off apiserver, a dropped NAT entry) is closed by
# the kernel within 15 s instead of being reused, and a call waiting on it ends at once instead of at its read timeout.
KEEPALIVE = {"idle": 5, "interval": 5, "count": 2}

# One more try after a failed connect (nothing was sent: an apiserver restarting); none after a read error or a
# timeout, so no call waits more than twice its connect timeout and once its read timeout (services.call_timeouts),
# and no write is sent twice.
RETRIES = {"total": 1, "connect": 1, "read": 0, "status": 0, "other": 0, "redirect": 0}


def keepalive_socket_options() -> list:
    """urllib3's own socket options (TCP_NODELAY: it replaces its defaults by what it is given) and keepalive.
    The names Linux uses; a platform without one of them keeps its own default for it."""
    options = list(HTTPConnection.default_socket_options)
    options.append((socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1))
    for name, value in (("TCP_KEEPIDLE", "idle"), ("TCP_KEEPINTVL", "interval"), ("TCP_KEEPCNT", "count")):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), KEEPALIVE[value]))
    return options


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/token")


def build_api_client(auth: dict):
    """Return an ApiClient for the options in ``auth`` (see args.K8S_AUTH_ARGUMENT_SPEC)."""
    configuration = k8s_client.Configuration()
    try:
        if auth.get("kubeconfig") or not (auth.get("host") or _in_cluster()):
            k8s_config.load_kube_config(
                config_file=auth.get("kubeconfig"),
                context=auth.get("context"),
                client_configuration=configuration,
                persist_config=False,
            )
        elif not auth.get("host"):
            k8s_config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, OSError) as e:
        where = auth.get("kubeconfig") or "the default kubeconfig"
        raise ClusterError(f"cannot load cluster credentials from {where}: {e}") from e

    if auth.get("host"):
        configuration.host = auth["host"]
    if auth.get("api_key"):
        configuration.api_key = {"authorization": "Bearer " + auth["api_key"]}
    if auth.get("ca_cert"):
        configuration.ssl_ca_cert = auth["ca_cert"]
    if auth.get("client_cert"):
        configuration.cert_file = auth["client_cert"]
    if auth.get("client_key"):
        configuration.key_file = auth["client_key"]
    # Verified unless the caller turns it off explicitly, whatever the kubeconfig says.
    configuration.verify_ssl = auth.get("validate_certs") is not False
    if not configuration.host:
        raise ClusterError("no API server address: set host, kubeconfig or K8S_AUTH_HOST")
    configuration.socket_options = keepalive_socket_options()
    configuration.retries = Retry(**RETRIES, raise_on_redirect=False)
    return k8s_client.ApiClient(configuration)
