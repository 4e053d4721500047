# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module node_outage: fenced non-graceful failover of one node (logic in module_utils/incident/outage.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: node_outage
short_description: Fenced non-graceful node failover with the out-of-service taint
version_added: 0.1.0
description:
  - Moves the workloads of a dead node elsewhere, safely, in recorded steps.
  - First it checks safety rules (storm, control plane and etcd quorum, version support) and takes a per-node lock Lease.
  - It refuses a node another remediator owns, naming it; a medik8s NodeHealthCheck that selects it, a held medik8s Lease
    C(medik8s-leases/node-<node>), a FenceAgentsRemediation or SelfNodeRemediation for it, or an out-of-service taint
    without an open nodeguard record. Missing medik8s CRDs (404) mean no medik8s.
  - Then it proves the node is off, all three of; NotReady or Unknown in the API for O(not_ready_seconds);
    its Lease unchanged while the run watches it on its own monotonic clock (from its first read, during that wait) for a
    quarter of the Lease's leaseDurationSeconds plus O(lease_margin_seconds), its renewTime never compared with ours;
    an out-of-band source (O(power)) reading Off. With O(fence=true) it first powers the node off
    (action off, never reboot), with retries and backoff, and re-reads until Off.
  - It adds the taint C(node.kubernetes.io/out-of-service=nodeshutdown:NoExecute) together with the incident
    record (Node annotation C(failover.nodeguard.io/incident)) in one conditional write.
  - It force-deletes (grace 0) the pods left on the node, except mirror, DaemonSet and taint-tolerating pods.
  - It waits until no VolumeAttachment names the node, and reports blockers (PV, driver, age) on timeout.
  - It waits for a Running and Ready replacement elsewhere of every StatefulSet and Deployment pod, with the time each took.
  - Every step's start and end is recorded on the Node and as an Event. A rerun continues at the first
    unfinished step. A refusal or a missing proof changes nothing.
  - The node coming back during the run stops it; the taint stays, recorded; M(nodeguard.failover.node_recover) removes it.
    Ready counts as back, and so does a node Lease renewed after the run first looked at it (the kubelet lives).
  - Right before the taint it reads the Node list once more and re-checks storm, control plane and quorum, the node's UID
    and its Lease on that read; the taint is written against that read's resourceVersion. Nodes running etcd (an etcd
    static pod, or the C(node-role.kubernetes.io/etcd) label of RKE2 and k3s) count as control plane.
  - With O(power_event_time) (a BMC said the node powered off; the power-event path) the node may still be Ready in the
    API. NotReady is not waited for; instead the event time must be valid and recent, the node's Lease must not change
    while the run watches it on its own monotonic clock for one renew interval (a quarter of the Lease's own
    leaseDurationSeconds) plus O(lease_margin_seconds), and O(power) must read Off twice with its identity shown. The
    Lease's renewTime (the kubelet's clock) is never compared with the controller's clock.
    Storm, quorum, lock and control-plane rules apply as always, the target counting as unhealthy. A BMC reading On,
    a Lease renewed after the event or changing while watched, is refused. Needs C(powerEventPath) in the admission
    policy if bound.
  - A resumed run proves again before it acts (same Node UID, not back, power still Off), and every force-delete and
    VolumeAttachment deletion needs a power-off proof at most O(proof_max_age_seconds) old and a manual attestation
    not expired, both counted on the controller's monotonic clock. One manual attestation proves one incident.
  - Right before the taint and before each batch of force-deletes and VolumeAttachment deletions, O(power) is read once
    more with its identity shown; On stops the run before that write (after the taint it is recorded as interrupted).
    Power On, a new bootID, Ready or a renewed Lease stop the run in any step; it never reports C(outage complete)
    while the node is back.
  - Storm, quorum and one-control-plane-node-at-a-time are decided under the cluster lock, the Lease
    C(nodeguard-cluster) in O(lock_namespace), held from the read they are decided on to the taint write, so two runs
    on two nodes never both taint on the same view. A node carrying the out-of-service taint counts as down in the
    storm rule even while Ready.
  - Record writes after the taint are conditional (resourceVersion). Each record is also kept in a durable history,
    the ConfigMap C(nodeguard-history-<node>) in O(history_namespace) (last 20 incidents), read by
    M(nodeguard.failover.failover_history_info). Events are best effort; a failed one is reported in RV(write_errors).
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.failover.k8s_auth
  - nodeguard.failover.power
  - nodeguard.failover.node_outage
attributes:
  check_mode:
    support: full
    description: Runs every read-only check and proof and returns the full plan; changes nothing.
  diff_mode:
    support: none
    description: The result reports the record and plan instead of a diff.
options:
  power:
    description:
      - How to read (and with O(fence=true) set) the node's power out of band; see the suboptions.
      - Without it the run is refused with C(No power source), after the safety rules (a control-plane node is
        refused as such first). Nothing is changed.
    type: dict
    required: false
