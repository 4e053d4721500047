# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One call for modules: check the kubernetes library is there and return a Cluster for the module's options."""

from __future__ import annotations

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.args import auth_params
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.client import (
    HAS_KUBERNETES,
    KUBERNETES_IMPORT_ERROR,
    build_api_client,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.services import Cluster, call_timeouts


def cluster_for(module):
    """Fail the module cleanly without the kubernetes library; may raise ClusterError for bad credentials.
    Every call of the Cluster has timeouts that fit the module's lock (its option lock_ttl_seconds, when it has
    one: services.call_timeouts)."""
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=KUBERNETES_IMPORT_ERROR)
    return Cluster(build_api_client(auth_params(module.params)), call_timeouts(module.params.get("lock_ttl_seconds")))
