# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
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
