"""The profiles the benchmark measures, as concrete settings for the kubelet, the controller
manager and the apiserver.

- kubernetes-default: nothing set; every component keeps its default.
- seed-001: the hand-tuned profile of seeds/001 (kubelet nodeStatusUpdateFrequency 1s,
  node-monitor-period 1s, node-monitor-grace-period 4s, default tolerations). The collection's
  model refuses it (4s grace is shorter than 5 lease renewals of 10s), so it is written here by
  hand; it works because an explicit 1s update frequency also makes the kubelet post its full
  Node status every second (nodeStatusReportFrequency defaults to it).
- every preset of the model (plugins/module_utils/model/presets.py), rendered by the model itself.
- power-event: the stock settings of kubernetes-default (nothing set) plus the event-led path of
  issue 13: the BMC's Redfish power event reaches ansible-rulebook (extensions/eda/rulebooks/
  power-events.yml), which starts node-outage with node_outage_power_event_time; it does not wait
  for NotReady. Its heartbeat cost is the stock rhythm; its own load (the incident's API requests,
  BMC requests, the rulebook process) is not on etcd and is reported apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
_COLLECTIONS = REPO / ".build" / "collections"
if str(_COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(_COLLECTIONS))
sys.path.insert(0, str(REPO / "tests" / "integration"))

import lablib  # noqa: E402
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import PRESET_NAMES  # noqa: E402
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import build_profile  # noqa: E402
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediated import (  # noqa: E402
    IN_ORDER,
    OVERLAPPED,
    remediated_timeline,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.remediation import (  # noqa: E402
    STOCK_REMEDIATION,
    remediation_settings,
)
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import read_settings  # noqa: E402
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import parse_version  # noqa: E402

KUBERNETES_VERSION = lablib.K8S_VERSION.removeprefix("v")  # the version the labs build and run: the model renders for it
# node-outage's proofs in this checkout (model/remediated.py's default proof order); bench/run_record.py records it
# with each make bench. A record without one ran commit 75c96f0, the last make bench before the proofs overlapped.
CHECKOUT_PROOF_ORDER = OVERLAPPED
REFERENCE_PROFILES = ("kubernetes-default", "seed-001")
PRESETS = tuple(name for name in PRESET_NAMES if name != "kubernetes-default")
# Profiles whose failover is led by the BMC's power event, not by the node lifecycle controller.
EVENT_LED_PROFILES = ("power-event",)
ALL_PROFILES = REFERENCE_PROFILES + PRESETS + EVENT_LED_PROFILES
# The heartbeat settings each event-led profile runs with.
EVENT_LED_SETTINGS = {"power-event": "kubernetes-default"}

SEED_001 = {
    "kubelet": {"nodeStatusUpdateFrequency": "1s"},
    "kube_controller_manager": {"node-monitor-period": "1s", "node-monitor-grace-period": "4s"},
    "kube_apiserver": {},
}


def _without_removals(flags: dict) -> dict:
    """The model marks flags to remove with None; for a fresh component that means "not set"."""
    return {name: value for name, value in (flags or {}).items() if value is not None}


def profile_settings(name: str, node_count: int = 3) -> dict:
    """{kubelet: {camelCase: value}, kube_controller_manager: {flag: value}, kube_apiserver: {flag: value}}."""
    name = EVENT_LED_SETTINGS.get(name, name)
    if name == "seed-001":
        return {part: dict(values) for part, values in SEED_001.items()}
    if name == "kubernetes-default":
        return {"kubelet": {}, "kube_controller_manager": {}, "kube_apiserver": {}}
    facts = {"kubernetes_version": KUBERNETES_VERSION, "node_count": node_count, "distribution": "kubeadm"}
    settings = build_profile(facts, preset=name)["settings"]
    return {
        "kubelet": dict(settings["kubelet"]),
        "kube_controller_manager": _without_removals(settings["kube_controller_manager"]),
        "kube_apiserver": _without_removals(settings["kube_apiserver"]),
    }


def node_outage_default(variable: str):
    """A default of the node_outage role (roles/node_outage/defaults/main.yml), read, not copied.

    The timing ones are null there (taken from the applied profile); on a cluster never tuned, as the
    reference profiles are, they are the model's stock values.
    """
    defaults = yaml.safe_load((REPO / "roles" / "node_outage" / "defaults" / "main.yml").read_text())
    if defaults[variable] is None:
        return STOCK_REMEDIATION[variable.removeprefix("node_outage_")]
    return defaults[variable]


def model_prediction(name: str, node_count: int) -> dict | None:
    """The model's predicted timeline, load and remediation settings for a preset (None for seed-001, which it refuses).

    An event-led profile gets the prediction of its heartbeat settings: the model predicts the heartbeat path only.
    """
    name = EVENT_LED_SETTINGS.get(name, name)
    if name == "seed-001":
        return None
    facts = {"kubernetes_version": KUBERNETES_VERSION, "node_count": node_count, "distribution": "kubeadm"}
    profile = build_profile(facts, preset=name)
    return {"timeline": profile["timeline"], "load": profile["load"], "remediation": profile["remediation"]}


def measured_proof_order(run: dict | None) -> str:
    """The model's proof order of the code that measured the timelines: that of the make bench's record
    (raw/make-bench.json); IN_ORDER for a record written before records had one (commit 75c96f0)."""
    return (run or {}).get("proof_order") or IN_ORDER


def remediated_prediction(name: str, trigger: str | None = None, observed: dict | None = None) -> dict:
    """The model's remediated timeline of a measured profile, per proof order: {OVERLAPPED: node-outage today,
    IN_ORDER: commit 75c96f0, which measured the page's rows} (model/remediated.py).

    The presets are applied with tune-failover, so node-outage waits their remediation.not_ready_seconds; the
    reference profiles are written without it, a cluster never tuned: node-outage's stock 60 s. power-event is
    led by the BMC's event (model trigger power-event); every other remediated row by NotReady (node-watch).
    ``trigger`` asks for another one (``alert``: the shipped Prometheus alert, not measured). ``observed``: one run's
    own moments (model/remediated.py OBSERVABLE), to predict the rest of that run from them.
    """
    timings, problems, _defaults = read_settings(profile_settings(name), parse_version(KUBERNETES_VERSION))
    if problems:
        raise ValueError(f"{name}: {problems[0][1]}")
    trigger = trigger or ("power-event" if name in EVENT_LED_PROFILES else "node-watch")
    remediation = remediation_settings(timings) if name in PRESETS else None
    return {order: remediated_timeline(timings, trigger, remediation, proof_order=order, observed=observed)
            for order in (IN_ORDER, OVERLAPPED)}
