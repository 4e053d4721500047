"""The kubelet stand-in refuses what a v1.35 kubelet refuses for the collection's fields, in its words.

The collection's rollback (role kubelet_heartbeat) is proven on the lab's stand-in workers, so a
value the real kubelet refuses must make the stand-in exit the same way: exit code 1 and the
kubelet's "command failed" line (cmd/kubelet/app/server.go, kubelet config validation; the expected lines
are the ones the lab's real kubelet v1.35.4 wrote for the same files).
"""

from __future__ import annotations

import datetime
import re
import subprocess
import sys
from pathlib import Path

import pytest

STANDIN = Path(__file__).resolve().parents[3] / "lab" / "workers" / "standin"
sys.path.insert(0, str(STANDIN))

import kubelet_config  # noqa: E402

BASE = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"


def load(tmp_path, text):
    path = tmp_path / "config.yaml"
    path.write_text(BASE + text)
    return kubelet_config.load(str(path))


@pytest.mark.parametrize(("text", "message"), [
    ("nodeLeaseDurationSeconds: -5\n",
     "failed to validate kubelet configuration, error: invalid configuration: nodeLeaseDurationSeconds must be greater than 0"),
    ("shutdownGracePeriod: 500ms\n",
     "invalid configuration: shutdownGracePeriod {500ms} must be either zero or otherwise >= 1 sec"),
    ("shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n",
     "invalid configuration: shutdownGracePeriodCriticalPods {20s} must be <= shutdownGracePeriod {10s}"),
])
def test_values_the_kubelet_refuses_fail_validation_in_its_words(tmp_path, text, message):
    with pytest.raises(kubelet_config.KubeletConfigError, match=re.escape(message)):
        load(tmp_path, text)


def test_several_errors_are_aggregated_as_the_kubelet_does(tmp_path):
    with pytest.raises(kubelet_config.KubeletConfigError) as error:
        load(tmp_path, "nodeLeaseDurationSeconds: -1\nshutdownGracePeriod: -2s\n")
    assert "error: [invalid configuration: nodeLeaseDurationSeconds must be greater than 0, " in str(error.value)
    assert "shutdownGracePeriod {-2s} must be either zero or otherwise >= 1 sec], path: &TypeMeta{Kind:,APIVersion:,}" \
        in str(error.value)


def test_a_duration_that_does_not_parse_fails_to_load(tmp_path):
    with pytest.raises(kubelet_config.KubeletConfigError) as error:
        load(tmp_path, "nodeStatusUpdateFrequency: fast\n")
    path = tmp_path / "config.yaml"
    assert str(error.value) == (f"failed to load kubelet config file, path: {path}, error: failed to load Kubelet config "
                                f'file {path}, error failed to decode: time: invalid duration "fast"')


@pytest.mark.parametrize("text", ["nodeLeaseDurationSeconds: 0\n", "shutdownGracePeriod: 0s\n",
                                  "shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n"])
def test_values_the_kubelet_accepts_load(tmp_path, text):
    assert load(tmp_path, text).lease_duration_seconds == 40


def test_healthz_follows_the_config(tmp_path):
    assert (load(tmp_path, "").healthz_bind_address, load(tmp_path, "").healthz_port) == ("127.0.0.1", 10248)
    assert load(tmp_path, "healthzPort: 0\n").healthz_port == 0


def test_the_failure_line_is_klog_format_with_the_message_quoted():
    line = kubelet_config.command_failed(kubelet_config.KubeletConfigError('bad "x"'),
                                         datetime.datetime(2026, 11, 23, 12, 1, 30, 726757))
    assert line.startswith("E1123 12:01:30.726757 ")
    assert line.endswith(' run.go:72] "command failed" err="bad \\"x\\""')


def test_the_standin_exits_1_with_the_kubelets_line_on_a_refused_file(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(BASE + "nodeLeaseDurationSeconds: -5\n")
    result = subprocess.run([sys.executable, str(STANDIN / "kubelet_standin.py"), "--config", str(config),
                             "--kubeconfig", str(tmp_path / "absent.conf")],
                            capture_output=True, text=True, timeout=60, check=False, cwd=STANDIN)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert '"command failed" err="failed to validate kubelet configuration, error: invalid configuration: ' \
           'nodeLeaseDurationSeconds must be greater than 0' in result.stderr
