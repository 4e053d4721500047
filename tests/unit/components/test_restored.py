"""module_utils/components/restored.py: after a rollback, each restored component's health and how long node-failure
detection was down, in the words the failure message uses (the lab tests grep "kube-controller-manager healthy again",
"leader lease was renewed at" and "Node-failure detection was down for about N s")."""

from ansible_collections.nodeguard.failover.plugins.module_utils.components import health, restored

APISERVER = {
    "name": "kube-apiserver",
    "health_url": "https://10.0.0.5:6443/readyz",
    "ca_path": "/etc/kubernetes/pki/ca.crt",
    "path": "/etc/kubernetes/manifests/kube-apiserver.yaml",
}
KCM = {
    "name": "kube-controller-manager",
    "health_url": "https://127.0.0.1:10257/healthz ",
    "ca_path": "",
    "path": "/etc/kubernetes/manifests/kube-controller-manager.yaml",
}
OK = health.Answer(200, "ok")
REFUSED = health.Answer(0, error="URLError: <urlopen error [Errno 111] Connection refused>")


class FakeClock:
    """Monotonic time that advances only when sleeping."""

    def __init__(self):
        self.now, self.slept = 100.0, []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def endpoints(replies):
    """ask_with(ca) for endpoints answering per URL the given Answers one after another (the last one repeats);
    records which CA each component was asked with."""
    asked, cas = [], []

    def ask_with(ca):
        cas.append(ca)

        def ask(url):
            asked.append(url)
            queue = replies[url]
            return queue.pop(0) if len(queue) > 1 else queue[0]

        return ask

    ask_with.asked, ask_with.cas = asked, cas
    return ask_with


def test_each_component_is_waited_for_in_turn_until_it_answers_ok():
    ask_with = endpoints({APISERVER["health_url"]: [REFUSED, OK], KCM["health_url"].strip(): [REFUSED, REFUSED, OK]})
    clock = FakeClock()
    result = restored.restored([APISERVER, KCM], ask_with, timeout=300, interval=3, clock=clock)
    assert result["summary"] == "kube-apiserver healthy again, kube-controller-manager healthy again"
    assert result["components"] == [
        {"name": "kube-apiserver", "path": APISERVER["path"], "healthy": True, "answer": "ok"},
        {"name": "kube-controller-manager", "path": KCM["path"], "healthy": True, "answer": "ok"},
    ]
    # The API server first; the URL as given without the blank a folded YAML value leaves.
    assert ask_with.asked == [APISERVER["health_url"]] * 2 + ["https://127.0.0.1:10257/healthz"] * 3
    # Its own CA for each; an empty one verifies no certificate.
    assert ask_with.cas == ["/etc/kubernetes/pki/ca.crt", None]
    assert clock.slept == [3, 3, 3]


def test_a_component_that_never_answers_ok_is_not_healthy_and_the_next_is_still_waited_for():
    ask_with = endpoints({APISERVER["health_url"]: [health.Answer(500, "[-]etcd failed")], KCM["health_url"].strip(): [OK]})
    clock = FakeClock()
    result = restored.restored([APISERVER, KCM], ask_with, timeout=10, interval=2, clock=clock)
    assert result["summary"] == "kube-apiserver NOT healthy, kube-controller-manager healthy again"
    first = result["components"][0]
    assert first["healthy"] is False
    assert first["answer"] == f"the kube-apiserver did not answer ok on {APISERVER['health_url']} within 10 s (HTTP 500: [-]etcd failed)"
    assert sum(clock.slept) == 10  # each component has the whole timeout, measured on the monotonic clock


def test_an_answer_200_that_is_not_ok_is_not_healthy():
    ask_with = endpoints({KCM["health_url"].strip(): [health.Answer(200, "not yet")]})
    result = restored.restored([KCM], ask_with, timeout=0, interval=2, clock=FakeClock())
    assert result["summary"] == "kube-controller-manager NOT healthy"


def test_nothing_restored_nothing_to_wait_for():
    assert restored.restored([], endpoints({}), timeout=300, interval=3) == {"components": [], "summary": "nothing to wait for"}


RENEWED = {"changed": False, "renewed": True, "lease": {"holder": "ng-cp1_4f1c", "renew_time": "2026-11-26T09:12:31.402117Z"}}


def test_a_renewed_lease_ends_the_detection_outage():
    result = restored.detection(started=1795435290.25, now=1795435331.4, lease=RENEWED, timeout=300)
    assert result == {
        "renewed": True,
        "down_seconds": 41,
        "summary": "the controller-manager leader lease was renewed at 2026-11-26T09:12:31.402117Z. "
        "Node-failure detection was down for about 41 s (from the first change until the lease was renewed)",
    }


def test_a_lease_not_renewed_says_detection_may_still_be_down():
    not_renewed = {"changed": False, "renewed": False, "lease": {"renew_time": "2026-11-26T09:10:00.000000Z"}}
    result = restored.detection(started=1795435290.0, now=1795435590.6, lease=not_renewed, timeout=300)
    assert result["renewed"] is False and result["down_seconds"] == 301
    assert result["summary"] == (
        "the controller-manager leader lease was NOT renewed within 300 s: node-failure detection may still be down, "
        "check kube-controller-manager. Node-failure detection was down for about 301 s (from the first change until now)"
    )


def test_a_failed_lease_reading_counts_as_not_renewed():
    failed = {"failed": True, "msg": "Lease kube-system/kube-controller-manager was not renewed within 300 s"}
    result = restored.detection(started=100.0, now=160.0, lease=failed, timeout=300)
    assert result["renewed"] is False and "NOT renewed within 300 s" in result["summary"]
