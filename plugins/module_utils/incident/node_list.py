# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster's full Node list, as one run reads it: for its decisions, never for a power reading.

The full list is the costly read of an incident (about 11 KB per Node, 11 MB at 1000 nodes; docs/runbooks/node-outage.md,
'What one incident reads'). Two kinds of rules need it whole:

- the cluster-wide rules (storm, quorum, one control-plane node at a time, safety.py) read every Node's Ready
  condition and taints, fresh at each decision: they call ``read()``. No server-side projection carries the
  taints (the apiserver's Table has Ready in its Status cell, no taint), so these stay full reads;
- the identity rule (a systemUUID proves a machine only when no other Node reports it, power/identity.py
  ClusterUniqueIdentity) reads every Node's status.nodeInfo.systemUUID at each power reading: it calls
  ``latest()``, the list this run read last, and reads one only when the run has read none yet.

So the identity rule costs at most one full read per run (node-recover: its one read serves the restart check
too), however many power readings the waits take; before, each reading read the list again. A Node that joins
with the same systemUUID during the run is seen at the run's next decision read: the one right before the taint,
which the power reading at the taint is checked against (outage_taint.py).
"""

from __future__ import annotations


class RunNodeList:
    """The last full Node list of one run (``cluster.list_nodes()``)."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.nodes = None
        self.reads = 0  # full reads this run made: one per decision, plus at most one for identity

    def read(self) -> list:
        """A fresh full list (a decision needs one); it becomes the list ``latest()`` returns."""
        self.nodes = self.cluster.list_nodes()
        self.reads += 1
        return self.nodes

    def latest(self) -> list:
        """The list this run read last; read once when it has none."""
        return self.nodes if self.nodes is not None else self.read()
