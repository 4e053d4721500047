"""How the version matrix reads what a binary did with its settings (pure: text in, verdict out).

kube-apiserver and kube-controller-manager: accepted = their /healthz answers "ok"; rejected = the
process exits first. The kubelet needs a container runtime to become healthy, and the matrix gives it
none, so its signal is its own version line: every kubelet from 1.18 on logs it first thing in Run()
("Version: {...}" up to 1.20, "Kubelet version" from 1.21), after it has decoded and validated its
configuration file and before it touches the runtime. A kubelet that exits without that line
rejected its configuration. A line saying the file was not decoded strictly (an unknown or duplicate
field; the kubelet then reads the file leniently, not as written) counts as a rejection too.
"""

from __future__ import annotations

import re

KUBELET_STARTED = re.compile(r'"Kubelet version"|\] Version: ')
# v1.18-v1.35 kubelets: "using lenient decoding as strict decoding failed: ... unknown field ..."
LENIENT = re.compile(r"lenient decoding|strict decoding error|unknown field", re.IGNORECASE)
# The lines a binary writes when it refuses to start, most telling first; the generic one is
# looked for from the end (the last error is the one the binary died of).
_REFUSAL_PATTERNS = (
    re.compile(r"unknown flag|unrecognized feature gate|cannot set feature gate|invalid argument", re.IGNORECASE),
    re.compile(r"failed to validate|invalid configuration|must be greater|lenient decoding|unknown field", re.IGNORECASE),
)
_ERROR = re.compile(r"^[EF]\d{4} |error", re.IGNORECASE)
# klog's header "F1123 18:30:00.123456   12345 server.go:123] " says nothing the reader needs.
_KLOG_HEADER = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ [\w.-]+:\d+\] ")
MESSAGE_LIMIT = 300


def kubelet_verdict(log_text: str) -> tuple:
    """("accepted" | "rejected" | None, the line that decided) from a kubelet's output so far; None = no verdict yet."""
    lenient = next((line for line in log_text.splitlines() if LENIENT.search(line)), None)
    if lenient is not None:
        return "rejected", clean(lenient)
    started = next((line for line in log_text.splitlines() if KUBELET_STARTED.search(line)), None)
    if started is not None:
        return "accepted", clean(started)
    return None, ""


def clean(line: str) -> str:
    """One log line without klog's header, cut to a table cell's length."""
    line = _KLOG_HEADER.sub("", line.strip())
    return line if len(line) <= MESSAGE_LIMIT else line[: MESSAGE_LIMIT - 3] + "..."


def refusal_message(log_text: str) -> str:
    """The line that says why a binary refused to start (its own words), or its last line."""
    lines = [line for line in log_text.splitlines() if line.strip()]
    for pattern in _REFUSAL_PATTERNS:
        for line in lines:
            if pattern.search(line):
                return clean(line)
    for line in reversed(lines):
        if _ERROR.search(line):
            return clean(line)
    return clean(lines[-1]) if lines else "(no output)"
