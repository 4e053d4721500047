"""The node-watch chain on the lab, set up as docs/eda.md ("Node watch: the recommended heartbeat trigger") tells a
user to: a real ansible-rulebook running extensions/eda/rulebooks/node-watch.yml with its shipped variables file
(extensions/eda/vars/node-watch.yml), the lab's kubeconfig and its workers allowed. From then on a power-off alone
leads to node-outage: the node turns NotReady, the source nodeguard.failover.node_watch emits node-down, the rulebook
runs nodeguard.failover.node_outage, which waits for its proofs. Used by bench/timeline.py, beside the power-event
chain (tests/integration/eda/power_event_chain.py), whose per-run bookkeeping (log offsets, CPU, memory, BMC
requests, the run report) it shares.

When the victim comes back (the next run's reset), the source emits node-up and the rulebook runs node-recover, as
for a user. The rulebook runs one playbook at a time, so the next run waits until that run has ended: a node-down
queued behind node-recover would measure the queue.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from power_event_chain import ANSI, LogWatch, PowerEventChain, rulebook_inventory
from rulebook_process import REPO, RulebookProcess

NODE_WATCH_RULEBOOK = REPO / "extensions" / "eda" / "rulebooks" / "node-watch.yml"
NODE_WATCH_VARS = REPO / "extensions" / "eda" / "vars" / "node-watch.yml"
# The source logs this once it has started (plugins: extensions/eda/plugins/event_source/node_watch.py).
READY_LINE = "node_watch: watching Nodes and Leases"
# node_outage.yml's and node_recover.yml's plays (one each): a run starts with its PLAY line, ends with PLAY RECAP.
OUTAGE_PLAY = "PLAY [Fail over dead nodes, proven powered off]"
IDLE_TIMEOUT = 600.0


def rulebook_idle(log: str) -> bool:
    """No playbook run under way: as many PLAY RECAP lines as PLAY lines (each shipped playbook has one play)."""
    return len(re.findall(r"^PLAY \[", log, re.M)) == len(re.findall(r"^PLAY RECAP", log, re.M))


class NodeWatchChain(PowerEventChain):
    """ansible-rulebook with node-watch.yml, watching the lab's apiserver; `workers` are allowed."""

    trigger = "node-watch.yml"

    def __init__(self, workdir: Path, workers: list[str], inventory_vars: dict | None = None, kubeconfig: str = "") -> None:
        # Not PowerEventChain.__init__: no BMC subscription, no event CA; the same bookkeeping attributes.
        self.workdir, self.workers = workdir, list(workers)
        # docs/eda.md "Node watch": "The inventory is node-outage's, as above (with `localhost`)".
        self.inventory = rulebook_inventory(workdir, inventory_vars)
        started = time.monotonic()
        self.rulebook = RulebookProcess(
            workdir,
            # The shipped vars file, with only the variables docs/eda.md "Node watch" tells a user to set (its table):
            # nodeguard_node_watch_kubeconfig ("the source's cluster connection") and nodeguard_allow_nodes ("empty
            # allow-list = act on no node"). nodeguard_node_watch_proof_timeout (150) and node_outage_max_unhealthy
            # ("40%") keep their defaults. (RulebookProcess also sets the nodeguard_eda_listen_*/tls_* variables of
            # the webhook rulebooks; node-watch.yml has no webhook and reads none of them.)
            overrides={"nodeguard_node_watch_kubeconfig": kubeconfig, "nodeguard_allow_nodes": self.workers},
            inventory=self.inventory,
            rulebook=NODE_WATCH_RULEBOOK,
            default_vars=NODE_WATCH_VARS,
            ready_line=READY_LINE,
        )
        self.startup_seconds = round(time.monotonic() - started, 1)
        self._log_offset, self._cpu_before, self._bmc_offset, self._watch = 0, 0.0, 0, None

    def wait_idle(self, timeout: float = IDLE_TIMEOUT) -> float:
        """Wait until no playbook runs (node-recover of the last victim); returns the seconds waited."""
        started = time.monotonic()
        while not rulebook_idle(self.run_log_all()):
            if not self.alive() or time.monotonic() - started > timeout:
                raise RuntimeError(f"ansible-rulebook (node-watch.yml) still runs a playbook after {timeout:.0f} s (or exited):\n{self.run_log_all()[-4000:]}")
            time.sleep(0.5)
        return round(time.monotonic() - started, 1)

    def run_log_all(self) -> str:
        return ANSI.sub("", self.rulebook.log())

    def mark_run_start(self) -> None:
        # A node-up of the last victim (the reset just before) may still be on its way: give it a moment to start
        # node-recover, then wait until that run has ended.
        time.sleep(2)
        self.idle_wait_seconds = self.wait_idle()
        super().mark_run_start()

    def watch(self, victim: str, mark) -> None:
        """mark(name) when the victim's node-down, node-outage's start and its end first appear in the log."""
        patterns = {
            "event_received": re.compile(rf"node_watch: {re.escape(victim)} is Ready=\w+: node-down"),
            "playbook_started": re.compile(re.escape(OUTAGE_PLAY)),
            "playbook_finished": re.compile(r"PLAY RECAP"),
        }
        self._watch = LogWatch(self.rulebook.log_path, self._log_offset, patterns, mark)
        self._watch.start()

    def stop(self) -> None:
        """Stop the rulebook once the run under way (node-recover of a victim that just came back) has ended, so that
        no playbook is cut off; after a short wait only, when the benchmark is ending anyway."""
        try:
            time.sleep(2)
            self.wait_idle(timeout=120)
        except RuntimeError:
            pass
        finally:
            self.rulebook.stop()
