"""Reading the rules of a shipped rulebook in the unit tests: a rule has one `action` or a list `actions`, and a
condition that is a string or an `all` of strings."""

from __future__ import annotations


def actions(rule: dict) -> list[dict]:
    """A rule's actions, in order."""
    return rule.get("actions") or [rule["action"]]


def action(rule: dict) -> dict:
    """A rule's actions as one dict, action name -> arguments."""
    return {name: args for one in actions(rule) for name, args in one.items()}


def condition(rule: dict) -> str:
    """A rule's condition; the conditions of an `all` joined with ' and '."""
    given = rule["condition"]
    return given if isinstance(given, str) else " and ".join(given["all"])
