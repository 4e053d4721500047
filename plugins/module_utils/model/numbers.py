# -*- coding: utf-8 -*-
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Numbers from user input: YAML numbers, or numeric strings (command-line extra vars are strings)."""

from __future__ import annotations


def numeric(value):
    """The number value holds, or None when it holds none (booleans are not numbers here)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def blank(value) -> bool:
    """None or an empty string: what an unset Ansible variable templates to."""
    return value is None or (isinstance(value, str) and not value.strip())
