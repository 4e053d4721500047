#!/usr/bin/env bash
# Runs the parts of `make test` (make targets) in two lanes and ends with one summary line per part and
# its time. A failing part fails the run (exit 1) and does not stop the others.
#
#   scripts/test-parts.sh PART...     every part, in this order (the Makefile passes TEST_PARTS)
#
# The foreground lane runs the parts that are not in TEST_BESIDE, one after another, their output
# streamed as it comes (the integration suite: it mostly waits for Kubernetes' timers, in two private
# labs of its own). First it builds TEST_PREPARE (make targets the parts share, e.g. the node image and
# the lab's Go build), so that nothing builds them twice at once.
# The background lane runs the parts in TEST_BESIDE beside it, one after another in TEST_BESIDE's order,
# at lower CPU and I/O priority (nice, ionice) so that the lab's timings are not theirs. Each one's output
# goes to a file and is printed whole under a header ("=== make PART (ran beside ...)") once it has ended
# and no foreground part is printing; nothing interleaves. The first line starting with FAILED in the log
# is therefore a real failure (see scripts/molecule-all.sh for the one that is not).
#
#   TEST_BESIDE=""  runs every part in the foreground, one after another (the old `make test`)
#   TEST_MAKE       the make to call (the Makefile passes $(MAKE); a stub: TEST_MAKE="make -f stub.mk")
#
# Interrupted (Ctrl-C, SIGTERM): the background lane is stopped (its parts clean up after themselves,
# e.g. molecule-all destroys its containers), what each part printed so far is shown, then the summary.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
read -r -a make_cmd <<< "${TEST_MAKE:-make}"
heartbeat_seconds=${TEST_HEARTBEAT_SECONDS:-300}

# --lane DIR PART...: the background lane (its own session, so that it can be stopped as a whole).
if [ "${1:-}" = --lane ]; then
  dir=$2
  shift 2
  echo $$ > "$dir/lane.pid"
  low=(nice -n 19)  # the lowest: a nice-0 lab process then gets about 98 % of a core it competes for (10 gave about 90 %)
  command -v ionice >/dev/null && low+=(ionice -c 2 -n 7)
  for part in "$@"; do
    date +%s > "$dir/$part.started"
    t0=$SECONDS
    rc=0
    "${low[@]}" "${make_cmd[@]}" --no-print-directory "$part" >"$dir/$part.log" 2>&1 </dev/null || rc=$?
    echo "$rc $((SECONDS - t0))" > "$dir/$part.end"
  done
  exit 0
fi

parts=("$@")
[ ${#parts[@]} -gt 0 ] || { echo "usage: $0 PART..." >&2; exit 2; }
read -r -a beside_wanted <<< "${TEST_BESIDE-}"
read -r -a prepare <<< "${TEST_PREPARE-}"
is_in() { local item=$1; shift; local x; for x in "$@"; do [ "$x" = "$item" ] && return 0; done; return 1; }
beside=() foreground=()
for part in "${beside_wanted[@]}"; do is_in "$part" "${parts[@]}" && beside+=("$part"); done
for part in "${parts[@]}"; do is_in "$part" "${beside[@]}" || foreground+=("$part"); done

started=$SECONDS
work=$(mktemp -d -t nodeguard-test-parts.XXXXXX)
declare -A result seconds
lane_pid=""
running=""  # the foreground part running now

# print_ended: the background parts that have ended and are not printed yet, whole, in lane order.
print_ended() {
  local part rc took
  for part in "${beside[@]}"; do
    if [ ! -e "$work/$part.end" ] || [ -e "$work/$part.printed" ]; then continue; fi
    read -r rc took < "$work/$part.end"
    echo "=== make $part (ran beside the others; its whole output)"
    cat "$work/$part.log"
    if [ "$rc" = 0 ]; then result[$part]=ok; else result[$part]=FAILED; fi
    seconds[$part]=$took
    echo "=== make $part: ${result[$part],,} after ${took}s (exit $rc)"
    touch "$work/$part.printed"
  done
}

summary() {
  local part failed=0
  echo "=== make test summary (wall time $((SECONDS - started))s)"
  for part in "${parts[@]}"; do
    printf '  %-17s %-6s %5ss\n' "$part" "${result[$part]:-not-run}" "${seconds[$part]:-0}"
    [ "${result[$part]:-not-run}" = ok ] || failed=1
  done
  return $failed
}

# shellcheck disable=SC2317  # called by the trap below
interrupted() {
  trap - INT TERM
  local part pid
  echo "make test: interrupted"
  if [ -n "$running" ]; then result[$running]=stopped; fi
  if [ -n "$lane_pid" ] && [ -s "$work/lane.pid" ]; then
    pid=$(cat "$work/lane.pid")
    kill -TERM -- "-$pid" 2>/dev/null
    wait "$lane_pid" 2>/dev/null
  fi
  print_ended
  for part in "${beside[@]}"; do
    if [ -e "$work/$part.started" ] && [ ! -e "$work/$part.printed" ]; then
      echo "=== make $part (ran beside the others; interrupted, its output so far)"
      cat "$work/$part.log" 2>/dev/null
      result[$part]=stopped
    fi
  done
  summary
  rm -rf "$work"
  exit 130
}
trap interrupted INT TERM

if [ ${#beside[@]} -gt 0 ]; then
  # Labs and Molecule's systemd containers at once need more inotify instances than the default 128
  # (scripts/integration.sh raises it for its two labs too).
  if [ "$(cat /proc/sys/fs/inotify/max_user_instances)" -lt 512 ]; then
    sysctl -q -w fs.inotify.max_user_instances=512 || true
  fi
  echo "make test: ${beside[*]} run beside ${foreground[*]:-nothing} (one after another, niced; each one's output is printed whole once it has ended)"
  setsid "$0" --lane "$work" "${beside[@]}" &
  lane_pid=$!
fi

if [ ${#prepare[@]} -gt 0 ] && [ ${#foreground[@]} -gt 0 ]; then
  # Side by side (the node image downloads Debian packages while Go compiles), lines kept whole.
  echo "=== make ${prepare[*]} (what the parts share, side by side; a failure here shows in the parts that need it)"
  "${make_cmd[@]}" --no-print-directory -j "${#prepare[@]}" --output-sync=line "${prepare[@]}" \
    || echo "make test: make ${prepare[*]} did not succeed"
fi

for part in "${foreground[@]}"; do
  print_ended
  echo "=== make $part"
  t0=$SECONDS
  running=$part
  if "${make_cmd[@]}" --no-print-directory "$part"; then result[$part]=ok; else result[$part]=FAILED; fi
  running=""
  seconds[$part]=$((SECONDS - t0))
done

if [ -n "$lane_pid" ]; then
  last_beat=$SECONDS
  while kill -0 "$lane_pid" 2>/dev/null; do
    print_ended
    if [ $((SECONDS - last_beat)) -ge "$heartbeat_seconds" ]; then
      last_beat=$SECONDS
      for part in "${beside[@]}"; do
        if [ -e "$work/$part.started" ] && [ ! -e "$work/$part.end" ]; then
          echo "make test: still running beside: $part (for $(( $(date +%s) - $(cat "$work/$part.started") ))s)"
        fi
      done
    fi
    sleep 2
  done
  wait "$lane_pid"
  print_ended
fi

status=0
summary || status=1
rm -rf "$work"
exit $status
