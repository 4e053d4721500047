"""The power-event chain on the lab, set up as docs/eda.md tells a user to: a real ansible-rulebook running
extensions/eda/rulebooks/power-events.yml (TLS, bearer token) with the lab's workers mapped, and every worker's
Redfish BMC subscribed to it by playbooks/power_event_subscriptions.yml (context nodeguard:<node>, OriginResources
its system, its own path <destination>/<node> and its own token in HttpHeaders). From then on a power-off alone
leads to node-outage: the BMC posts its vendor's power-off message, the filter checks it, the rulebook runs nodeguard.failover.node_outage with
node_outage_power_event_time. Used by tests/integration/eda/test_power_event_e2e.py and bench/timeline.py.

The lab BMC verifies the rulebook's certificate against the CA file it is configured with (docs/lab-bmc.md):
the chain writes its self-signed certificate there while it runs and restores what was there when it stops.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import yaml
from rulebook_process import REPO, VENV_BIN, RulebookProcess

LAB_STATE = REPO / "lab" / ".state"
LAB_INVENTORY = LAB_STATE / "inventory.yml"
POWER_RULEBOOK = REPO / "extensions" / "eda" / "rulebooks" / "power-events.yml"
POWER_VARS = REPO / "extensions" / "eda" / "vars" / "power-events.yml"
SUBSCRIPTIONS_PLAYBOOK = REPO / "playbooks" / "power_event_subscriptions.yml"
# Where the lab BMC looks for the CA that signs event receivers (lab/bmc/bmc.sh, docs/lab-bmc.md).
BMC_EVENT_CA = LAB_STATE / "bmc" / "event-ca.pem"
# Whose events the lab BMC sends (lab/bmc/redfish_events.py PERSONALITIES): read at each power change.
BMC_EVENT_PERSONALITY = LAB_STATE / "bmc" / "event-personality"
PERSONALITIES = ("dmtf", "openbmc", "hpe", "dell")  # also the subscription playbook's bmc_vendor
# The Redfish service's access log: one line per request ("GET /redfish/v1/Systems/ng-worker1 HTTP/1.1" 200).
BMC_ACCESS_LOG = LAB_STATE / "bmc" / "redfish.log"
REQUEST_LINE = re.compile(r'"(GET|POST|PATCH|PUT|DELETE) (\S+) HTTP/[\d.]+" (\d{3})')
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # both logs colour some lines
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def context_of(node: str) -> str:
    return f"nodeguard:{node}"


def system_of(node: str) -> str:
    return f"/redfish/v1/Systems/{node}"


def process_cpu_seconds(pid: int) -> float:
    """CPU of a process and of its children it has waited for (the playbook runs of ansible-rulebook)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime + cutime + cstime) / CLOCK_TICKS


def process_memory_kib(pid: int) -> dict:
    """VmRSS (now) and VmHWM (peak) of a process, KiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _sep, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def rulebook_inventory(workdir: Path, inventory_vars: dict | None) -> Path:
    """The inventory a rulebook's playbooks run with: the lab's, plus localhost and inventory_vars."""
    inventory = workdir / "inventory"
    inventory.mkdir(exist_ok=True)
    shutil.copy(LAB_INVENTORY, inventory / "10-lab.yml")
    # The playbooks run on localhost; ansible-rulebook limits runs to the ruleset's hosts (docs/eda.md).
    local = {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}
    (inventory / "20-eda.yml").write_text(yaml.safe_dump({"all": {"vars": inventory_vars or {}, "hosts": local}}))
    return inventory


class LogWatch(threading.Thread):
    """Marks when lines matching patterns first appear in the rulebook's log (polled every 0.1 s)."""

    def __init__(self, path: Path, offset: int, patterns: dict[str, re.Pattern], mark) -> None:
        super().__init__(daemon=True)
        self.path, self.offset, self.patterns, self.mark = path, offset, patterns, mark
        self.stopping = threading.Event()

    def run(self) -> None:
        pending = dict(self.patterns)
        while pending and not self.stopping.is_set():
            text = ANSI.sub("", self.path.read_text(errors="replace")[self.offset:])
            for name, pattern in list(pending.items()):
                if pattern.search(text):
                    self.mark(name)
                    del pending[name]
            time.sleep(0.1)

    def stop(self) -> None:
        self.stopping.set()


