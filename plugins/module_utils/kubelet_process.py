# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the running kubelet really runs with, and the files that pass it flags (failover_node_info's reader).

The kubelet is the process of its systemd unit (found by the unit's cgroup in ``/proc/<pid>/cgroup``): the process
named ``kubelet`` in it (kubeadm; RKE2 starts one as a child of rke2), else the unit's first process (k3s runs the
kubelet inside the k3s process). From it only the environment names the collection needs are kept
(``model/rules.py`` ``HTTP2_DEFAULTS``): any other value may be a secret and is never returned.

Command-line flags override the kubelet's config file. A failover flag on the command line, or in one of the files
that put flags there (kubeadm's 10-kubeadm.conf sources ``/var/lib/kubelet/kubeadm-flags.env`` and
``/etc/default/kubelet`` or ``/etc/sysconfig/kubelet``; systemd units and drop-ins; kubespray's
``/etc/kubernetes/kubelet.env``; RKE2/k3s ``kubelet-arg``), is an override: it is returned with its file and line.
Read-only.
"""

from __future__ import annotations

import glob
import os
import re

from ansible_collections.nodeguard.failover.plugins.module_utils.model.rules import HTTP2_DEFAULTS
from ansible_collections.nodeguard.failover.plugins.module_utils.renderers import kubelet

ENVIRONMENT_NAMES = tuple(HTTP2_DEFAULTS)
# kubespray's kubelet environment file: its kubelet.service reads EnvironmentFile=-{{ kube_config_dir }}/kubelet.env
# (roles/kubernetes/node/templates/kubelet.service.j2, kube_config_dir /etc/kubernetes). A node that has it was set up,
# and will be set up again, by kubespray.
KUBESPRAY_ENV = "/etc/kubernetes/kubelet.env"
# Files whose lines become kubelet flags (kubeadm "Configuring each kubelet in your cluster using kubeadm", the
# kubelet drop-in file for systemd; kubespray's kubelet.env).
FLAG_FILES = ("/var/lib/kubelet/kubeadm-flags.env", "/etc/default/kubelet", "/etc/sysconfig/kubelet", KUBESPRAY_ENV)
UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system")
# The kubelet flags that set a failover field of the config file (renderers/kubelet.py). --feature-gates is not one:
# the kubelet merges the flag's gates into the config file's, gate by gate, so the flag replaces no tuned value.
FAILOVER_FLAGS = tuple(sorted(flag for flag, field in kubelet.FLAG_FIELDS.items()
                              if field in kubelet.FAILOVER_FIELDS and field != "featureGates"))
_DIGITS = re.compile(r"^\d+$")


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def _text(path: str) -> str:
    return _read(path).decode("utf-8", "replace")


def _argv(proc: str, pid: str) -> list:
    raw = _read(os.path.join(proc, pid, "cmdline"))
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def _parent(proc: str, pid: str) -> str:
    stat = _text(os.path.join(proc, pid, "stat"))
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[1] if len(fields) > 1 else ""


def _in_unit(proc: str, pid: str, units: tuple) -> bool:
    lines = _text(os.path.join(proc, pid, "cgroup")).splitlines()
    paths = [line.split(":", 2)[-1] for line in lines]
    return any(path.endswith(f"/{unit}.service") or f"/{unit}.service/" in path for path in paths for unit in units)


def find_kubelet(proc: str, units: tuple) -> str:
    """The pid of the running kubelet of these systemd units, "" when none runs."""
    members = {pid: _argv(proc, pid) for pid in os.listdir(proc) if _DIGITS.match(pid) and _in_unit(proc, pid, units)}
    members = {pid: argv for pid, argv in members.items() if argv}
    named = [pid for pid, argv in members.items() if os.path.basename(argv[0]) == "kubelet"]
    first = [pid for pid in members if _parent(proc, pid) not in members]
    chosen = named or first
    return min(chosen, key=int) if chosen else ""


def parse_flags(argv: list) -> dict:
    """``--name=value`` and ``--name value`` -> {name: [values]} (a bare ``--name`` has the value None)."""
    flags = {}
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if not token.startswith("--"):
            continue
        name, equals, value = token[2:].partition("=")
        if not equals:
            value = None
            if index < len(argv) and not argv[index].startswith("-"):
                value = argv[index]
                index += 1
        flags.setdefault(name, []).append(value)
    return flags


def environment(proc: str, pid: str) -> dict:
    """The names of ENVIRONMENT_NAMES the process runs with; no other value is read into memory we return."""
    raw = _read(os.path.join(proc, pid, "environ"))
    found = {}
    for entry in raw.split(b"\0"):
        name, _equals, value = entry.partition(b"=")
        if name.decode("utf-8", "replace") in ENVIRONMENT_NAMES:
            found[name.decode()] = value.decode("utf-8", "replace")
    return found


def flag_files(under, units: tuple, extra=()) -> list:
    """Every file that may put flags on the kubelet's command line, that exists on this host."""
    candidates = [under(path) for path in FLAG_FILES]
    for directory in UNIT_DIRS:
        for unit in units:
            candidates.append(under(os.path.join(directory, unit + ".service")))
            candidates += sorted(glob.glob(under(os.path.join(directory, unit + ".service.d", "*.conf"))))
    candidates += list(extra)
    return [path for path in dict.fromkeys(candidates) if os.path.isfile(path)]


