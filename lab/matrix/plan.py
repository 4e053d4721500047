"""What the version matrix checks for one Kubernetes version, asked of the collection's model.

Pure: no process is started here (run.py does that). For every profile the model knows (the presets,
and balanced with --disable-force-detach-on-timeout where the model allows it) each component gets
the flags or KubeletConfiguration fields the model renders, and must accept them. Every setting the
model refuses to render for the version (model.versions.refused_settings) is passed to its component
alone, and must be rejected. Controls prove that a rejection is seen at all: an unknown flag for
kube-apiserver, an invalid value and an unknown field for the kubelet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import PRESET_NAMES
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import build_profile
from ansible_collections.nodeguard.failover.plugins.module_utils.model.timings import APISERVER, CONTROLLER_MANAGER, KUBELET
from ansible_collections.nodeguard.failover.plugins.module_utils.model.versions import parse_version, refused_settings
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import flags as flaglib
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubelet as kubelet_renderer
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

APISERVER_BINARY = "kube-apiserver"
CONTROLLER_MANAGER_BINARY = "kube-controller-manager"
KUBELET_BINARY = "kubelet"
COMPONENTS = (APISERVER_BINARY, CONTROLLER_MANAGER_BINARY, KUBELET_BINARY)
ACCEPTED = "accepted"
REJECTED = "rejected"

# Profiles beyond the presets: (preset, overrides). Skipped for a version whose model refuses them.
REFERENCE_PROFILES = {
    "balanced+disable-force-detach": ("balanced", {"disable_force_detach_on_timeout": True}),
}
# Any cluster size works for rendering; three nodes keep every preset inside the heartbeat budget.
NODE_COUNT = 3
UNKNOWN_FLAG = "nodeguard-matrix-control"
UNKNOWN_FIELD = "nodeguardMatrixControl"


@dataclass(frozen=True)
class Check:
    """One start of one binary: what it is given and what it must do with it."""

    component: str
    profile: str  # a preset or reference profile, "refused" or "control"
    kind: str  # "rendered", "refused" or "control"
    expected: str  # ACCEPTED or REJECTED
    args: tuple = ()  # command-line flags on top of the runner's base flags
    kubelet_settings: dict = field(default_factory=dict)  # KubeletConfiguration fields on top of the base config
    reason: str = ""

    @property
    def given(self) -> str:
        """What the binary was given, in one line for the table."""
        parts = list(self.args) + [f"{name}: {json.dumps(value) if not isinstance(value, str) else value}"
                                   for name, value in self.kubelet_settings.items()]
        return " ".join(parts) if parts else "(nothing beyond the base)"


def flag_args(flags: dict) -> tuple:
    """{name: value} as rendered by the model -> ("--name=value", ...); null means "not set"."""
    args = []
    for name, value in flags.items():
        if name == flaglib.FEATURE_GATES and isinstance(value, dict):
            gates = {gate: flaglib.flag_value(gate, state, "matrix") for gate, state in value.items() if state is not None}
            if gates:
                args.append(f"--{name}={flaglib.format_feature_gates(gates)}")
        elif value is not None:
            args.append(f"--{name}={flaglib.flag_value(name, value, 'matrix')}")
    return tuple(args)


def profiles(version_text: str) -> dict:
    """{profile name: profile} for every preset and reference profile the model builds for this version."""
    facts = {"kubernetes_version": version_text, "node_count": NODE_COUNT}
    built = {name: build_profile(facts, preset=name) for name in PRESET_NAMES}
    for name, (preset, overrides) in REFERENCE_PROFILES.items():
        try:
            built[name] = build_profile(facts, preset=preset, overrides=overrides)
        except ProfileError:
            continue  # the model refuses it here; refused_settings covers that setting
    return built


def rendered_checks(version_text: str) -> list:
    checks = []
    for name, profile in profiles(version_text).items():
        flags = profile["flags"]
        checks.append(Check(APISERVER_BINARY, name, "rendered", ACCEPTED, args=flag_args(flags[APISERVER])))
        checks.append(Check(CONTROLLER_MANAGER_BINARY, name, "rendered", ACCEPTED, args=flag_args(flags[CONTROLLER_MANAGER])))
        kubelet = {key: value for key, value in profile["settings"][KUBELET].items() if value is not None}
        checks.append(Check(KUBELET_BINARY, name, "rendered", ACCEPTED, kubelet_settings=kubelet))
    return checks


def refused_checks(version_text: str) -> list:
    checks = []
    for refusal in refused_settings(parse_version(version_text)):
        setting = f"{flaglib.FEATURE_GATES}={refusal.name}" if refusal.kind == "gate" else refusal.name
        checks.append(Check(refusal.component, "refused", "refused", REJECTED, args=(f"--{setting}={refusal.value}",),
                            reason=refusal.reason))
    return checks


def control_checks() -> list:
    return [
        Check(APISERVER_BINARY, "control", "control", REJECTED, args=(f"--{UNKNOWN_FLAG}=1",),
              reason="an unknown flag: proves a rejection is seen"),
        Check(KUBELET_BINARY, "control", "control", REJECTED, kubelet_settings={"nodeLeaseDurationSeconds": -5},
              reason="an invalid value: proves the kubelet's validation is reached and seen"),
        Check(KUBELET_BINARY, "control", "control", REJECTED, kubelet_settings={UNKNOWN_FIELD: True},
              reason="an unknown field: proves strict decoding problems are seen"),
    ]


def checks_for(version_text: str, components=COMPONENTS) -> list:
    """Every check of these components for one version: rendered profiles first, then refusals and controls."""
    every = rendered_checks(version_text) + refused_checks(version_text) + control_checks()
    return [check for check in every if check.component in components]


def kubelet_config(base_text: str, settings: dict) -> str:
    """The base KubeletConfiguration with the settings merged in by the collection's own renderer."""
    document = yamldoc.load(base_text, "matrix base config")
    return yamldoc.dump(kubelet_renderer.render(document, settings, "matrix config").document, base_text)