class PowerEventChain:
    """ansible-rulebook with power-events.yml, and the BMCs of `workers` subscribed to it."""

    def __init__(self, workdir: Path, workers: list[str], inventory_vars: dict | None = None, personality: str = "dmtf",
                 overrides: dict | None = None) -> None:
        """``overrides``: rulebook variables beyond the mapping and the allow-list (e.g. another nodeguard_outage_playbook)."""
        self.workdir, self.workers, self.personality = workdir, list(workers), personality
        self.inventory = rulebook_inventory(workdir, inventory_vars)
        mapping = [{"node": n, "system": system_of(n)} for n in self.workers]
        started = time.monotonic()
        self.rulebook = RulebookProcess(
            workdir,
            overrides={"nodeguard_power_event_bmcs": mapping, "nodeguard_allow_nodes": self.workers, **(overrides or {})},
            inventory=self.inventory,
            rulebook=POWER_RULEBOOK,
            default_vars=POWER_VARS,
        )
        self.startup_seconds = round(time.monotonic() - started, 1)
        self.destination = f"https://127.0.0.1:{self.rulebook.port}/redfish-events"
        self._saved_ca = BMC_EVENT_CA.read_bytes() if BMC_EVENT_CA.exists() else None
        shutil.copy(self.rulebook.cert, BMC_EVENT_CA)
        self._saved_personality = BMC_EVENT_PERSONALITY.read_bytes() if BMC_EVENT_PERSONALITY.exists() else None
        BMC_EVENT_PERSONALITY.write_text(personality + "\n")
        self.subscribe("present")
        self._log_offset, self._cpu_before, self._bmc_offset, self._watch = 0, 0.0, 0, None

    def subscribe(self, state: str) -> subprocess.CompletedProcess:
        """playbooks/power_event_subscriptions.yml against the lab inventory, as a user runs it."""
        env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "PATH": f"{VENV_BIN}:{os.environ['PATH']}",
               "NODEGUARD_BMC_TOKEN_KEY": self.rulebook.bmc_key}
        extra = {"power_event_subscriptions_destination": self.destination, "power_event_subscriptions_state": state,
                 "power_event_subscriptions_limit_nodes": self.workers, "bmc_vendor": self.personality}
        result = subprocess.run(
            [str(VENV_BIN / "ansible-playbook"), "-i", str(LAB_INVENTORY), str(SUBSCRIPTIONS_PLAYBOOK),
             "-e", json.dumps(extra)],
            capture_output=True, text=True, cwd=REPO, env=env, check=False)
        if result.returncode != 0 and state == "present":
            raise RuntimeError(f"subscribing the lab BMCs failed (rc {result.returncode}):\n{result.stdout[-4000:]}")
        return result

    @property
    def pid(self) -> int:
        return self.rulebook.process.pid

    def alive(self) -> bool:
        return self.rulebook.process.poll() is None

    def mark_run_start(self) -> None:
        """Remember where this run's part of the log starts, and the rulebook's CPU so far."""
        self._log_offset = len(self.rulebook.log())
        self._cpu_before = process_cpu_seconds(self.pid)
        self._bmc_offset = BMC_ACCESS_LOG.stat().st_size if BMC_ACCESS_LOG.exists() else 0

    def watch(self, victim: str, mark) -> None:
        """Call mark(name) when the victim's Off event, the playbook's start and its end first appear in the log."""
        patterns = {
            # --print-events prints the filtered event as a (multi-line) dict
            "event_received": re.compile(rf"'nodeguard_power_event': \{{[^}}]*'node': '{re.escape(victim)}',[^}}]*'state': 'Off'"),
            "playbook_started": re.compile(r"PLAY \["),
            "playbook_finished": re.compile(r"PLAY RECAP"),
        }
        self._watch = LogWatch(self.rulebook.log_path, self._log_offset, patterns, mark)
        self._watch.start()

    def run_log(self) -> str:
        """The rulebook's log since mark_run_start, without colours."""
        return ANSI.sub("", self.rulebook.log()[self._log_offset:])

    def run_report(self, victim: str) -> dict:
        """What the chain did in this run: whether node-outage ran for the victim and succeeded, the rulebook's
        CPU (its playbook runs included) and memory."""
        if self._watch:
            self._watch.stop()
        text = self.run_log()
        recap = re.findall(r"localhost\s*:\s*ok=\d+\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)", text)
        return {
            "rulebook_alive": self.alive(),
            "node_outage_runs": len(recap),
            "node_outage_ok": bool(recap) and all(u == "0" and f == "0" for u, f in recap),
            "node_outage_for_victim": f"| {victim}]" in text or f"'{victim}'" in text,
            "refusals": re.findall(r"refused \[([a-z-]+)\]", text),
            "rulebook_cpu_seconds": round(process_cpu_seconds(self.pid) - self._cpu_before, 2),
            "rulebook_memory_kib": process_memory_kib(self.pid),
            "bmc_requests": self.bmc_requests(),
        }

    def bmc_requests(self) -> dict:
        """Requests the lab's Redfish service answered since mark_run_start, by method and path; the power
        action that started the run (ComputerSystem.Reset) is the test's, the rest node-outage's."""
        if not BMC_ACCESS_LOG.exists():
            return {}
        with BMC_ACCESS_LOG.open("rb") as log:
            log.seek(self._bmc_offset)
            text = ANSI.sub("", log.read().decode(errors="replace"))
        counts: dict[str, int] = {}
        for method, path, _status in REQUEST_LINE.findall(text):
            key = f"{method} {path}"
            counts[key] = counts.get(key, 0) + 1
        return counts

    def redacted_log(self) -> str:
        return self.rulebook.log().replace(self.rulebook.token, "<token>").replace(self.rulebook.bmc_key, "<key>")

    def stop(self) -> None:
        try:
            self.subscribe("absent")
        finally:
            self.rulebook.stop()
            for path, saved in ((BMC_EVENT_CA, self._saved_ca), (BMC_EVENT_PERSONALITY, self._saved_personality)):
                if saved is None:
                    path.unlink(missing_ok=True)
                else:
                    path.write_bytes(saved)