def _flag_in_line(line: str, flag: str):
    """The value a line gives ``flag`` (``--flag=v``, ``--flag v``; RKE2/k3s ``kubelet-arg`` items ``- flag=v``),
    else None. Comment lines set nothing."""
    if line.lstrip().startswith("#"):
        return None
    name = re.escape(flag)
    match = (re.search(r"--" + name + r"(?:=|\s+)[\"']?([^\s\"']+)", line)
             or re.search(r"^\s*-\s*[\"']?" + name + r"=([^\s\"']+)", line))
    return match.group(1) if match else None


def overrides_in_files(paths: list) -> list:
    """Failover flags the files set: [{setting, flag, value, source: "file:line"}], in file and line order."""
    found = []
    for path in paths:
        for number, line in enumerate(_text(path).splitlines(), start=1):
            for flag in FAILOVER_FLAGS:
                value = _flag_in_line(line, flag)
                if value is not None:
                    found.append({"setting": kubelet.FLAG_FIELDS[flag], "flag": "--" + flag, "value": value,
                                  "source": f"{path}:{number}"})
    return found


def read_kubelet(proc: str, units: tuple, files: list) -> dict:
    """The running kubelet and the overrides: {pid, flags, config, environment, overrides}.

    ``config`` is the config file the running kubelet reads (its ``--config``; "" when it has none).
    ``flags`` are the failover flags of the running kubelet's command line (last value wins, as in the kubelet);
    ``overrides`` every failover flag that the command line or ``files`` set, with where it is set: the file and
    line when a file sets it, else ``/proc/<pid>/cmdline``.
    """
    pid = find_kubelet(proc, units) if os.path.isdir(proc) else ""
    running = parse_flags(_argv(proc, pid)[1:]) if pid else {}
    flags = {name: values for name, values in running.items() if name in FAILOVER_FLAGS}
    overrides = overrides_in_files(files)
    named = {entry["flag"] for entry in overrides}
    for name, values in sorted(flags.items()):
        if "--" + name not in named and values[-1] is not None:
            overrides.append({"setting": kubelet.FLAG_FIELDS[name], "flag": "--" + name, "value": values[-1],
                              "source": f"{os.path.join(proc, pid, 'cmdline')}"})
    return {"pid": int(pid) if pid else None, "flags": {name: values[-1] for name, values in flags.items()},
            "config": (running.get("config") or [""])[-1] or "",
            "environment": environment(proc, pid) if pid else {}, "overrides": overrides}
