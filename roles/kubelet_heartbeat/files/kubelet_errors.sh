#!/bin/sh
# kubelet_errors.sh SERVICE SINCE_EPOCH [LINES] [LOG_FILE]
# The kubelet's own reason after a failed start: its last error lines (klog E/F, or cli's "Error: ")
# since SINCE_EPOCH, each message once (a crash loop repeats it), from the journal of SERVICE
# (kubeadm's kubelet; k3s runs the kubelet in-process) and from LOG_FILE, where the distribution
# has the kubelet log to a file too (RKE2; module_utils/distributions.py, kubelet_log_file). Read-only.
# A kubelet that refuses its configuration prints the whole configuration after ", path: &": that
# part is cut (it may hold static pod URL headers). Says so when there is no error line.
# From 1.37 every start logs "The manifest file is empty, ignoring." at E level (component-base metrics, without
# --allow-metric-labels-manifest): it says nothing about the failure and is left out.
service="$1"; since="$2"; n="${3:-3}"; log_file="${4:-}"
{
  if command -v journalctl >/dev/null 2>&1; then
    journalctl -u "$service" --since "@$since" --no-pager -o cat 2>/dev/null
  fi
  if [ -n "$log_file" ] && [ -f "$log_file" ]; then
    find "$log_file" -newermt "@$since" -exec tail -n 2000 {} \;
  fi
} | grep -E '^([EF][0-9]{4} |Error: )' | grep -v 'The manifest file is empty, ignoring\.' | sed -e 's/, path: &.*$/, path: (configuration left out)/' | cut -c1-600 \
  | tac | awk '{ message = $0; sub(/^[EF][0-9]+ [0-9:.]+ +[0-9]+ [^ ]+ /, "", message); if (!seen[message]++) print }' \
  | head -n "$n" | tac | grep . || echo "(no error line in its log since the restart)"
