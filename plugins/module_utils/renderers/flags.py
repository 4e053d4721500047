# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Component flags in the three shapes Kubernetes distributions store them.

* a list of strings: ``--name=value`` (static pod command) or ``name=value`` (RKE2/k3s ``*-arg``);
* a map ``name: value`` (RKE1 ``extra_args``, kubeadm v1beta3 ``extraArgs``);
* a list of ``{name, value}`` (kubeadm v1beta4 ``extraArgs``).

Wanted flags come as ``{name: value}`` with names without dashes; ``None`` removes a flag.
``feature-gates`` is special: a dict value (or the separate ``feature_gates`` argument) is
merged gate by gate into the existing ``A=true,B=false`` list instead of replacing it.
"""

from __future__ import annotations

import posixpath

from ansible_collections.nodeguard.failover.plugins.module_utils.errors import FileEditError
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import yamldoc

FEATURE_GATES = "feature-gates"


# ---------------------------------------------------------------- wanted values


def flag_value(name: str, value, where: str) -> str | None:
    """Normalise one wanted flag value to the string a command line carries (None = remove)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    raise FileEditError(
        f"{where}: flag {name!r} must be a string, number, boolean or null (null removes it), got {type(value).__name__} {value!r}"
    )


def check_flag_name(name, where: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise FileEditError(f"{where}: flag names must be non-empty strings, got {name!r}")
    if name.startswith("-"):
        raise FileEditError(f"{where}: give flag {name!r} without leading dashes")
    if "=" in name or " " in name:
        raise FileEditError(f"{where}: flag name {name!r} must not contain '=' or spaces")
    return name


def parse_feature_gates(text: str, where: str) -> dict:
    """``"A=true,B=false"`` -> ``{"A": "true", "B": "false"}`` (order kept)."""
    gates = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        gate, sep, value = part.partition("=")
        if not sep or not gate.strip():
            raise FileEditError(f"{where}: cannot read feature gate {part!r} in {text!r} (want Name=true|false)")
        gates[gate.strip()] = value.strip()
    return gates


def format_feature_gates(gates: dict) -> str:
    return ",".join(f"{gate}={value}" for gate, value in gates.items())


def _gate_value(gate, value, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower()
    raise FileEditError(
        f"{where}: feature gate {gate!r} must be true, false or null (null removes it), got {type(value).__name__} {value!r}"
    )


def merge_feature_gates(current_text: str | None, changes: dict, where: str) -> str | None:
    """Merge gate changes into a ``--feature-gates`` value; None when no gate is left."""
    if not isinstance(changes, dict):
        raise FileEditError(f"{where}: feature gates must be a mapping Name: true|false|null, got {changes!r}")
    gates = parse_feature_gates(current_text or "", where)
    for gate, value in changes.items():
        check_flag_name(gate, where)
        wanted = _gate_value(gate, value, where)
        if wanted is None:
            gates.pop(gate, None)
        else:
            gates[gate] = wanted
    return format_feature_gates(gates) or None


def plan(current: dict, flags: dict | None, feature_gates: dict | None, where: str) -> list:
    """Decide which flags must change.

    ``current`` maps a flag name to the list of values it has in the document (a flag may
    repeat; ``None`` stands for a bare ``--flag``). Returns ``[(name, new value or None)]``
    for the flags whose value differs from the wanted one, in the order asked. A repeated flag
    has the value of its last occurrence (the one a program reads last and keeps), so a file whose
    last value is the wanted one is not changed: the process already runs with it.
    """
    if flags is None:
        flags = {}
    if not isinstance(flags, dict):
        raise FileEditError(f"{where}: flags must be a mapping flag-name: value, got {flags!r}")
    flags = yamldoc.plain(flags, where)  # playbook variables arrive as tagged strings
    feature_gates = yamldoc.plain(feature_gates, f"{where} feature gates")
    if feature_gates is not None and FEATURE_GATES in flags and not isinstance(flags[FEATURE_GATES], dict):
        raise FileEditError(
            f"{where}: give feature gates either as the feature-gates flag string or as a mapping, not both"
        )
    wanted = []
    gate_changes = dict(feature_gates or {})
    for name, value in flags.items():
        check_flag_name(name, where)
        if name == FEATURE_GATES and isinstance(value, dict):
            gate_changes.update(value)
            continue
        wanted.append((name, flag_value(name, value, where)))
    if feature_gates is not None or isinstance(flags.get(FEATURE_GATES), dict):
        existing = current.get(FEATURE_GATES) or [None]
        wanted.append((FEATURE_GATES, merge_feature_gates(existing[-1], gate_changes, where)))

    changes = []
    for name, value in wanted:
        values = current.get(name, [])
        if value is None:
            if values:
                changes.append((name, None))
        elif not values or (values[-1] != value and not (value == "true" and values[-1] is None)):
            changes.append((name, value))  # a repeated flag counts with its last value, as a command line reads it
    return changes


def describe(changes: list, current: dict, where: str) -> list:
    """Human-readable lines for the ``changes`` return value."""
    lines = []
    for name, value in changes:
        before = current.get(name)
        shown_before = ",".join("(bare)" if v is None else v for v in before) if before else "(unset)"
        shown_after = "(removed)" if value is None else value
        lines.append(f"{where}: {name} {shown_before} -> {shown_after}")
    return lines


# ---------------------------------------------------------------- list of "--name=value"


def split_item(item, prefix: str):
    """``"--a=b"`` -> ``("a", "b")``; ``"--a"`` -> ``("a", None)``; other items -> None."""
    if not isinstance(item, str) or not item.startswith(prefix) or (prefix and item.startswith(prefix + "-")):
        return None
    name, sep, value = item[len(prefix):].partition("=")
    if not name:
        return None
    return name, (value if sep else None)


def read_list(items, prefix: str) -> dict:
    current = {}
    for item in items or []:
        split = split_item(item, prefix)
        if split:
            current.setdefault(split[0], []).append(split[1])
    return current


def last_values(flags: dict) -> dict:
    """``{name: [value, ...]}`` -> ``{name: the last value}``, the one the program uses (None for a bare ``--flag``)."""
    return {name: values[-1] for name, values in flags.items() if values}


def apply_to_list(items, changes: list, prefix: str) -> None:
    """Apply planned changes in place: replace the first occurrence, drop repeats, append new."""
    for name, value in changes:
        positions = [i for i, item in enumerate(items) if (split_item(item, prefix) or (None,))[0] == name]
        if value is None:
            for i in reversed(positions):
                del items[i]
            continue
        text = f"{prefix}{name}={value}"
        if positions:
            items[positions[0]] = yamldoc.same_style(items[positions[0]], text)
            for i in reversed(positions[1:]):
                del items[i]
        else:
            items.append(text)


# ---------------------------------------------------------------- map name: value


def read_map(mapping) -> dict:
    current = {}
    for name, value in (mapping or {}).items():
        current[str(name)] = [None if value is None else _scalar_text(value)]
    return current


def _scalar_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def apply_to_map(mapping, changes: list) -> None:
    for name, value in changes:
        if value is None:
            mapping.pop(name, None)
        elif name in mapping:
            old = mapping[name]
            mapping[name] = yamldoc.same_style(old, value) if isinstance(old, str) else value
        else:
            mapping[name] = value


# ---------------------------------------------------------------- list of {name, value}


def read_named_list(items, where: str) -> dict:
    current = {}
    for item in items or []:
        if not isinstance(item, dict) or "name" not in item:
            raise FileEditError(f"{where}: extraArgs entries must be {{name, value}} mappings, found {item!r}")
        value = item.get("value")
        current.setdefault(str(item["name"]), []).append(None if value is None else _scalar_text(value))
    return current


def apply_to_named_list(items, changes: list) -> None:
    for name, value in changes:
        positions = [i for i, item in enumerate(items) if str(item.get("name")) == name]
        if value is None:
            for i in reversed(positions):
                del items[i]
            continue
        if positions:
            old = items[positions[0]].get("value")
            items[positions[0]]["value"] = yamldoc.same_style(old, value) if isinstance(old, str) else value
            for i in reversed(positions[1:]):
                del items[i]
        else:
            items.append(yamldoc.new_mapping({"name": name, "value": value}))


# ---------------------------------------------------------------- running processes


def processes_with_flags(process_lines, flags: dict | None, where: str) -> list:
    """The processes that run with ``flags``, from ``pgrep -a`` lines (``PID command args...``).

    A process's flags are read as static_pod reads a manifest: the ``--name=value`` words after the
    component's binary (a word whose file name is ``where``, the component's name, such as
    ``/usr/local/bin/kube-controller-manager`` after kOps' ``/go-runner --log-file=...``), else the words
    after the command. It runs with ``flags`` when ``plan`` finds nothing to change in them: every wanted
    value is the last one given, a ``None`` flag is absent, feature gates given as a mapping are set in
    its ``--feature-gates``. Returns each such process as its words, the PID first.
    """
    running = []
    for line in process_lines or []:
        words = str(line).split()
        if len(words) < 2:
            continue
        binary = next((number for number, word in enumerate(words[1:], 1) if posixpath.basename(word) == where), 1)
        if not plan(read_list(words[binary + 1:], "--"), flags, None, where):
            running.append(words)
    return running