seealso:
  - module: nodeguard.failover.node_recover
  - module: nodeguard.failover.node_power
  - name: Non-graceful node shutdown
    description: Kubernetes documentation of the out-of-service taint.
    link: https://kubernetes.io/docs/concepts/cluster-administration/node-shutdown/#non-graceful-node-shutdown
"""

EXAMPLES = r"""
- name: Fail over worker3 after proving it is off through its BMC
  nodeguard.failover.node_outage:
    kubeconfig: /etc/nodeguard/remediator.kubeconfig
    node: worker3
    power:
      type: redfish
      address: https://bmc-worker3.example:443
      system_id: "1"
      username: "{{ bmc_user }}"
      password: "{{ bmc_password }}"
      ca_cert: /etc/nodeguard/bmc-ca.pem

- name: Same, but power it off first with the ClusterLabs fence agent
  nodeguard.failover.node_outage:
    node: worker3
    fence: true
    power:
      type: fence_agent
      agent: fence_ipmilan
      address: 10.0.0.53
      username: admin
      password: "{{ ipmi_password }}"
      agent_options:
        lanplus: 1
      # fence_ipmilan has no plug, so it cannot show which machine it controls: say why that is acceptable
      identity_unverifiable_reason: BMC 10.0.0.53 is cabled to worker3 only, checked 2026-11-01 (ticket OPS-4700)

- name: Power-event path, as the rulebook power-events.yml starts it (the node may still be Ready)
  nodeguard.failover.node_outage:
    node: worker3
    power_event_time: "2026-11-23T08:00:00Z"
    proof_timeout: 30
    power: "{{ hostvars['worker3'].bmc }}"

- name: Manual attestation (recorded), when no BMC is reachable; valid for this node and one window only
  nodeguard.failover.node_outage:
    node: worker3
    allow_manual_attestation: true
    power:
      type: manual
      attestation:
        node: worker3
        state: "off"
        operator: jane@example.com
        reason: PDU outlet 12 switched off, ticket OPS-4711
        not_before: "2026-11-23T05:10:00Z"
        expires: "2026-11-23T07:10:00Z"
"""

RETURN = r"""
action:
  description: What the run found; V(fresh), V(adopt) (taint without record, refused as another remediator's), V(resume), V(complete) or V(stopped).
  returned: always
  type: str
resumed_from:
  description: Step the run continued at, for a resumed run.
  returned: always
  type: str
message:
  description: One line on what happened.
  returned: always
  type: str
tainted:
  description: Whether the node carries the out-of-service taint now.
  returned: always
  type: bool
proofs:
  description:
    - The power-off proofs, each with name, ok and detail; V(not-ready), V(lease-stale) and V(power-off), or on the
      power-event path V(lease-silent) and V(power-off).
  returned: always
  type: list
  elements: dict
power:
  description: The out-of-band power reading (state, method, detail, attestation).
  returned: when read
  type: dict
pods:
  description: Pods on the node at proof time, split into delete, skipped (with reason) and tolerating.
  returned: when read
  type: dict
timing:
  description:
    - The O(not_ready_seconds) and O(lease_margin_seconds) used, the source of each (V(explicit), V(applied-profile)
      or V(stock)) and C(detail), one line that says where they came from.
  returned: always
  type: dict
plan:
  description: One entry per outage step with status (done or pending) and what it does.
  returned: always
  type: list
  elements: dict
record:
  description: The incident record on the Node (steps with start and end, proofs, pods, replacements with seconds).
  returned: always
  type: dict
events:
  description: Events this run created.
  returned: always
  type: list
  elements: dict
write_errors:
  description: Best-effort writes after the taint that failed (Events, the history copy); the message says so too.
  returned: success
  type: list
  elements: str
power_rechecks:
  description: Power-off proofs read again after the taint (on resume, before destructive steps), each with when.
  returned: success
  type: list
  elements: dict
plan_lines:
  description:
    - What the role prints as the plan, before the outcome or the refusal; C(timing.detail), then one
      C(step | status | action) line per RV(plan) entry, with one line per proof read under the prove step.
  returned: always
  type: list
  elements: str
error:
  description:
    - Why the run failed or was refused (the same text as C(msg)); null when it succeeded. The role runs the module
      without failing on it, prints RV(plan_lines), then fails with this short message.
  returned: always
  type: str
summary:
  description:
    - What the role prints as the outcome; the message with the action (and the step it resumed from), the proofs'
      details, the record's replacements (C(n/a) without a record).
  returned: success
  type: list
  elements: str
lock:
  description:
    - The node's lock as this run held it; C(lease), C(holder) (this run's identity; null when it never took the
      lock, as in check mode), C(ttl_seconds),
      C(took_over) (the crashed holder this run took over after watching its Lease expire, or null)
      and C(release_note) (why the Lease was not released, or null; also a warning).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import NodeguardError
