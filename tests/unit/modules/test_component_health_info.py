"""component_health_info: reads the unit with systemctl show, asks the health endpoint, changes nothing
(check mode too), fails once with the component's words; a real local HTTP server stands for the kubelet's /healthz."""

import http.server
import threading
import time

import pytest
import yaml
from ansible.module_utils import basic
from ansible_collections.nodeguard.failover.plugins.doc_fragments import component_health
from ansible_collections.nodeguard.failover.plugins.module_utils.components import health
from ansible_collections.nodeguard.failover.plugins.module_utils.components.args import COMPONENT_HEALTH_ARGUMENT_SPEC
from ansible_collections.nodeguard.failover.plugins.modules import component_health_info as module


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(health.Clock, "sleep", lambda self, seconds: None)


@pytest.fixture
def systemctl(monkeypatch):
    """systemctl show answers the given outputs one call after another (the last one repeats); calls are kept."""
    outputs, calls = [], []

    def run_command(self, argv, **kwargs):
        calls.append(argv)
        return 0, outputs.pop(0) if len(outputs) > 1 else outputs[0], ""

    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False: "/usr/bin/" + name)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    return outputs, calls


def show(pid, restarts=0, active="active", sub="running"):
    return f"ActiveState={active}\nSubState={sub}\nMainPID={pid}\nNRestarts={restarts}\n"


@pytest.fixture
def healthz():
    """A local endpoint answering like the kubelet's /healthz: the status and body set in `reply`."""
    reply = {"status": 200, "body": b"ok"}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(reply["status"])
            self.end_headers()
            self.wfile.write(reply["body"])

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    reply["url"] = f"http://127.0.0.1:{server.server_address[1]}/healthz"
    yield reply
    server.shutdown()


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_stable_kubelet_that_answers_ok(run_module, systemctl, healthz, check_mode):
    outputs, calls = systemctl
    outputs.append(show(4242))
    result = run_module(module, {"name": "kubelet", "unit": "kubelet", "health_url": healthz["url"]}, check_mode=check_mode)
    assert not result["failed"] and result["changed"] is False, result
    assert result["process"]["main_pid"] == 4242 and result["answer"] == "ok"
    assert calls[0] == ["/usr/bin/systemctl", "show", "-p", "ActiveState", "-p", "SubState", "-p", "MainPID", "-p", "NRestarts", "--", "kubelet"]
    assert len(calls) == 3


def test_crash_looping_unit_fails_once_with_what_was_seen(run_module, systemctl, healthz):
    systemctl[0].extend([show(4242, 3), show(4301, 4)])
    result = run_module(module, {"name": "kubelet", "unit": "kubelet", "health_url": healthz["url"]})
    assert result["failed"] and result["msg"].startswith("kubelet is not a stable process: PID 4242"), result


def test_an_endpoint_that_answers_500_is_quoted(run_module, systemctl, healthz):
    systemctl[0].append(show(4242))
    healthz.update(status=500, body=b"[-]syncloop failed")
    result = run_module(module, {"name": "kubelet", "unit": "kubelet", "health_url": healthz["url"], "timeout": 0})
    assert result["failed"], result
    assert result["msg"].startswith(f"the kubelet did not answer ok on {healthz['url']} within 0 s (HTTP 500: [-]syncloop failed)"), result


def test_an_endpoint_that_answers_something_else_than_ok(run_module, systemctl, healthz):
    systemctl[0].append(show(4242))
    healthz["body"] = b"not yet"
    result = run_module(module, {"name": "kubelet", "unit": "kubelet", "health_url": healthz["url"], "timeout": 0})
    assert result["failed"] and result["msg"].endswith("(HTTP 200: not yet)"), result


def test_pid_checks_the_same_process_only(run_module, systemctl):
    outputs, calls = systemctl
    outputs.append(show(4500, 1))
    result = run_module(module, {"check": "still", "name": "kubelet", "unit": "rke2-agent", "pid": 4242, "stable_seconds": 0})
    assert result["failed"] and result["msg"].startswith("rke2-agent is not a stable process: PID 4242 after the restart, PID 4500"), result
    assert len(calls) == 1


def test_negative_times_are_refused(run_module, systemctl):
    result = run_module(module, {"name": "kubelet", "unit": "kubelet", "stable_seconds": -1})
    assert result["failed"] and "must be 0 or more" in result["msg"], result


def test_answers_finds_the_process_with_the_new_flags_through_pgrep(run_module, systemctl, healthz):
    outputs, calls = systemctl
    outputs.extend(
        ["1180 kube-controller-manager --node-monitor-grace-period=40s\n", "2210 kube-controller-manager --node-monitor-grace-period=20s --leader-elect=true\n"]
    )
    result = run_module(
        module,
        {"check": "answers", "name": "kube-controller-manager", "flags": {"node-monitor-grace-period": "20s"}, "health_url": healthz["url"]},
        check_mode=True,
    )
    assert not result["failed"] and result["changed"] is False, result
    assert result["process"] == {"main_pid": 2210, "argv": ["kube-controller-manager", "--node-monitor-grace-period=20s", "--leader-elect=true"]}
    assert calls == [["/usr/bin/pgrep", "-a", "-f", "--", "kube-controller-manager"]] * 2


