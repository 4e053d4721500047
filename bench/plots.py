"""Plots for docs/benchmarks: a Gantt chart of the failover timeline per profile, and control-plane
write cost against node count. Input is results.json; output is PNG."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from results import STAND_IN, entry_kubelet

LABELS = {
    "not_ready": "node NotReady",
    "unreachable_taint": "unreachable taint",
    "endpoint_removed": "endpoint not ready",
    "deployment_replaced": "Deployment pod replaced",
    "statefulset_replaced_unremediated": "StatefulSet pod replaced (no remediation)",
    "statefulset_replaced": "StatefulSet pod replaced (node_outage.yml)",
}


def row_label(entry: dict) -> str:
    """The metric's label, and what started node-outage when something did (results.json's `trigger`)."""
    label = LABELS.get(entry["metric"], entry["metric"])
    trigger = entry.get("trigger", "none")
    return label if trigger == "none" else f"{label} [{trigger}]"


def timeline_chart(profile: str, entries: list[dict], path: Path) -> None:
    entries = [e for e in entries if e["profile"] == profile]
    if not entries:
        return
    figure, axes = plt.subplots(figsize=(8, 0.5 * len(entries) + 1.2))
    longest = max([e["max_s"] or 0 for e in entries] + [1])
    for row, entry in enumerate(reversed(entries)):
        if entry["median_s"] is None:
            axes.barh(row, longest, color="none", edgecolor="grey", hatch="//")
            label = "  never (within cap)" if entry["runs"] else "  not measured"
            axes.text(longest, row, label, va="center", fontsize=8)
        else:
            axes.barh(row, entry["median_s"], color="tab:blue")
            axes.errorbar(
                entry["median_s"], row, xerr=[[entry["median_s"] - entry["min_s"]], [entry["max_s"] - entry["median_s"]]], fmt="none", ecolor="black", capsize=3
            )
            axes.text(entry["max_s"], row, f"  {entry['median_s']:g}s (n={entry['runs']})", va="center", fontsize=8)
        axes.set_yticks(list(range(len(entries))), [row_label(e) for e in reversed(entries)])
    axes.set_xlabel("seconds after power-off (bar: median, whisker: min-max)")
    axes.set_xlim(0, longest * 1.35)
    axes.set_title(f"Failover timeline, profile {profile}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def cost_chart(cost: list[dict], path: Path, requested: dict | None = None) -> None:
    """requested: {(profile, nodes): heartbeat writes/s the profile asks for}, drawn dashed."""
    profiles = list(dict.fromkeys(c["profile"] for c in cost))
    figure, (writes, payload) = plt.subplots(1, 2, figsize=(11, 4.2))
    for profile in profiles:
        mine = sorted((c for c in cost if c["profile"] == profile), key=lambda c: c["nodes"])
        nodes = [c["nodes"] for c in mine]
        (line,) = writes.plot(nodes, [c["write_rps"] for c in mine], marker="o", label=f"{profile} (measured)")
        if requested:
            asked = [requested.get((profile, n)) for n in nodes]
            if all(a is not None for a in asked):
                writes.plot(nodes, asked, linestyle="--", color=line.get_color(), alpha=0.6)
        payload.plot(nodes, [c["write_bytes_per_s"] / 1024 for c in mine], marker="o", label=profile)
    for axes, title in ((writes, "apiserver write requests/s"), (payload, "apiserver write request bodies, KiB/s")):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("simulated nodes (kwok)")
        axes.set_title(title)
        axes.grid(True, which="both", alpha=0.3)
    writes.legend(fontsize=7)
    windows = sorted({round(c["seconds"]) for c in cost if "seconds" in c})
    window = "?" if not windows else f"{windows[0]}" if len(windows) == 1 else f"{windows[0]}-{windows[-1]}"
    figure.suptitle(f"Control-plane write cost per profile (measured, {window} s windows; "
                    "dashed: heartbeat writes/s asked for, modelled)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def draw_all(results: dict, out_dir: Path, requested: dict | None = None) -> list[Path]:
    """A timeline chart per profile from the stand-in rows (the real-kubelet rows are a table of their own), and
    the cost chart."""
    written = []
    stand_in = [e for e in results["timelines"] if entry_kubelet(e) == STAND_IN]
    for profile in dict.fromkeys(e["profile"] for e in stand_in):
        path = out_dir / f"timeline-{profile}.png"
        timeline_chart(profile, stand_in, path)
        written.append(path)
    if results["cost"]:
        path = out_dir / "cost.png"
        cost_chart(results["cost"], path, requested)
        written.append(path)
    return written
