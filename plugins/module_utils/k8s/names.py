# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes object names, checked before a name from outside (an alert, an inventory, a user) is used.

Node names are DNS-1123 subdomains (Kubernetes ``IsDNS1123Subdomain``): at most 253 characters,
lowercase letters, digits, ``-`` and ``.``, each dot-separated part starting and ending with a letter
or digit. Such a name can never hold template syntax (``{``, ``%``, ``#``), quotes, spaces or newlines.

This file imports nothing from the collection: the EDA event filter
(extensions/eda/plugins/event_filter/alertmanager_nodes.py) loads it by path, outside Ansible.
"""

from __future__ import annotations

import re

DNS1123_SUBDOMAIN_MAX = 253
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_SHOWN_MAX = 80  # characters of a refused value shown in a message


def is_dns1123_subdomain(value: object) -> bool:
    """True when ``value`` is a string that Kubernetes accepts as a node name."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= DNS1123_SUBDOMAIN_MAX
        and _DNS1123_SUBDOMAIN.fullmatch(value) is not None
    )


def why_not_node_name(value: object) -> str:
    """Empty when ``value`` is a valid node name, else one sentence saying what is wrong with it."""
    if not isinstance(value, str):
        return f"a node name must be a string, not {type(value).__name__}"
    if not value:
        return "the node name is empty"
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        return f"the node name is {len(value)} characters long, more than {DNS1123_SUBDOMAIN_MAX}"
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        return (
            f"{shown(value)} is not a Kubernetes node name (DNS-1123 subdomain: lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit)"
        )
    return ""


def why_not_object_name(value: object, what: str) -> str:
    """Empty when ``value`` is a DNS-1123 subdomain (the names of Leases, namespaces, ConfigMaps), else why not;
    ``what`` names the value in the message ("Lease name")."""
    if is_dns1123_subdomain(value):
        return ""
    return f"{shown(value)} is not a valid {what} (DNS-1123: lowercase letters, digits, '-' and '.', at most 253 characters)"


def shown(value: object) -> str:
    """``value`` quoted for a message, inert: only letters, digits and ``-._:/@`` stay, every other character
    (braces, quotes, spaces, newlines, ...) is shown as ``\\xNN``/``\\uNNNN``, and it is cut after 80 characters.
    The result can be printed or logged anywhere and is never template syntax."""
    text = value if isinstance(value, str) else repr(value)
    cut = len(text) > _SHOWN_MAX
    out = []
    for char in text[:_SHOWN_MAX]:
        if char.isascii() and (char.isalnum() or char in "-._:/@"):
            out.append(char)
        elif ord(char) < 0x100:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}")
    return "'" + "".join(out) + ("'..." if cut else "'")