def test_still_without_a_unit_reads_pgrep(run_module, systemctl, healthz):
    systemctl[0].append("2377 kube-controller-manager --node-monitor-grace-period=20s\n")
    result = run_module(
        module, {"check": "still", "name": "kube-controller-manager", "pid": 2210, "after": "the leader lease was renewed", "health_url": healthz["url"]}
    )
    assert (
        result["failed"] and "PID 2210 answered its health endpoint with the new flags but no longer runs 10 s later (after the leader lease" in result["msg"]
    )


def test_restart_needs_a_unit(run_module, systemctl):
    result = run_module(module, {"name": "kubelet"})
    assert result["failed"] and result["msg"] == "check=restart needs the unit that runs the component", result


def test_restored_waits_for_each_component_and_never_fails_for_one_that_stays_down(run_module, systemctl, healthz):
    """The role passes its endpoint list as it is (component, path, url, ca): the aliases take those keys."""
    calls = systemctl[1]
    down = "http://127.0.0.1:9/healthz"  # the discard port: nothing listens, the connection is refused
    components = [
        {"component": "kube-apiserver", "path": "/etc/kubernetes/manifests/kube-apiserver.yaml", "url": down, "ca": ""},
        {"component": "kube-controller-manager", "path": "/etc/kubernetes/manifests/kube-controller-manager.yaml", "url": healthz["url"], "ca": ""},
    ]
    result = run_module(module, {"check": "restored", "components": components, "timeout": 0}, check_mode=True)
    assert not result.get("failed") and result["changed"] is False, result
    assert result["summary"] == "kube-apiserver NOT healthy, kube-controller-manager healthy again"
    assert [c["healthy"] for c in result["components"]] == [False, True]
    assert result["components"][0]["answer"].startswith(f"the kube-apiserver did not answer ok on {down} within 0 s (")
    assert result["components"][1] == {
        "name": "kube-controller-manager",
        "path": "/etc/kubernetes/manifests/kube-controller-manager.yaml",
        "healthy": True,
        "answer": "ok",
    }
    assert calls == []  # no process is read


def test_restored_without_components_has_nothing_to_wait_for(run_module, systemctl):
    result = run_module(module, {"check": "restored", "components": []})
    assert not result.get("failed") and result["summary"] == "nothing to wait for", result


def test_detection_measures_from_started_on_the_clock_it_was_taken_with():
    """started is the controller's now().timestamp(): the module compares it with time.time() of the same machine."""
    params = {
        "check": "detection",
        "name": None,
        "stable_seconds": 10,
        "timeout": 300,
        "interval": 2,
        "started": 1795435290.0,
        "lease": {"renewed": True, "lease": {"renew_time": "2026-11-26T09:12:31.402117Z"}},
    }
    result = module.run(params, None, None, None, wall_clock=lambda: 1795435302.2)
    assert result["down_seconds"] == 12 and result["renewed"] is True
    assert result["summary"].endswith("Node-failure detection was down for about 12 s (from the first change until the lease was renewed)")
    assert module.run.__defaults__[-1] is time.time  # the play's now() is the wall clock too


def test_detection_needs_the_start_and_the_lease_reading(run_module, systemctl):
    result = run_module(module, {"check": "detection", "lease": {"renewed": True}})
    assert result["failed"] and result["msg"] == "check=detection needs started and the lease reading", result


def test_a_process_check_needs_the_components_name(run_module, systemctl):
    result = run_module(module, {"check": "still", "pid": 4242})
    assert result["failed"] and result["msg"] == "check=still needs the name of the component", result


def documented_like(spec):
    """The fields of an argument spec that its documentation must repeat, suboptions included."""
    fields = {}
    for name, option in spec.items():
        fields[name] = {field: option.get(field) for field in ("type", "default", "choices", "elements", "aliases")}
        fields[name]["required"] = option.get("required", False)
        if "options" in option or "suboptions" in option:
            fields[name]["options"] = documented_like(option.get("options") or option.get("suboptions"))
    return fields


def test_the_doc_fragment_documents_exactly_the_argument_spec():
    """One declaration: module_utils/components/args.py; the fragment documents it, the module uses it and documents
    no option of its own."""
    fragment = yaml.safe_load(component_health.ModuleDocFragment.DOCUMENTATION)["options"]
    assert documented_like(fragment) == documented_like(COMPONENT_HEALTH_ARGUMENT_SPEC)
    assert module.OPTIONS is COMPONENT_HEALTH_ARGUMENT_SPEC
    documentation = yaml.safe_load(module.DOCUMENTATION)
    assert documentation["extends_documentation_fragment"] == ["nodeguard.failover.component_health"]
    assert "options" not in documentation
