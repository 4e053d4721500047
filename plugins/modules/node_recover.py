# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module node_recover: remove the out-of-service taint once the node is back (logic in incident/recover.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: node_recover
short_description: Remove the out-of-service taint from a node that is really back, and close its incident record
version_added: 0.1.0
description:
  - Watches the node (see below), takes its lock, then removes C(node.kubernetes.io/out-of-service) only when all hold
    - the out-of-band source (O(power)) reads power On;
    - the node is Ready for at least O(healthy_seconds) and its Lease renews, both as this run watches them on the
      controller's own monotonic clock (the kubelet's timestamps are not compared with it);
    - it restarted, its C(status.nodeInfo.bootID) differs from the one recorded at the taint;
    - on the same machine, its C(status.nodeInfo.systemUUID) is the one recorded at the taint;
    - no pod of the old incarnation (created before the taint, not mirror, not tolerating the taint) is bound to it;
    - no VolumeAttachment still names it.
  - A node that reports in again (Ready, fresh Lease) with the bootID it had at the taint never went down, so the
    power-off proof of that incident was false. This is refused, written into the incident record
    (C(power_off_proof_false)) and sent as a Warning Event C(FailoverPowerOffProofFalse); the taint stays.
  - The recorded facts those checks compare with (bootID, systemUUID, Node UID, taint time) are read from the incident's
    copy in the history ConfigMap C(nodeguard-history-<node>) in O(history_namespace), which only the remediator may write;
    the Node annotation can be rewritten by the node's kubelet or anyone who may patch nodes. A record on the Node
    without a history copy, or differing from it in those facts, is refused and the taint stays. A record without
    C(node) or C(id), or naming another node, is refused as unreadable.
  - The module first watches the node itself, before it takes the lock, and waits until it has seen the node Ready for
    O(healthy_seconds) (counted from its first read that shows it Ready, and again from a read that shows another Ready
    transition or bootID) and its Lease change, at most O(healthy_seconds) plus one Lease renew interval. A node that is
    not Ready is refused at once, with RV(retryable) true.
  - The taint removal and the end of the incident record are one conditional write, followed by an Event.
    Returns the incident timeline from first NotReady to Ready again, as rows and as a table.
  - A taint without a nodeguard record (left behind by hand or another tool) has no recorded bootID, so a restart
    cannot be shown and it is refused (every pod bound to the node counts as old); check the node and remove such a
    taint by hand.
  - The closed record is also kept in the node's durable history (M(nodeguard.failover.failover_history_info)).
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.k8s_auth
  - nodeguard.failover.power
  - nodeguard.failover.node_recover
attributes:
  check_mode:
    support: full
    description: Evaluates every check and reports whether the taint would be removed; changes nothing.
  diff_mode:
    support: none
    description: The result reports the record and plan instead of a diff.
seealso:
  - module: nodeguard.failover.node_outage
"""

EXAMPLES = r"""
- name: Remove the out-of-service taint from worker3 once it is healthy again
  nodeguard.failover.node_recover:
    node: worker3
    healthy_seconds: 120
    power: "{{ hostvars['worker3'].bmc }}"
  register: recovered

- name: Show the incident timeline
  ansible.builtin.debug:
    msg: "{{ recovered.timeline_table }}"
"""

RETURN = r"""
message:
  description: One line on what happened.
  returned: always
  type: str
write_errors:
  description: Best-effort writes that failed after the taint was removed (the Event, the history copy).
  returned: success
  type: list
  elements: str
tainted:
  description: Whether the node still carries the out-of-service taint.
  returned: always
  type: bool
checks:
  description:
    - The recovery checks (power-on, ready, heartbeat, old-pods-gone, restarted, same-machine, volumes-released),
      each with name, ok and detail.
  returned: always
  type: list
  elements: dict
record:
  description: The incident record, closed (phase V(recovered)) when the taint was removed.
  returned: always
  type: dict
timeline:
  description: Milestones with time (UTC) and seconds since the node was first NotReady.
  returned: always
  type: list
  elements: dict
timeline_table:
  description: The timeline as a plain-text table.
  returned: always
  type: str
summary:
  description:
    - What the role prints; the message, each check's detail, then the lines of RV(timeline_table).
  returned: success
  type: list
  elements: str
retryable:
  description:
    - On failure, whether trying again later may succeed, because the node is not back yet (not Ready long enough,
      power not On, old pods or VolumeAttachments left). False for refusals (an outage run stopped or holding the node's
      lock, a false power-off proof), which waiting does not change. The role retries only while this is true.
  returned: failure
  type: bool
lock:
  description:
    - The node's lock as this run held it; C(lease), C(holder) (null when it never took the lock, as in check mode),
      C(ttl_seconds), C(took_over) and C(release_note)
      (why the Lease was not released, or null; also a warning).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import deadline
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.args import RECOVER_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.errors import NotRecoveredYetError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import default_job_id
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.recover import RecoverOptions, RecoverRun
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.args import K8S_AUTH_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.connect import cluster_for
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.waiters import Clock
from ansible_collections.nodeguard.failover.plugins.module_utils.power.args import POWER_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.power.readers import reader_for

OPTIONS = RECOVER_ARGUMENT_SPEC


def _summary(result: dict) -> list:
    """What the role prints: the message, the checks, the timeline table line by line."""
    return [result["message"]] + [check["detail"] for check in result["checks"]] + result["timeline_table"].split("\n")


def main():
    module = AnsibleModule(argument_spec=dict(K8S_AUTH_ARGUMENT_SPEC, **POWER_ARGUMENT_SPEC, **OPTIONS), supports_check_mode=True)
    p = module.params
    options = RecoverOptions(**{name: p[name] for name in OPTIONS if name != "job_id"}, job_id=p["job_id"] or default_job_id())
    run = None
    try:
        power = reader_for(p["power"], p["node"], "on", p["allow_manual_attestation"])
        cluster = cluster_for(module)  # every call's timeouts fit lock_ttl_seconds
        cluster.set_deadline(deadline.recover_seconds(options))
        run = RecoverRun(cluster, power, options, Clock(), module.check_mode)
        result = run.run()
    except NodeguardError as e:
        if run is not None and run.lock.release_note:
            module.warn(run.lock.release_note)  # next to the run's own error, never instead of it
        # changed when the refusal itself was recorded (a false power-off proof: record and Warning Event)
        module.fail_json(
            msg=str(e),
            changed=bool(run and run.changed),
            node=p["node"],
            retryable=isinstance(e, NotRecoveredYetError),
            lock=run.lock.report() if run else None,
        )
    result["lock"] = run.lock.report()  # after the release
    if run.lock.release_note:
        module.warn(run.lock.release_note)
    module.exit_json(summary=_summary(result), **result)


if __name__ == "__main__":
    main()
