"""Version parsing and what each version accepts (kubernetes-facts.md)."""

import pytest
from ansible_collections.nodeguard.failover.plugins.module_utils.errors import ProfileError
from ansible_collections.nodeguard.failover.plugins.module_utils.model import versions as v


@pytest.mark.parametrize("text, expected", [
    ("1.35.4", (1, 35, 4)),
    ("v1.28.3+rke2r1", (1, 28, 3)),
    ("v1.30.2+k3s1", (1, 30, 2)),
    ("1.29", (1, 29, 0)),
    (" v1.18.20 ", (1, 18, 20)),
    ("v1.36.0-rc.1", (1, 36, 0)),
    ("v1.37.2", (1, 37, 2)),
])
def test_parse_version(text, expected):
    assert tuple(v.parse_version(text)) == expected


@pytest.mark.parametrize("text", ["1.17.9", "1.38.0", "2.0.0", "latest", "", "1"])
def test_unsupported_versions_are_refused(text):
    with pytest.raises(ProfileError) as error:
        v.parse_version(text)
    assert error.value.rule == "unsupported-version"
    assert str(error.value).startswith("[unsupported-version]")


@pytest.mark.parametrize("value", [1.35, None, 135, ["1.35.4"]])
def test_version_of_wrong_type(value):
    with pytest.raises(ProfileError) as error:
        v.parse_version(value)
    assert error.value.rule == "wrong-type"


# minor: (pod-eviction-timeout, TaintBasedEvictions, out-of-service gate, out-of-service support,
#         disable-force-detach-on-timeout, default grace, kubeadm api)
VERSION_TABLE = {
    18: (True, "locked-on", "absent", "no", False, 40.0, "kubeadm.k8s.io/v1beta2"),
    19: (True, "locked-on", "absent", "no", False, 40.0, "kubeadm.k8s.io/v1beta2"),
    20: (True, "removed", "absent", "no", False, 40.0, "kubeadm.k8s.io/v1beta2"),
    22: (True, "removed", "absent", "no", False, 40.0, "kubeadm.k8s.io/v1beta3"),
    24: (True, "removed", "off-by-default", "needs-gate", False, 40.0, "kubeadm.k8s.io/v1beta3"),
    25: (True, "removed", "off-by-default", "needs-gate", False, 40.0, "kubeadm.k8s.io/v1beta3"),
    26: (True, "removed", "on-by-default", "yes", False, 40.0, "kubeadm.k8s.io/v1beta3"),
    27: (False, "removed", "on-by-default", "yes", False, 40.0, "kubeadm.k8s.io/v1beta3"),
    30: (False, "removed", "on-by-default", "yes", True, 40.0, "kubeadm.k8s.io/v1beta3"),
    31: (False, "removed", "on-by-default", "yes", True, 40.0, "kubeadm.k8s.io/v1beta4"),
    32: (False, "removed", "removed", "yes", True, 50.0, "kubeadm.k8s.io/v1beta4"),
    35: (False, "removed", "removed", "yes", True, 50.0, "kubeadm.k8s.io/v1beta4"),
    36: (False, "removed", "removed", "yes", True, 50.0, "kubeadm.k8s.io/v1beta4"),
    # v1.37.2 sources, as 1.36 (docs/settings.md "Checked against the Kubernetes 1.36 and 1.37 sources")
    37: (False, "removed", "removed", "yes", True, 50.0, "kubeadm.k8s.io/v1beta4"),
}


@pytest.mark.parametrize("minor", sorted(VERSION_TABLE))
def test_version_table(minor):
    version = v.parse_version(f"1.{minor}.1")
    assert (
        v.accepts_pod_eviction_timeout(version),
        v.taint_based_evictions_gate(version),
        v.out_of_service_gate(version),
        v.out_of_service_support(version),
        v.accepts_disable_force_detach_on_timeout(version),
        v.default_grace_seconds(version),
        v.kubeadm_api_version(version),
    ) == VERSION_TABLE[minor]


def test_out_of_service_support_takes_strings_from_the_cluster():
    assert v.out_of_service_support("v1.25.9+k3s1") == "needs-gate"
    assert v.out_of_service_support("1.23.0") == "no"
    assert v.out_of_service_support("1.35.4") == "yes"


@pytest.mark.parametrize("minor, api, accepted", [
    (35, "kubeadm.k8s.io/v1beta3", True),
    (36, "kubeadm.k8s.io/v1beta3", True),  # deprecated but read by kubeadm v1.36.3 (its scheme.go registers it)
    (26, "kubeadm.k8s.io/v1beta2", True),  # the same in v1.26.15
    (27, "kubeadm.k8s.io/v1beta2", False),
    (37, "kubeadm.k8s.io/v1beta3", False),  # v1.37.2: "old API spec" (cmd/kubeadm/app/util/config/common.go)
    (30, "kubeadm.k8s.io/v1beta4", False),
    (31, "kubeadm.k8s.io/v1beta4", True),
    (21, "kubeadm.k8s.io/v1beta3", False),
    (31, "kubeadm.k8s.io/v1beta1", False),
])
def test_kubeadm_accepts_api(minor, api, accepted):
    assert v.kubeadm_accepts_api(v.parse_version(f"1.{minor}.0"), api) is accepted


def test_extra_args_style():
    assert v.kubeadm_extra_args_style("kubeadm.k8s.io/v1beta4") == "list"
    assert v.kubeadm_extra_args_style("kubeadm.k8s.io/v1beta3") == "map"


def test_version_facts_summary():
    facts = v.version_facts(v.parse_version("1.29.3"))
    assert facts["pod_safe_keepalive_sysctls"] is True
    assert facts["kubeadm_extra_args_style"] == "map"
    assert v.version_facts(v.parse_version("1.28.0"))["pod_safe_keepalive_sysctls"] is False


def test_every_kubeadm_api_the_model_names_is_one_the_renderer_edits():
    from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubeadm_config

    for minor in range(18, 37):
        version = v.Version(1, minor)
        api = v.version_facts(version)["kubeadm_api_version"]
        assert api in kubeadm_config.API_VERSIONS, f"1.{minor}: the model names {api}, the renderer cannot edit it"
        assert v.kubeadm_accepts_api(version, api)
        assert kubeadm_config.API_VERSIONS[api] == v.version_facts(version)["kubeadm_extra_args_style"]
