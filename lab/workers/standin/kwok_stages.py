"""kwok Stage documents that make kwok behave like a kubelet with the given settings.

kwok drives Node and Pod status through "stages": a selector on the object, an optional delay,
and a status patch rendered from a Go template (strategic merge, so list entries merge by key).

- node-ready: when the Ready condition is not True (new node, or the node lifecycle controller
  set it Unknown while the node was off), post Ready=True at once, as a restarted kubelet does.
- node-status-report: while Ready, refresh every condition's lastHeartbeatTime once per
  nodeStatusReportFrequency: the kubelet's full status write when nothing changed.
  (Lease renewal is kwok's --node-lease-duration-seconds, every 0.25 x the duration.)
- pod-start: start a pod only when the volume manager has set PodReadyToStartContainers=True,
  which it does once every attachable volume of the pod is attached to this node. A pod whose
  RWO volume is still attached elsewhere therefore stays ContainerCreating, as on a real node.
- pod-ready-again: the node lifecycle controller marks pods Ready=False when the node goes
  NotReady; a kubelet that comes back reports its running pods Ready again.
- pod-complete: pods owned by a Job finish.
- pod-finalize: a pod being deleted is removed (finalizers cleared, grace over).
"""

from __future__ import annotations

import yaml
from kubelet_config import KubeletSettings

# Jitter like the kubelet's status loop: a few percent, so nodes do not write in lockstep.
_JITTER_FRACTION = 0.04

_NODE_READY_TEMPLATE = """\
{{ $now := Now }}
conditions:
- type: Ready
  status: "True"
  reason: KubeletReady
  message: kubelet stand-in (kwok) is posting ready status
  lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
- type: MemoryPressure
  status: "False"
  reason: KubeletHasSufficientMemory
  message: kubelet has sufficient memory available
  lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
- type: DiskPressure
  status: "False"
  reason: KubeletHasNoDiskPressure
  message: kubelet has no disk pressure
  lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
- type: PIDPressure
  status: "False"
  reason: KubeletHasSufficientPID
  message: kubelet has sufficient PID available
  lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
phase: Running
"""

_NODE_REPORT_TEMPLATE = """\
{{ $now := Now }}
conditions:
{{ range .status.conditions }}
- type: {{ .type | Quote }}
  lastHeartbeatTime: {{ $now | Quote }}
{{ end }}
"""

_POD_START_TEMPLATE = """\
{{ $now := Now }}
conditions:
- type: Initialized
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: Ready
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ range .spec.readinessGates }}
- type: {{ .conditionType | Quote }}
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ end }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
phase: Running
startTime: {{ $now | Quote }}
"""

_POD_READY_AGAIN_TEMPLATE = """\
{{ $now := Now }}
conditions:
- type: ContainersReady
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: Ready
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
"""

_POD_COMPLETE_TEMPLATE = """\
{{ $now := Now }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
{{ end }}
phase: Succeeded
"""


def _expr(key: str, operator: str, values: list[str] | None = None) -> dict:
    expression = {"key": key, "operator": operator}
    if values is not None:
        expression["values"] = values
    return expression


def _condition(kind: str) -> str:
    return f'.status.conditions.[] | select( .type == "{kind}" ) | .status'


def _stage(name: str, kind: str, match: list[dict], nxt: dict, delay_seconds: float | None = None) -> dict:
    spec: dict = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": match},
        "next": nxt,
    }
    if delay_seconds:
        milliseconds = int(delay_seconds * 1000)
        spec["delay"] = {
            "durationMilliseconds": milliseconds,
            "jitterDurationMilliseconds": int(milliseconds * (1 + _JITTER_FRACTION)),
        }
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": name}, "spec": spec}


def stages(settings: KubeletSettings, *, volume_manager: bool = True) -> list[dict]:
    """The Stages; volume_manager=False starts pods at once (no volume manager: e.g. scale mode)."""
    not_deleting = _expr(".metadata.deletionTimestamp", "DoesNotExist")
    pod_start = [not_deleting, _expr(".status.podIP", "DoesNotExist")]
    if volume_manager:
        pod_start.append(_expr(_condition("PodReadyToStartContainers"), "In", ["True"]))
    return [
        _stage("node-ready", "Node", [_expr(_condition("Ready"), "NotIn", ["True"])],
               {"statusTemplate": _NODE_READY_TEMPLATE}),
        _stage("node-status-report", "Node",
               [_expr(".status.phase", "In", ["Running"]), _expr(_condition("Ready"), "In", ["True"])],
               {"statusTemplate": _NODE_REPORT_TEMPLATE},
               delay_seconds=settings.status_report_seconds),
        _stage("pod-start", "Pod", pod_start, {"statusTemplate": _POD_START_TEMPLATE}),
        _stage("pod-ready-again", "Pod",
               [not_deleting, _expr(".status.phase", "In", ["Running"]),
                _expr(_condition("Ready"), "In", ["False"])],
               {"statusTemplate": _POD_READY_AGAIN_TEMPLATE}),
        _stage("pod-complete", "Pod",
               [not_deleting, _expr(".status.phase", "In", ["Running"]),
                _expr(".metadata.ownerReferences.[].kind", "In", ["Job"])],
               {"statusTemplate": _POD_COMPLETE_TEMPLATE}),
        _stage("pod-finalize", "Pod", [_expr(".metadata.deletionTimestamp", "Exists")],
               {"finalizers": {"empty": True}, "delete": True}),
    ]


class _BlockStyleDumper(yaml.SafeDumper):
    """Writes multi-line strings (the templates) as readable literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, text: str):
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_BlockStyleDumper.add_representer(str, _represent_str)


def dump(documents: list[dict]) -> str:
    """YAML documents with the templates as literal blocks (what kwok --config reads)."""
    return yaml.dump_all(documents, Dumper=_BlockStyleDumper, sort_keys=False)


def render(settings: KubeletSettings) -> str:
    return dump(stages(settings))
