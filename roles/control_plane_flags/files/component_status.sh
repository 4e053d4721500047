#!/bin/sh
# component_status.sh COMPONENT LINES [SERVICE]
# The component's own words after a failed start: its container state and last log lines, from the
# first place that has them: the CRI (kubeadm, RKE2 static pods), the kubelet's pod logs, the
# component's systemd unit, then the distribution's service (k3s runs every component in-process).
# Read-only; prints nothing secret beyond what the component logs.
c="$1"; n="${2:-20}"; service="${3:-}"
for socket in /run/k3s/containerd/containerd.sock /run/containerd/containerd.sock; do
  if command -v crictl >/dev/null 2>&1 && [ -S "$socket" ]; then
    id=$(crictl --runtime-endpoint "unix://$socket" ps -a --name "$c" -q 2>/dev/null | head -n 1)
    if [ -n "$id" ]; then
      echo "container (crictl ps -a): $(crictl --runtime-endpoint "unix://$socket" ps -a --name "$c" 2>/dev/null | sed -n 2p)"
      crictl --runtime-endpoint "unix://$socket" logs --tail "$n" "$id" 2>&1
      exit 0
    fi
  fi
done
# The newest log file of the component's static pod (names are kubelet-made: no spaces or newlines).
log=$(find /var/log/pods -path "/var/log/pods/kube-system_$c-*/$c/*.log" -printf '%T@ %p\n' 2>/dev/null | sort -rn | head -n 1 | cut -d' ' -f2-)
if [ -n "$log" ]; then
  echo "log $log:"; tail -n "$n" "$log"; exit 0
fi
if command -v journalctl >/dev/null 2>&1; then
  for unit in "$c" "$service"; do
    [ -n "$unit" ] || continue
    out=$(journalctl -u "$unit" -n "$n" --no-pager -o cat 2>/dev/null)
    if [ -n "$out" ]; then
      echo "journal of $unit (state: $(systemctl show -p ActiveState,SubState,NRestarts --value "$unit" 2>/dev/null | tr '\n' ' ')):"
      # A process that crashed after it started (a crash loop) logged its error before the restored one logged
      # the lines above: its last klog error and fatal lines (E/F) come first. From 1.37 every start logs
      # "The manifest file is empty, ignoring." at E level (component-base metrics, when no
      # --allow-metric-labels-manifest is given); it says nothing about the crash and would push the cause out.
      errors=$(journalctl -u "$unit" -n 2000 --no-pager -o cat 2>/dev/null | grep -E '^[EF][0-9]{4} ' \
        | grep -v 'The manifest file is empty, ignoring\.' | tail -n 3)
      [ -z "$errors" ] || printf 'last errors:\n%s\n' "$errors"
      echo "$out"; exit 0
    fi
  done
fi
echo "no log found for $c (no crictl container, no /var/log/pods file, no journal)"
