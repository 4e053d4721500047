#!/usr/bin/env bash
# Lab BMCs: a node's power is its podman container. On loopback only:
#  - Redfish: one sushy-tools service with one system per node, TLS with a lab CA, HTTP basic auth.
#  - IPMI: one OpenIPMI ipmi_sim per node (UDP port per node), chassis power = the container.
# Power actions kill/stop/start the container; power state is read from the container.
# See docs/lab-bmc.md.
#
#   lab/bmc/bmc.sh up NODE...       start or reconfigure the BMCs for these nodes; idempotent
#   lab/bmc/bmc.sh status [NODE...] each node's Redfish and IPMI power next to its container (exit 3: down)
#   lab/bmc/bmc.sh down             stop every BMC process and remove the state (keys, credentials)
#
# Environment: NODEGUARD_BMC_STATE_DIR (default lab/.state/bmc), NODEGUARD_BMC_PORT (Redfish, 8443),
# NODEGUARD_BMC_IPMI_PORT (first node's UDP port, 6230; next nodes +1; 0 = no IPMI),
# NODEGUARD_BMC_EVENT_CA (CA file that Redfish event receivers must chain to; default: the state
# directory's event-ca.pem when it exists, else the system trust store).
# Tests run a private instance with their own state dir and ports, so they never touch the lab's.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
state=${NODEGUARD_BMC_STATE_DIR:-$repo/lab/.state/bmc}
listen_ip=127.0.0.1
redfish_port=${NODEGUARD_BMC_PORT:-8443}
ipmi_port=${NODEGUARD_BMC_IPMI_PORT:-6230}
python=${NODEGUARD_PYTHON:-$repo/.venv/bin/python}
pids=$state/pids
cert_days=30
# Generous: the first start on a busy machine (Python imports, podman calls) can take many seconds.
ready_timeout=${NODEGUARD_BMC_READY_TIMEOUT:-180}

say() { echo "bmc: $*"; }
die() { echo "bmc: error: $*" >&2; exit 1; }

# --- TLS: a lab CA that signs one server certificate for 127.0.0.1 -------------------------
# The CA key is deleted once it has signed: nothing can mint another certificate it vouches for.
ensure_tls() {
  [ -s "$state/ca.crt" ] && [ -s "$state/server.crt" ] && [ -s "$state/server.key" ] && return 0
  say "creating lab CA and server certificate in $state"
  local tmp
  tmp=$(mktemp -d "$state/tls.XXXXXX")
  (
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$tmp/ca.key" -out "$tmp/ca.crt" -days "$cert_days" \
      -subj "/CN=nodeguard lab BMC CA" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$tmp/server.key" -out "$tmp/server.csr" -subj "/CN=$listen_ip" 2>/dev/null
    printf '%s\n' \
      "subjectAltName=IP:$listen_ip,DNS:localhost" \
      "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature" \
      "extendedKeyUsage=serverAuth" \
      "subjectKeyIdentifier=hash" \
      "authorityKeyIdentifier=keyid" > "$tmp/server.ext"
    openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" \
      -CAcreateserial -days "$cert_days" -extfile "$tmp/server.ext" -out "$tmp/server.crt" 2>/dev/null
  )
  chmod 0644 "$tmp/ca.crt"
  mv "$tmp/ca.crt" "$tmp/server.crt" "$tmp/server.key" "$state/"
  rm -rf "$tmp"
}

# --- background processes: $pids/<service>.pid, .cmd (what its command line must contain), .hash -----
# A pid counts as ours only while its command line still matches (pids get reused).
running_pid() {
  local service=$1 pid
  [ -s "$pids/$service.pid" ] || return 1
  pid=$(cat "$pids/$service.pid")
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$(cat "$pids/$service.cmd")" || return 1
  echo "$pid"
}

