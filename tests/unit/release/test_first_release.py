"""What a user gets from the first release: metadata without placeholders, dependencies and minimum versions that are
used and tested, and a changelog that speaks of what ships (issue 34)."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import ansible.release
import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
USER_FRAGMENTS = REPO / "changelogs" / "fragments"
DEV_FRAGMENTS = REPO / "changelogs" / "dev-fragments"
# The components of changelog entries about the workshop, not the artifact (the text before " - ").
DEV_TOPICS = re.compile(r"^(lab|bench|benchmark|make bench|model|molecule|tests?)\b", re.IGNORECASE)
# A first release has nothing to break, deprecate or remove.
NOT_IN_A_FIRST_RELEASE = ("breaking_changes", "deprecated_features", "removed_features")


def load(*path: str):
    return yaml.safe_load(REPO.joinpath(*path).read_text(encoding="utf-8"))


def fragment_entries(folder: Path) -> list[tuple[str, str, str]]:
    """(file name, section, entry) of every fragment in folder."""
    found = []
    for path in sorted(folder.glob("*.yml")):
        for section, entries in yaml.safe_load(path.read_text(encoding="utf-8")).items():
            found += [(path.name, section, entry) for entry in (entries if isinstance(entries, list) else [entries])]
    return found


def first_release_sections() -> list[str]:
    """The sections of 0.1.0: from changelog.yaml once it is released, else from the user's fragments."""
    releases = load("changelogs", "changelog.yaml").get("releases") or {}
    if "0.1.0" in releases:
        return list(releases["0.1.0"].get("changes", {}))
    return [section for _name, section, _entry in fragment_entries(USER_FRAGMENTS)]


def test_galaxy_yml_names_no_placeholder_url():
    galaxy = load("galaxy.yml")
    for key in ("repository", "documentation", "homepage", "issues"):
        assert not re.search(r"example\.(invalid|com|org)|localhost", str(galaxy.get(key) or "")), key


@pytest.mark.parametrize("dependency", sorted(load("galaxy.yml")["dependencies"]))
def test_every_runtime_dependency_is_used_by_what_ships(dependency):
    used = [
        path
        for top in ("plugins", "roles", "playbooks", "extensions")
        for path in (REPO / top).rglob("*")
        if path.suffix in (".py", ".yml", ".yaml") and f"{dependency}." in path.read_text(encoding="utf-8")
    ]
    assert used, f"{dependency} is a dependency in galaxy.yml, but nothing in the artifact uses it"


def test_the_minimum_ansible_core_is_the_one_ci_tests():
    tested = ".".join(ansible.release.__version__.split(".")[:2])
    assert load("meta", "runtime.yml")["requires_ansible"] == f">={tested}.0"
    for meta in sorted(REPO.glob("roles/*/meta/main.yml")):
        assert yaml.safe_load(meta.read_text())["galaxy_info"]["min_ansible_version"] == tested, meta


def rulebook_minimum(text: str) -> tuple[int, ...]:
    (version,) = re.findall(r"^\s*(?:- )?ansible-rulebook>=([\d.]+)\s*$", text, re.MULTILINE)
    return tuple(int(part) for part in version.split("."))


def test_the_ansible_rulebook_minimum_has_what_the_rulebooks_use_and_ci_runs_it():
    rulebooks = "".join(path.read_text() for path in (REPO / "extensions" / "eda" / "rulebooks").glob("*.yml"))
    pin = rulebook_minimum((REPO / "deploy" / "ee" / "decision-environment.yml").read_text())
    if "eda.builtin.webhook" in rulebooks:  # the source is built in from ansible-rulebook 1.2.1 (its CHANGELOG.md)
        assert pin >= (1, 2, 1)
    tested = tuple(int(part) for part in importlib.metadata.version("ansible-rulebook").split(".")[:3])
    assert tested >= pin


def test_no_user_changelog_entry_is_about_the_lab_the_benchmark_or_the_tests():
    workshop = [(name, entry[:80]) for name, _section, entry in fragment_entries(USER_FRAGMENTS) if DEV_TOPICS.match(entry.split(" - ", 1)[0])]
    assert workshop == [], "move these to changelogs/dev-fragments/"


def test_development_fragments_are_about_the_workshop_and_never_a_release_summary():
    entries = fragment_entries(DEV_FRAGMENTS)
    assert entries and all(section != "release_summary" for _name, section, _entry in entries)


def test_the_first_release_has_a_summary_and_nothing_breaking_deprecated_or_removed():
    sections = first_release_sections()
    assert [section for section in sections if section in NOT_IN_A_FIRST_RELEASE] == []
    assert sections.count("release_summary") == 1
    speaks_of_earlier = [(name, entry[:80]) for name, _section, entry in fragment_entries(USER_FRAGMENTS)
                         if re.search(r"upgrading from|earlier release|previous release|before upgrading", entry, re.IGNORECASE)]
    assert speaks_of_earlier == []
