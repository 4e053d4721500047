"""meta/ee-bindep.txt is what ansible-builder's introspection hands to bindep in every execution environment that
includes the collection: bindep must parse it (a profile name with '_' made every such build fail with
'bindep.txt contains unparsable content'), and its profiles select the fence agents on both package families."""

from __future__ import annotations

from pathlib import Path

import pytest

bindep_depends = pytest.importorskip("bindep.depends", reason="bindep is in requirements.txt; run make setup")

BINDEP = Path(__file__).resolve().parents[3] / "meta" / "ee-bindep.txt"


def packages(platform: str, profiles: list[str]) -> list[str]:
    depends = bindep_depends.Depends(BINDEP.read_text())
    rules = depends.active_rules([*profiles, f"platform:{platform}"])
    return sorted(rule[0] for rule in rules)


def test_bindep_parses_the_collection_file() -> None:
    bindep_depends.Depends(BINDEP.read_text())


def test_nothing_is_installed_by_default() -> None:
    assert packages("dpkg", ["default"]) == []
    assert packages("rpm", ["default"]) == []


@pytest.mark.parametrize(
    ("platform", "expected"),
    [("dpkg", ["fence-agents"]), ("rpm", ["fence-agents-ipmilan", "fence-agents-redfish"])],
)
def test_the_fence_agent_profile_selects_the_agents_of_each_package_family(platform: str, expected: list[str]) -> None:
    assert packages(platform, ["fence-agent"]) == expected


def test_the_ipmi_profile_selects_ipmitool() -> None:
    assert packages("dpkg", ["ipmi"]) == ["ipmitool"]