# stop_processes SERVICE...: TERM to all at once, then KILL whatever is still there after 5 s.
stop_processes() {
  local service pid stopping=()
  for service in "$@"; do
    if pid=$(running_pid "$service"); then
      kill "$pid" 2>/dev/null || true
      stopping+=("$pid")
      say "stopping $service (pid $pid)"
    fi
    rm -f "$pids/$service".{pid,cmd,hash}
  done
  [ ${#stopping[@]} -gt 0 ] || return 0
  for _ in $(seq 50); do
    alive "${stopping[@]}" || return 0
    sleep 0.1
  done
  for pid in "${stopping[@]}"; do
    kill -9 "$pid" 2>/dev/null || true
  done
}

# alive PID...: is any of them still running? A zombie is not: it has exited and waits for
# init to reap it, which here can take a second.
alive() {
  local pid
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] && return 0
  done
  return 1
}

# start_process SERVICE CONFIG_FILE LOG MATCH COMMAND...: start detached; record pid, match and config hash.
start_process() {
  local service=$1 config=$2 log=$3 match=$4
  shift 4
  mkdir -p "$pids"
  setsid "$@" >>"$log" 2>&1 < /dev/null 9<&- &  # 9: our lock, not theirs
  echo $! > "$pids/$service.pid"
  echo "$match" > "$pids/$service.cmd"
  sha256sum "$config" | cut -d' ' -f1 > "$pids/$service.hash"
}

# Running with the config it was started with?
up_to_date() {
  local service=$1 config=$2
  running_pid "$service" > /dev/null && [ "$(cat "$pids/$service.hash")" = "$(sha256sum "$config" | cut -d' ' -f1)" ]
}

# wait_ready SERVICE LOG PROBE...: until our process answers PROBE; fails when it exits or $ready_timeout s pass.
# Right after the fork /proc/PID/cmdline is still bmc.sh's own (the exec has not happened yet, which on a
# busy machine takes a while): a process that does not match yet is starting, not gone. Gone = dead or zombie.
wait_ready() {
  local service=$1 log=$2 pid deadline=$((SECONDS + ready_timeout))
  shift 2
  pid=$(cat "$pids/$service.pid")
  until running_pid "$service" > /dev/null && "$@" > /dev/null 2>&1; do
    if ! alive "$pid"; then
      show_log "$log"
      rm -f "$pids/$service".{pid,cmd,hash}
      die "$service exited (log: $log)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      show_log "$log"
      kill -9 "$pid" 2>/dev/null || true  # alive 0.2 s ago and started by us: not a reused pid
      rm -f "$pids/$service".{pid,cmd,hash}
      die "$service did not answer within $ready_timeout s (log: $log)"
    fi
    sleep 0.2
  done
}

# The end of a service's log for an error message; a process that died before its first line has none.
show_log() {
  if [ -s "$1" ]; then tail -n 20 "$1" >&2; else echo "bmc: (no output in $1)" >&2; fi
}

# --- clients, credentials never on a command line (ps would show them) ----------------------
credential() { "$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$state/credentials.json" "$1"; }
ipmi_port_of() {
  "$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["bmc_ipmi"]["port"])' \
    "$state/endpoints.json" "$1" 2>/dev/null
}

# redfish_get PATH [SECONDS to wait for the answer, default 60]
redfish_get() {
  printf 'user = "%s:%s"\n' "$(credential username)" "$(credential password)" |
    curl --silent --show-error --fail --max-time "${2:-60}" --cacert "$state/ca.crt" -K - \
      "https://$listen_ip:$redfish_port$1"
}

# ipmi_sim runs every copy of a request it gets and answers only when the container changed state:
# one long wait, no retransmission (a retransmitted reset would restart the container again).
ipmi_power() {  # ipmi_power NODE status|on|off [SECONDS to wait for the answer, default 60]
  local port
  port=$(ipmi_port_of "$1") || return 1
  IPMI_PASSWORD=$(credential password) ipmitool -I lanplus -C 3 -N "${3:-60}" -R 1 -H "$listen_ip" -p "$port" \
    -U "$(credential username)" -E chassis power "$2"
}

# --- services ------------------------------------------------------------------------------
ensure_redfish() {
  local config=$state/sushy.conf log=$state/redfish.log
  if up_to_date redfish "$config"; then
    say "Redfish already up on https://$listen_ip:$redfish_port"
    return 0
  fi
  stop_processes redfish
  rm -rf "$state/sushy-state"  # the fake driver's own store; systems come from sushy.conf alone
  start_process redfish "$config" "$log" "redfish_serve.py $config" \
    "$python" "$here/redfish_serve.py" "$config"
  # 5 s per probe, retried until ready_timeout: a port held by another program that accepts but never answers
  # is found at the first probe that finds our process gone, not after a 60 s wait.
  wait_ready redfish "$log" redfish_get /redfish/v1/Systems 5
  say "Redfish up on https://$listen_ip:$redfish_port (pid $(running_pid redfish))"
}

ensure_ipmi() {
  local node=$1 dir=$state/ipmi/$1
  local config=$dir/lan.conf log=$dir/sim.log
  if up_to_date "ipmi-$node" "$config"; then
    say "IPMI for $node already up on $listen_ip:$(ipmi_port_of "$node")/udp"
    return 0
  fi
  stop_processes "ipmi-$node"
  mkdir -p "$dir/sim-state"
  start_process "ipmi-$node" "$config" "$log" "-c $config" \
    ipmi_sim -n -c "$config" -f "$here/ipmi_bmc.emu" -s "$dir/sim-state"
  # Short waits: a request sent just before the simulator binds its port is lost, not refused.
  wait_ready "ipmi-$node" "$log" ipmi_power "$node" status 3
  say "IPMI for $node up on $listen_ip:$(ipmi_port_of "$node")/udp (pid $(running_pid "ipmi-$node"))"
}

# Simulators of nodes that are no longer wanted.
remove_other_ipmi() {
  local file node
  for file in "$pids"/ipmi-*.pid; do
    [ -e "$file" ] || continue
    node=$(basename "$file" .pid)
    node=${node#ipmi-}
    if ! printf '%s\n' "$@" | grep -qxF "$node" || [ "$ipmi_port" = 0 ]; then
      stop_processes "ipmi-$node"
      rm -rf "${state:?}/ipmi/$node"
    fi
  done
}

cmd_up() {
  [ $# -gt 0 ] || die "usage: bmc.sh up NODE..."
  if [ "$ipmi_port" != 0 ]; then
    command -v ipmi_sim > /dev/null || die "ipmi_sim not found (Debian package openipmi); or set NODEGUARD_BMC_IPMI_PORT=0"
    command -v ipmitool > /dev/null || die "ipmitool not found (Debian package ipmitool)"
  fi
  mkdir -p "$state"
  chmod 0700 "$state"
  ensure_tls
  local event_ca=()
  [ -z "${NODEGUARD_BMC_EVENT_CA:-}" ] || event_ca=(--event-ca "$NODEGUARD_BMC_EVENT_CA")
  "$python" "$here/write_config.py" --state "$state" --listen "$listen_ip" \
    --redfish-port "$redfish_port" --ipmi-port "$ipmi_port" "${event_ca[@]}" "$@"
  ensure_redfish
  remove_other_ipmi "$@"
  if [ "$ipmi_port" != 0 ]; then
    local node
    for node in $(printf '%s\n' "$@" | sort -u); do
      ensure_ipmi "$node"
    done
  fi
  say "endpoints: $state/endpoints.json"
}

cmd_down() {
  local file services=()
  for file in "$pids"/*.pid; do
    [ -e "$file" ] && services+=("$(basename "$file" .pid)")
  done
  [ ${#services[@]} -eq 0 ] || stop_processes "${services[@]}"
  if [ -d "$state" ]; then
    rm -rf "$state"
    say "removed $state"
  fi
}

cmd_status() {
  local pid
  if ! pid=$(running_pid redfish); then
    say "down"
    return 3
  fi
  say "Redfish up on https://$listen_ip:$redfish_port (pid $pid)"
  local nodes=("$@")
  [ ${#nodes[@]} -gt 0 ] || mapfile -t nodes < <("$python" -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))))' "$state/endpoints.json")
  local node redfish ipmi container rc=0
  printf '%-16s %-8s %-8s %s\n' NODE REDFISH IPMI CONTAINER
  for node in "${nodes[@]}"; do
    redfish=$(redfish_get "/redfish/v1/Systems/$node" 2>/dev/null |
      "$python" -c 'import json,sys; print(json.load(sys.stdin)["PowerState"])' 2>/dev/null) || { redfish="?"; rc=1; }
    if [ -z "$(ipmi_port_of "$node")" ]; then
      ipmi=-
    else
      ipmi=$(ipmi_power "$node" status 2>/dev/null | awk '{print $NF}') || true
      [ -n "$ipmi" ] || { ipmi="?"; rc=1; }
    fi
    container=$(podman container inspect --format '{{.State.Status}}' "$node" 2>/dev/null || echo absent)
    printf '%-16s %-8s %-8s %s\n' "$node" "$redfish" "$ipmi" "$container"
  done
  return $rc
}

# One bmc.sh at a time per state directory: lock the directory that holds it (no lock file to leave behind).
mkdir -p "$(dirname "$state")"
exec 9< "$(dirname "$state")"
flock 9

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down ;;
  status) shift; cmd_status "$@" ;;
  *) echo "usage: $0 up NODE... | down | status [NODE...]" >&2; exit 2 ;;
esac
