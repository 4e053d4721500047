"""tune-failover shows the predicted timeline as lines (issue 34 item 4): with the default stdout callback a debug
``msg`` that is a string with newlines prints as one escaped JSON string, a list prints one line per item.

The task's ``msg`` of roles/failover_profile/tasks/main.yml is rendered as Ansible renders it, on a real plan."""

import os

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TASKS = os.path.join(REPO, "roles", "failover_profile", "tasks", "main.yml")
FACTS = {"kubernetes_version": "1.35.4", "node_count": 3, "distribution": "kubeadm"}
CURRENT = {"kube_controller_manager": {"node-monitor-grace-period": "50s"}}


def timeline_task() -> dict:
    with open(TASKS, encoding="utf-8") as handle:
        return next(task for task in yaml.safe_load(handle) if task["name"] == "Show the predicted timeline, before and after")


def test_the_timeline_is_shown_as_lines(render):
    msg = timeline_task()["ansible.builtin.debug"]["msg"]
    assert msg.startswith("{{ ") and msg.endswith(" }}")
    variables = {
        "failover_profile_current": render("current | nodeguard.failover.failover_timeline(facts)", current=CURRENT, facts=FACTS),
        "failover_profile_result": render("facts | nodeguard.failover.failover_profile(preset='fast')", facts=FACTS),
    }
    shown = render(msg[3:-3], **variables)
    table = render("failover_profile_current | nodeguard.failover.failover_timeline_table(failover_profile_result)", **variables)
    assert isinstance(shown, list) and len(shown) > 3
    assert all(isinstance(line, str) and "\n" not in line for line in shown)
    assert "\n".join(shown) == table.rstrip("\n")
