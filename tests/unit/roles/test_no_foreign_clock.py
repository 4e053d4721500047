"""No role or playbook judges a Lease by its renewTime in Jinja.

A renewTime is written with the holder's clock (a kubelet, a controller-manager on another machine). Roles
that need "renewed after the restart" call nodeguard.failover.failover_lease_renewal_info, which compares it
only with an earlier reading and waits on the controller's monotonic clock (module_utils/k8s/leases.py).
Before that module, kubelet_heartbeat compared renewTime with now() and a skewed node clock passed or failed it.
"""

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[3]


def test_no_task_or_variable_reads_a_renew_time():
    readers = [
        f"{path.relative_to(REPO)}:{number}"
        for folder in ("roles", "playbooks")
        for path in sorted((REPO / folder).rglob("*.yml"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "renewTime" in line and not line.lstrip().startswith("#")
    ]
    assert readers == []