from ansible_collections.nodeguard.failover.plugins.module_utils.incident import deadline
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.args import OUTAGE_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.lock import default_job_id
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.outage import OutageOptions, OutageRun
from ansible_collections.nodeguard.failover.plugins.module_utils.incident.plan import outage_plan
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.args import K8S_AUTH_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.connect import cluster_for
from ansible_collections.nodeguard.failover.plugins.module_utils.k8s.waiters import Clock
from ansible_collections.nodeguard.failover.plugins.module_utils.model import applied
from ansible_collections.nodeguard.failover.plugins.module_utils.power.args import POWER_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.module_utils.power.readers import reader_for

OPTIONS = OUTAGE_ARGUMENT_SPEC

# The power option is optional here: the safety rules come first, then a missing one is refused clearly.
POWER_SPEC = dict(POWER_ARGUMENT_SPEC, power=dict(POWER_ARGUMENT_SPEC["power"], required=False))


def _unexpected(error: Exception, run, changed: bool) -> str:
    """The message for an error outside NodeguardError (a bug, or an API answer that is not what it should be,
    such as a 2xx answer that is not JSON): what failed, and what this run already changed."""
    text = f"unexpected error ({type(error).__name__}): {error}"
    if not changed:
        return f"{text}. Nothing was changed"
    incident = (run.record or {}).get("id")
    return (
        f"{text}, after the out-of-service taint was written (incident {incident}). The taint and its record stay; "
        "rerun node-outage to continue where it stopped, or node-recover once the node is back"
    )


def _plan_lines(timing: dict, plan: list, proofs: list) -> list:
    """The plan as the role prints it: where the timing came from, then one line per step; the proofs this run
    read, one line each under the prove step."""
    lines = [timing["detail"]] if timing else []
    for entry in plan:
        if entry["step"] == "prove" and proofs:
            lines.append(f"prove | {entry['status']} | the power-off proofs, as read now:")
            lines += [f"    {proof['name']}: {'OK' if proof['ok'] else 'MISSING'} ({proof['detail']})" for proof in proofs]
        else:
            lines.append(f"{entry['step']} | {entry['status']} | {entry['action']}")
    return lines


def _summary(result: dict) -> list:
    """The outcome as the role prints it (lists and dicts as Python writes them, as Jinja did before)."""
    resumed = f" from {result['resumed_from']}" if result["resumed_from"] else ""
    return [
        f"{result['message']} ({result['action']}{resumed})",
        f"proofs: {[proof['detail'] for proof in result['proofs']]}",
        f"replacements: {(result['record'] or {}).get('replacements', 'n/a')}",
    ]


def main():
    module = AnsibleModule(argument_spec=dict(K8S_AUTH_ARGUMENT_SPEC, **POWER_SPEC, **OPTIONS), supports_check_mode=True)
    p = module.params
    run = None
    timing = {}
    try:
        power = reader_for(p["power"], p["node"], "off", p["allow_manual_attestation"]) if p["power"] else None
        cluster = cluster_for(module)  # every call's timeouts fit lock_ttl_seconds
        # Timing defaults from the profile tune-failover applied; explicit options win (docs/runbooks/node-outage.md).
        profile = None
        event_path = p["power_event_time"] is not None
        if p["not_ready_seconds"] is None or p["lease_margin_seconds"] is None or event_path:
            profile = applied.read(cluster.get_config_map(applied.NAMESPACE, applied.NAME))
        timing = applied.resolve_timing(p["not_ready_seconds"], p["lease_margin_seconds"], profile, power_event=event_path)
        given = {name: p[name] for name in OPTIONS if name != "job_id"}
        given.update({key: timing[key] for key in applied.TIMING_KEYS})
        options = OutageOptions(**given, job_id=p["job_id"] or default_job_id())
        cluster.set_deadline(deadline.outage_seconds(options))
        run = OutageRun(cluster, power, options, Clock(), module.check_mode)
        result = run.run()
    except Exception as e:  # noqa: BLE001 - one failure path; an unexpected error must still say what changed
        if run is not None and run.lock.release_note:
            module.warn(run.lock.release_note)  # next to the run's own error, never instead of it
        changed = bool(run and run.changed)  # the taint, once written, is a change whatever failed after it
        facts = run.facts if run else {}
        plan = outage_plan(run.record, facts, run.o) if run else []
        message = str(e) if isinstance(e, NodeguardError) else _unexpected(e, run, changed)
        module.fail_json(
            msg=message,
            error=message,
            plan_lines=_plan_lines(timing, plan, facts.get("proofs", [])),
            changed=changed,
            node=p["node"],
            proofs=facts.get("proofs", []),
            power=facts.get("power"),
            record=run.record if run else None,
            lock=run.lock.report() if run else None,
            plan=plan,
            timing=timing,
        )
    result["lock"] = run.lock.report()  # after the release
    if run.lock.release_note:
        module.warn(run.lock.release_note)
    plan_lines = _plan_lines(timing, result["plan"], result["proofs"])
    module.exit_json(timing=timing, plan_lines=plan_lines, summary=_summary(result), error=None, **result)


if __name__ == "__main__":
    main()
