"""What the model refuses to render per version (versions.refused_settings), for the version matrix."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.model import versions as v
from ansible_collections.nodeguard.failover.plugins.module_utils.model.presets import PRESET_NAMES
from ansible_collections.nodeguard.failover.plugins.module_utils.model.profile import build_profile

KCM = "kube-controller-manager"
EVICTION_FLAG = (KCM, "flag", "pod-eviction-timeout", "5m0s")
TBE_FALSE = (KCM, "gate", "TaintBasedEvictions", "false")
TBE_TRUE = (KCM, "gate", "TaintBasedEvictions", "true")
OOS_TRUE = (KCM, "gate", "NodeOutOfServiceVolumeDetach", "true")
FORCE_DETACH = (KCM, "flag", "disable-force-detach-on-timeout", "true")

EXPECTED = {
    18: {TBE_FALSE, OOS_TRUE, FORCE_DETACH},
    19: {TBE_FALSE, OOS_TRUE, FORCE_DETACH},
    20: {TBE_TRUE, OOS_TRUE, FORCE_DETACH},
    23: {TBE_TRUE, OOS_TRUE, FORCE_DETACH},
    24: {TBE_TRUE, FORCE_DETACH},
    26: {TBE_TRUE, FORCE_DETACH},
    27: {EVICTION_FLAG, TBE_TRUE, FORCE_DETACH},
    29: {EVICTION_FLAG, TBE_TRUE, FORCE_DETACH},
    30: {EVICTION_FLAG, TBE_TRUE},
    31: {EVICTION_FLAG, TBE_TRUE},
    32: {EVICTION_FLAG, TBE_TRUE, OOS_TRUE},
    36: {EVICTION_FLAG, TBE_TRUE, OOS_TRUE},
}


@pytest.mark.parametrize("minor", sorted(EXPECTED))
def test_refused_settings_per_version(minor):
    refused = v.refused_settings(v.parse_version(f"1.{minor}.3"))
    assert {(item.component, item.kind, item.name, item.value) for item in refused} == EXPECTED[minor]
    assert all(item.reason for item in refused)


def rendered_controller_manager(minor, preset):
    profile = build_profile({"kubernetes_version": f"1.{minor}.0", "node_count": 3}, preset=preset)
    return profile["flags"]["kube_controller_manager"]


@pytest.mark.parametrize("minor", range(v.OLDEST_SUPPORTED[1], v.NEWEST_SUPPORTED[1] + 1))
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_no_preset_renders_a_refused_setting(minor, preset):
    flags = rendered_controller_manager(minor, preset)
    gates = flags.get("feature-gates") or {}
    for item in v.refused_settings(v.parse_version(f"1.{minor}.0")):
        if item.kind == "flag":
            assert flags.get(item.name) is None, item
        else:
            rendered = gates.get(item.name)
            assert rendered is None or str(rendered).lower() != item.value, item
